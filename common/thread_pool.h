// A fixed set of threads that run posted tasks (Boost.Asio's thread_pool underneath). gnnd shares pools
// rather than giving each session threads of its own: the CPU producers' pool (one task per batch, sized
// by producer_threads) and the sessions' pool (protocol steps, see server/session.h), so a session waiting
// for its trainer costs no thread.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <functional>
#include <memory>

namespace gnnd {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : threads_(threads < 1 ? 1 : threads), pool_(threads_) {}
  // Waits for the posted work to finish.
  ~ThreadPool() { pool_.join(); }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }
  void Post(std::function<void()> task) { boost::asio::post(pool_, std::move(task)); }
  // Runs `task` on the pool once `delay` has passed (the destructor waits for it).
  void PostAfter(std::chrono::microseconds delay, std::function<void()> task) {
    auto timer = std::make_shared<boost::asio::steady_timer>(pool_.get_executor(), delay);
    timer->async_wait([timer, task = std::move(task)](const boost::system::error_code&) { task(); });
  }

 private:
  const int threads_;
  boost::asio::thread_pool pool_;
};

}  // namespace gnnd
