// A fixed set of threads that run posted tasks (a Boost.Asio io_context underneath). gnnd shares pools
// rather than giving each session threads of its own: the CPU producers' pool (one task per batch, sized
// by producer_threads) and the sessions' pools (protocol steps and teardowns, see server/sessions/session.h), so a
// session waiting for its trainer costs no thread.
//
// The pool starts its threads itself, rather than through boost::asio::thread_pool, so that a thread the
// system refuses (a process or memory limit) is an error to report, not an exception out of a constructor
// that leaves the threads already started running.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gnnd {

// Where a producer's tasks run: a ThreadPool, or one owner's queue on a FairPool (fair_pool.h).
class TaskRunner {
 public:
  virtual ~TaskRunner() = default;
  virtual void Post(std::function<void()> task) = 0;
  // The most tasks of this runner's that run at once.
  virtual int threads() const = 0;
};

class ThreadPool : public TaskRunner {
 public:
  // Starts `threads` threads (at least 1) for `what` (named in errors). RESOURCE_EXHAUSTED if the system
  // refuses one; none is left running then.
  static absl::StatusOr<std::unique_ptr<ThreadPool>> Create(int threads, absl::string_view what);
  // Runs the posted work and pending timers, then joins the threads.
  ~ThreadPool() override;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const override { return static_cast<int>(threads_.size()); }
  void Post(std::function<void()> task) override { boost::asio::post(io_, std::move(task)); }
  // Runs `task` on the pool once `delay` has passed (the destructor waits for it).
  void PostAfter(std::chrono::microseconds delay, std::function<void()> task) {
    auto timer = std::make_shared<boost::asio::steady_timer>(io_, delay);
    timer->async_wait([timer, task = std::move(task)](const boost::system::error_code&) { task(); });
  }

 private:
  explicit ThreadPool(int threads) : io_(threads) {}
  void Join();

  boost::asio::io_context io_;
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> idle_ =
      std::make_unique<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>>(
          io_.get_executor());  // keeps run() going while nothing is posted
  std::vector<std::thread> threads_;
};

}  // namespace gnnd
