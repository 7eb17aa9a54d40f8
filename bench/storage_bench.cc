// Features larger than memory: batches served through the storage tier (RowCache, two-stage CpuProducer)
// against the disk's own limits and against features memory-mapped (what mmap loaders do), plus the hit
// rates of look-ahead eviction, LRU and a static hottest-rows cache at equal bytes on the same batches.
//   storage_bench --dataset DIR [--cache 2GiB,4GiB,8GiB] [--look_ahead 8] [--steps 200] [--threads 8]
//                 [--batch_size 1024] [--fanouts 15,10,5] [--disk_seconds 5] [--drop_caches]
// Run it under a memory limit smaller than the features (a cgroup's memory.max, which also bounds the
// page cache) to measure "larger than memory"; --drop_caches empties the page cache before each case (root).
// Prints markdown tables.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <list>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/batch/seeds.h"
#include "common/dataset/dataset.h"
#include "common/dataset/hot_order.h"
#include "common/dataset/row_cache.h"
#include "server/sessions/producer.h"

ABSL_FLAG(std::string, dataset, "", "dataset directory (gnnctl generate --preset papers --scale 0.3)");
ABSL_FLAG(std::vector<std::string>, cache, std::vector<std::string>({"2GiB", "4GiB", "8GiB"}), "host cache sizes");
ABSL_FLAG(int32_t, look_ahead, 8, "batches sampled ahead");
ABSL_FLAG(int32_t, prefetch_distance, 2, "of those, the next ones whose rows are read ahead");
ABSL_FLAG(int64_t, steps, 200, "batches per case (a prefix of epoch 0)");
ABSL_FLAG(int64_t, warmup, 50,
          "of those, the first batches: not counted in hit rates (every cache starts cold but "
          "the static one, filled at load)");
ABSL_FLAG(int32_t, threads, 8, "producer threads");
ABSL_FLAG(int32_t, slots, 8, "slots (batches a consumer may hold + in production)");
ABSL_FLAG(int64_t, batch_size, 1024, "seeds per batch");
ABSL_FLAG(std::vector<std::string>, fanouts, std::vector<std::string>({"15", "10", "5"}), "fanouts per hop");
ABSL_FLAG(double, disk_seconds, 5, "seconds per disk measurement");
ABSL_FLAG(bool, drop_caches, false, "write 3 to /proc/sys/vm/drop_caches before each case (root)");
ABSL_FLAG(bool, mmap, true, "also run the memory-mapped features baseline");
ABSL_FLAG(bool, storage, true, "run the batches through the storage tier (false: only the disk and the policies)");
ABSL_FLAG(bool, warm_start, true, "fill the cache with its hottest rows before the batches, as gnnd does");

namespace gnnd {
namespace {

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void DropCaches() {
  if (!absl::GetFlag(FLAGS_drop_caches)) return;
  ::sync();
  std::ofstream drop("/proc/sys/vm/drop_caches");
  drop << "3\n";
  if (!drop.good()) std::fprintf(stderr, "storage_bench: could not drop the page cache (root?)\n");
}

uint64_t Bytes(const std::string& text) {
  uint64_t unit = 1;
  std::string number = text;
  for (const auto& [suffix, scale] : {std::pair<std::string, uint64_t>{"KiB", 1ull << 10},
                                      {"MiB", 1ull << 20},
                                      {"GiB", 1ull << 30},
                                      {"TiB", 1ull << 40}}) {
    if (number.size() > suffix.size() && number.ends_with(suffix)) {
      number.resize(number.size() - suffix.size());
      unit = scale;
    }
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(number, &n)) {
    std::fprintf(stderr, "storage_bench: bad size %s\n", text.c_str());
    std::exit(2);
  }
  return n * unit;
}

// The disk through the same reader: 4 KiB reads at random pages of the file, and 128 KiB sequential ones.
void MeasureDisk(const RowTable& features) {
  struct stat st = {};
  ::stat(features.path.c_str(), &st);
  const int64_t pages = st.st_size / 4096;
  std::printf("\n### The disk (%s, %.1f GiB; O_DIRECT)\n\n| reads | in flight | reads/s | GB/s |\n|---|---|---|---|\n",
              features.path.c_str(), st.st_size / 1073741824.0);
  std::mt19937_64 rng(1);
  for (const unsigned depth : {1u, 64u, 128u}) {
    DropCaches();
    auto reader = RowReader::Open({features.path, 0, 4096, pages}, {.queue_depth = depth});
    if (!reader.ok()) return;
    std::vector<int64_t> ids(depth * 16);
    std::vector<std::byte> out(ids.size() * 4096);
    const auto start = std::chrono::steady_clock::now();
    while (Since(start) < absl::GetFlag(FLAGS_disk_seconds)) {
      for (int64_t& id : ids) id = static_cast<int64_t>(rng() % pages);
      std::sort(ids.begin(), ids.end());
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());  // one read per page, none merged below
      for (size_t i = 1; i < ids.size(); ++i) {
        if (ids[i] == ids[i - 1] + 1) ids[i] = ids[i - 1];
      }
      ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      (void)(*reader)->Read(ids, out.data());
      ids.resize(depth * 16);
    }
    const double seconds = Since(start);
    std::printf("| 4 KiB random | %u | %.0f | %.3f |\n", depth, (*reader)->stats().reads / seconds,
                (*reader)->stats().bytes_read / seconds / 1e9);
  }
  DropCaches();
  constexpr uint64_t kChunk = 128 * 1024;
  auto reader =
      RowReader::Open({features.path, 0, kChunk, st.st_size / static_cast<int64_t>(kChunk)}, {.queue_depth = 32});
  if (!reader.ok()) return;
  std::vector<std::byte> out(64 * kChunk);
  int64_t next = 0;
  const auto start = std::chrono::steady_clock::now();
  while (Since(start) < absl::GetFlag(FLAGS_disk_seconds) && next + 64 <= (*reader)->table().num_rows) {
    std::vector<int64_t> ids(64);
    for (int64_t& id : ids) id = next++;
    (void)(*reader)->Read(ids, out.data());
  }
  const double seconds = Since(start);
  std::printf("| 128 KiB sequential | 32 | %.0f | %.3f |\n", (*reader)->stats().reads / seconds,
              (*reader)->stats().bytes_read / seconds / 1e9);
}

struct Bench {
  DatasetDir dir;
  GraphData graph;  // structure, labels and splits in memory (copied off the files); features: per case
  std::vector<std::vector<std::byte>> copies;
  SamplingSpec spec;
  HomogeneousLayout layout;
  RowTable features;
};

struct Outcome {
  int64_t batches = 0, rows = 0;
  double seconds = 0;
};

// The peak memory of this process's cgroup so far (cgroup v2 memory.peak: what its memory.max bounds), "-"
// where unreadable. Not ru_maxrss: that counts the dataset files' mapped pages, which the cgroup reclaims.
std::string CgroupPeakGiB() {
  std::ifstream cgroups("/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);) {
    if (!absl::StartsWith(line, "0::")) continue;
    std::ifstream peak(absl::StrCat("/sys/fs/cgroup", line.substr(3), "/memory.peak"));
    uint64_t bytes = 0;
    if (peak >> bytes) return absl::StrFormat("%.2f", bytes / 1073741824.0);
  }
  return "-";
}

// Epoch 0's first `steps` batches through a producer, consumed at once.
// `on_warm` runs once the first --warmup batches are consumed.
template <typename MakeProducer>
Outcome Consume(Bench& b, MakeProducer make, const std::function<void()>& on_warm = nullptr) {
  const int threads = absl::GetFlag(FLAGS_threads), slots = absl::GetFlag(FLAGS_slots);
  std::vector<HomogeneousBuffer> buffers(slots, HomogeneousBuffer(b.layout));
  std::vector<HomogeneousView> views;
  for (HomogeneousBuffer& buffer : buffers) views.push_back(buffer.view());
  const std::unique_ptr<ThreadPool> workers = *ThreadPool::Create(threads, "the producers");
  const auto& m = b.graph.manifest;
  std::span<const int64_t> train(static_cast<const int64_t*>(b.graph.arrays[ArrayId::kTrain]), m.num_train());
  EpochSeeds seeds(train, {.seed = 1, .batch_size = b.spec.batch_size}, 0);
  Outcome outcome;
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<CpuProducer> producer = make(views, std::move(seeds), *workers, threads, slots);
  while (outcome.batches < absl::GetFlag(FLAGS_steps)) {
    auto ready = producer->Next();
    if (!ready) break;
    outcome.rows += views[ready->slot].num_nodes();
    ++outcome.batches;
    producer->Release(ready->slot);
    if (outcome.batches == absl::GetFlag(FLAGS_warmup) && on_warm) on_warm();
  }
  outcome.seconds = Since(start);
  if (!producer->status().ok()) std::fprintf(stderr, "storage_bench: %s\n", producer->status().ToString().c_str());
  return outcome;
}

// The batches' node ids (sampling only), for the policy comparison.
std::vector<std::vector<int64_t>> SampledIds(const Bench& b) {
  CpuSampler sampler(b.graph, b.spec, 1);
  HomogeneousBuffer buffer(HomogeneousLayout::Make(b.layout.capacity, b.layout.num_hops, 0));
  const auto& m = b.graph.manifest;
  std::span<const int64_t> train(static_cast<const int64_t*>(b.graph.arrays[ArrayId::kTrain]), m.num_train());
  EpochSeeds seeds(train, {.seed = 1, .batch_size = b.spec.batch_size}, 0);
  std::vector<std::vector<int64_t>> out;
  for (int64_t step = 0; step < std::min(seeds.num_steps(), absl::GetFlag(FLAGS_steps)); ++step) {
    HomogeneousView view = buffer.view();
    sampler.SampleGraph(0, seeds.batch_index(step), seeds.batch(step), view);
    out.emplace_back(view.node_ids, view.node_ids + view.num_nodes());
  }
  return out;
}

// Over the batches after the warm-up.
double LruHitRate(const std::vector<std::vector<int64_t>>& batches, int64_t capacity) {
  std::list<int64_t> order;
  absl::flat_hash_map<int64_t, std::list<int64_t>::iterator> where;
  int64_t hits = 0, lookups = 0;
  for (size_t t = 0; t < batches.size(); ++t) {
    const bool counted = static_cast<int64_t>(t) >= absl::GetFlag(FLAGS_warmup);
    for (int64_t row : batches[t]) {
      lookups += counted;
      if (auto it = where.find(row); it != where.end()) {
        hits += counted;
        order.erase(it->second);
      } else if (static_cast<int64_t>(order.size()) == capacity) {
        where.erase(order.back());
        order.pop_back();
      }
      order.push_front(row);
      where[row] = order.begin();
    }
  }
  return static_cast<double>(hits) / lookups;
}

// The `capacity` rows of highest in-degree, fixed.
double StaticHitRate(const Bench& b, const std::vector<int32_t>& heat, const std::vector<std::vector<int64_t>>& batches,
                     int64_t capacity) {
  std::vector<int64_t> rows(b.graph.num_nodes());
  for (int64_t i = 0; i < b.graph.num_nodes(); ++i) rows[i] = i;
  capacity = std::min<int64_t>(capacity, rows.size());
  std::nth_element(rows.begin(), rows.begin() + capacity, rows.end(),
                   [&](int64_t x, int64_t y) { return heat[x] > heat[y]; });
  absl::flat_hash_set<int64_t> hot(rows.begin(), rows.begin() + capacity);
  int64_t hits = 0, lookups = 0;
  for (size_t t = absl::GetFlag(FLAGS_warmup); t < batches.size(); ++t) {
    for (int64_t row : batches[t]) hits += hot.contains(row), ++lookups;
  }
  return static_cast<double>(hits) / lookups;
}

int Run() {
  const std::string path = absl::GetFlag(FLAGS_dataset);
  auto dir = DatasetDir::Open(path);
  if (!dir.ok()) {
    std::fprintf(stderr, "storage_bench: %s\n", dir.status().ToString().c_str());
    return 1;
  }
  Bench b{std::move(*dir), {}, {}, {}, {}, {}};
  b.graph = {b.dir.manifest(), b.dir.arrays(), b.dir.schema()};
  const int features_at = b.graph.arrays.positions[static_cast<int>(ArrayId::kFeatures)];
  for (size_t i = 0; i < b.graph.arrays.data.size(); ++i) {  // what gnnd keeps in shared memory
    if (static_cast<int>(i) == features_at) continue;
    const size_t bytes = b.dir.schema().arrays[i].bytes();
    auto& copy = b.copies.emplace_back(bytes);
    std::memcpy(copy.data(), b.graph.arrays.data[i], bytes);
    b.graph.arrays.data[i] = copy.data();
  }
  for (const std::string& f : absl::GetFlag(FLAGS_fanouts)) {
    int32_t value = 0;
    if (!absl::SimpleAtoi(f, &value)) return 2;
    b.spec.fanouts.resize(1);
    b.spec.fanouts[0].push_back(value);
  }
  b.spec.batch_size = absl::GetFlag(FLAGS_batch_size);
  auto capacity =
      ComputeHomogeneousCapacity(b.spec, b.graph.num_nodes(), b.graph.manifest.num_edges(), b.graph.MaxInDegree());
  if (!capacity.ok()) return 2;
  b.layout = HomogeneousLayout::Make(*capacity, b.spec.num_hops(), FeatureRowBytes(b.graph.manifest));
  const NpyFile& file = b.dir.file(ArrayId::kFeatures);
  b.features = {file.path(), file.header().data_offset, b.layout.feature_row_bytes, b.graph.num_nodes()};
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // tables appear as they are measured
  std::printf(
      "## storage_bench: %s, %ld nodes, %lu B rows (%.1f GiB of features), batch %ld, %ld batches per case, "
      "%d threads, %d slots\n",
      path.c_str(), b.graph.num_nodes(), b.features.row_bytes,
      b.features.row_bytes * b.graph.num_nodes() / 1073741824.0, b.spec.batch_size, absl::GetFlag(FLAGS_steps),
      absl::GetFlag(FLAGS_threads), absl::GetFlag(FLAGS_slots));
  MeasureDisk(b.features);

  std::printf(
      "\n### Batches through the storage tier (look-ahead %d, prefetch distance %d) and through mmap\n\n"
      "| features | batches/s | rows/s gathered | rows/s read | hit rate after warm-up | reads/s | GB/s read | cgroup "
      "memory.peak GiB so far |\n"
      "|---|---|---|---|---|---|---|---|\n",
      absl::GetFlag(FLAGS_look_ahead), absl::GetFlag(FLAGS_prefetch_distance));
  const int64_t* indptr = b.graph.arrays.indptr();
  // Heat as gnnd takes it: rank by the dataset's hot_order.npy, else by in-degree (the static cache keeps the
  // hottest).
  absl::StatusOr<std::vector<int64_t>> order = ReadHotOrder(path, b.graph.num_nodes());
  const std::vector<int32_t> heat =
      order.ok() ? HeatRanks(*order, 0, b.graph.num_nodes()) : DegreeRanks(indptr, b.graph.num_nodes());
  std::vector<std::pair<int64_t, double>> look_ahead_hits;  // capacity rows -> rows read per row gathered
  for (const std::string& size : absl::GetFlag(FLAGS_cache)) {
    if (!absl::GetFlag(FLAGS_storage)) {  // the policies alone, at the rows such a cache holds
      look_ahead_hits.emplace_back(Bytes(size) / RowCache::BytesPerRow(b.features.row_bytes), std::nan(""));
      continue;
    }
    DropCaches();
    auto cache = RowCache::Create(b.features, Bytes(size), [&heat](int64_t r) { return heat[r]; }, {});
    if (!cache.ok()) {
      std::fprintf(stderr, "storage_bench: %s\n", cache.status().ToString().c_str());
      return 1;
    }
    if (absl::Status fits = (*cache)->CheckBatchFits(b.layout.capacity.max_nodes, size); !fits.ok()) {
      std::printf("| storage, cache %s | %s | | | | | | |\n", size.c_str(), std::string(fits.message()).c_str());
      continue;
    }
    if (absl::GetFlag(FLAGS_warm_start)) {
      const auto start = std::chrono::steady_clock::now();
      const absl::StatusOr<int64_t> warmed = (*cache)->WarmUp(HottestRows(heat, (*cache)->capacity_rows()));
      if (!warmed.ok()) {
        std::fprintf(stderr, "storage_bench: %s\n", warmed.status().ToString().c_str());
        return 1;
      }
      std::fprintf(stderr, "cache %s: warm start of %ld rows in %.1f s\n", size.c_str(), *warmed, Since(start));
    }
    GraphData graph = b.graph;
    RowCacheStats warm;
    const Outcome o = Consume(
        b,
        [&](std::vector<HomogeneousView> views, EpochSeeds seeds, ThreadPool& workers, int threads, int slots) {
          return std::make_unique<CpuProducer>(
              *CpuProducer::OnStorage({&graph, b.spec, std::nullopt, 1, AsBatchLayout(b.layout)},
                                      {AsBatchViews(views), {}, nullptr}, {cache->get()},
                                      absl::GetFlag(FLAGS_look_ahead), threads, absl::GetFlag(FLAGS_prefetch_distance)),
              slots, 0, std::move(seeds), workers, threads);
        },
        [&] { warm = (*cache)->stats(); });
    const RowCacheStats s = (*cache)->stats();
    const double read_rows = static_cast<double>(s.misses + s.prefetched);
    const double warm_read = static_cast<double>(s.misses + s.prefetched - warm.misses - warm.prefetched);
    look_ahead_hits.emplace_back((*cache)->capacity_rows(),
                                 1 - warm_read / std::max<uint64_t>(s.hits + s.misses - warm.hits - warm.misses, 1));
    std::printf("| storage, cache %s (%ld rows) | %.2f | %.0f | %.0f | %.3f | %.0f | %.3f | %s |\n", size.c_str(),
                (*cache)->capacity_rows(), o.batches / o.seconds, o.rows / o.seconds, read_rows / o.seconds,
                look_ahead_hits.back().second, s.reads / o.seconds, s.bytes_read / o.seconds / 1e9,
                CgroupPeakGiB().c_str());
  }
  if (absl::GetFlag(FLAGS_mmap)) {
    DropCaches();
    GraphData graph = b.graph;
    graph.arrays.data[features_at] = file.data();  // the file's mapping: page faults read it
    const Outcome o = Consume(
        b, [&](std::vector<HomogeneousView> views, EpochSeeds seeds, ThreadPool& workers, int threads, int slots) {
          return std::make_unique<CpuProducer>(*CpuProducer::InMemory({&graph, b.spec, std::nullopt, 1, {}},
                                                                      {AsBatchViews(views), {}, nullptr}, threads),
                                               slots, 0, std::move(seeds), workers, threads);
        });
    std::printf("| mmap of features.npy | %.2f | %.0f | | | | | %s |\n", o.batches / o.seconds, o.rows / o.seconds,
                CgroupPeakGiB().c_str());
  }

  std::printf(
      "\n### Hit rates at equal cache rows, the same batches after %ld of warm-up (rows not read from disk "
      "/ rows gathered)\n\n",
      absl::GetFlag(FLAGS_warmup));
  std::printf("| cache rows | look-ahead (measured above) | LRU | static (hottest rows) |\n|---|---|---|---|\n");
  const auto batches = SampledIds(b);
  for (const auto& [rows, rate] : look_ahead_hits) {
    std::printf("| %ld | %.3f | %.3f | %.3f |\n", rows, rate, LruHitRate(batches, rows),
                StaticHitRate(b, heat, batches, rows));
  }
  return 0;
}

}  // namespace
}  // namespace gnnd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_dataset).empty()) {
    std::fprintf(stderr, "storage_bench: give --dataset DIR\n");
    return 2;
  }
  return gnnd::Run();
}
