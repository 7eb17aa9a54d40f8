#include "common/base/parallel.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

#include "common/base/log.h"

namespace gnnd {

int DefaultThreads() { return std::max(1u, std::thread::hardware_concurrency()); }

void ParallelFor(int64_t n, int64_t chunk, int threads, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  chunk = std::max<int64_t>(chunk, 1);
  const int64_t num_chunks = (n + chunk - 1) / chunk;
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t c = next.fetch_add(1); c < num_chunks; c = next.fetch_add(1)) {
      fn(c * chunk, std::min(n, (c + 1) * chunk));
    }
  };
  const int64_t helpers = std::min<int64_t>(std::max(threads, 1), num_chunks) - 1;
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (int64_t i = 0; i < helpers; ++i) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error& e) {  // a thread limit: the chunks go to the threads there are
      LogWarning("ParallelFor: %d of %d threads started (%s); going on with those", i + 1, helpers + 1, e.what());
      break;
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
}

absl::Status ParallelRounds(int64_t n, int64_t chunk, int threads,
                            const std::function<void(int64_t, int64_t, int64_t)>& make,
                            const std::function<absl::Status(int64_t, int64_t)>& take) {
  const int64_t round = std::max<int64_t>(chunk, 1) * std::max(threads, 1);
  for (int64_t first = 0; first < n; first += round) {
    const int64_t count = std::min(round, n - first);
    ParallelFor(count, chunk, threads, [&](int64_t begin, int64_t end) { make(first, begin, end); });
    if (absl::Status taken = take(first, count); !taken.ok()) return taken;
  }
  return absl::OkStatus();
}

}  // namespace gnnd
