// The threads that CPU producers run on, shared by every producer of a process (gnnd has one pool, sized
// by producer_threads) rather than owned by each: work is posted one batch at a time, so a session whose
// trainer holds every slot costs no worker thread. Boost.Asio's thread_pool underneath.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>

namespace gnnd {

class CpuWorkers {
 public:
  explicit CpuWorkers(int threads) : threads_(threads < 1 ? 1 : threads), pool_(threads_) {}
  // Waits for the posted work to finish.
  ~CpuWorkers() { pool_.join(); }
  CpuWorkers(const CpuWorkers&) = delete;
  CpuWorkers& operator=(const CpuWorkers&) = delete;

  int threads() const { return threads_; }
  void Post(std::function<void()> task) { boost::asio::post(pool_, std::move(task)); }

 private:
  const int threads_;
  boost::asio::thread_pool pool_;
};

}  // namespace gnnd
