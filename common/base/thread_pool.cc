#include "common/base/thread_pool.h"

#include <system_error>

#include "absl/strings/str_cat.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<ThreadPool>> ThreadPool::Create(int threads, absl::string_view what) {
  threads = std::max(threads, 1);
  auto pool = std::unique_ptr<ThreadPool>(new ThreadPool(threads));
  pool->threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) {
    try {
      pool->threads_.emplace_back([io = &pool->io_] { io->run(); });
    } catch (const std::system_error& e) {
      const int started = i;
      pool->io_.stop();
      pool->Join();
      return absl::ResourceExhaustedError(absl::StrCat("cannot start thread ", started + 1, " of ", threads, " for ",
                                                       what, ": ", e.what(), " (lower it, or raise the limit)"));
    }
  }
  return pool;
}

ThreadPool::~ThreadPool() { Join(); }

void ThreadPool::Join() {
  idle_.reset();  // run() returns once the posted work and the timers are done
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

}  // namespace gnnd
