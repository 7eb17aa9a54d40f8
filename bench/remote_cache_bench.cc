// The remote cache's cost a batch (server/peers/remote_row_cache.h): pinning a batch's rows owned elsewhere and
// keeping the ones it fetched, on threads at once, as a part's producer threads do.
//   remote_cache_bench [--held_rows 1240000] [--remote_rows 1630000] [--lookups 235000] [--row_bytes 400]
//                      [--shards 16] [--benchmark_repetitions=3]
// The defaults are products' part 0 of 3 with a 512 MiB cache (bench/runs/run-AZ.md): the cache holds 76 % of the
// rows owned elsewhere; a batch reads 235 K of them (distinct, random). Reports ms a batch per thread count.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <random>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "server/peers/remote_row_cache.h"

ABSL_FLAG(int64_t, held_rows, 1240000, "the cache's rows");
ABSL_FLAG(int64_t, remote_rows, 1630000, "rows owned elsewhere (ids 0 .. remote_rows - 1)");
ABSL_FLAG(int64_t, lookups, 235000, "rows owned elsewhere a batch reads (drawn with repeats, then made distinct)");
ABSL_FLAG(int64_t, row_bytes, 400, "bytes a row");
ABSL_FLAG(int, shards, gnnd::RemoteRowCache::kDefaultShards, "the cache's shards (1: one lock)");

namespace gnnd {
namespace {

RemoteRowCache* cache = nullptr;
std::vector<std::byte>* row = nullptr;

void BM_PinAndKeep(benchmark::State& state) {
  std::mt19937_64 random(static_cast<uint64_t>(state.thread_index()) + 1);
  const int64_t remote = absl::GetFlag(FLAGS_remote_rows);
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<int64_t> ids(static_cast<size_t>(absl::GetFlag(FLAGS_lookups)));
    for (int64_t& id : ids) id = static_cast<int64_t>(random() % static_cast<uint64_t>(remote));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    std::shuffle(ids.begin(), ids.end(), random);  // a batch's ids come in no order
    std::vector<int32_t> slots(ids.size());
    state.ResumeTiming();
    cache->Pin(ids, slots);
    std::vector<int64_t> missing;
    std::vector<const std::byte*> rows;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (slots[i] < 0) {
        missing.push_back(ids[i]);
        rows.push_back(row->data());
      }
    }
    cache->Unpin(slots);
    cache->Insert(missing, rows);
  }
}
BENCHMARK(BM_PinAndKeep)->ThreadRange(1, 8)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace gnnd

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  absl::ParseCommandLine(argc, argv);
  const int64_t held = absl::GetFlag(FLAGS_held_rows), remote = absl::GetFlag(FLAGS_remote_rows);
  const auto row_bytes = static_cast<uint64_t>(absl::GetFlag(FLAGS_row_bytes));
  gnnd::row = new std::vector<std::byte>(row_bytes);
  gnnd::cache = new gnnd::RemoteRowCache(held, row_bytes, absl::GetFlag(FLAGS_shards));
  std::vector<int64_t> ids;
  std::vector<const std::byte*> rows;
  for (int64_t id = 0; id < remote; ++id) {  // filled as a part's first epoch leaves it
    ids.push_back(id);
    rows.push_back(gnnd::row->data());
  }
  gnnd::cache->Insert(ids, rows);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
