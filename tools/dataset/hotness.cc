#include "tools/dataset/hotness.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/batch/batch.h"
#include "common/batch/sampling.h"
#include "common/batch/seeds.h"
#include "common/dataset/dataset.h"
#include "common/dataset/hot_order.h"
#include "common/dataset/npy.h"
#include "kernels/cpu/sampler.h"

namespace gnnd::dataset {
namespace {

// Expected reads are summed in fixed point: integer additions give the same total in any order, so the
// ranking does not depend on the thread count.
constexpr double kFixedOne = 1 << 20;
constexpr int64_t kChunk = 1 << 14;

template <typename Index, typename Fn>
void ForEachNeighborList(const GraphData& graph, int threads, Fn fn) {
  const int64_t* indptr = graph.arrays.indptr();
  const auto* indices = static_cast<const Index*>(graph.arrays[ArrayId::kIndices]);
  ParallelFor(graph.num_nodes(), kChunk, threads, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) fn(v, std::span<const Index>(indices + indptr[v], indices + indptr[v + 1]));
  });
}

template <typename Fn>
void ForEachNeighborList(const GraphData& graph, int threads, Fn fn) {
  if (graph.wide_indices()) {
    ForEachNeighborList<int64_t>(graph, threads, fn);
  } else {
    ForEachNeighborList<int32_t>(graph, threads, fn);
  }
}

// The batches CountReads samples per epoch.
int64_t CountedSteps(const EpochSeeds& seeds, const HotnessSpec& spec) {
  return spec.presample_batches > 0 ? std::min(spec.presample_batches, seeds.num_steps()) : seeds.num_steps();
}

// Writes `order` as DIR/hot_order.npy (int64, hottest first), replacing an older one whole; returns the path.
absl::StatusOr<std::string> StoreHotOrder(const std::string& dataset_dir, const std::vector<int64_t>& order) {
  const std::string path = absl::StrCat(dataset_dir, "/", kHotOrderFile);
  const std::string temp = absl::StrCat(path, ".partial-", ::getpid());
  ::unlink(temp.c_str());
  GNND_ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::CreateAppendable(temp, DType::kInt64, {}));
  absl::Status written = writer.Append(order.data(), static_cast<int64_t>(order.size()));
  if (written.ok()) written = writer.Finish();
  if (written.ok() && std::rename(temp.c_str(), path.c_str()) != 0) {
    written = ErrnoStatus(errno, absl::StrCat("rename ", temp, " to ", path));
  }
  if (!written.ok()) ::unlink(temp.c_str());
  GNND_RETURN_IF_ERROR(written);
  return path;
}

}  // namespace

std::vector<double> ExpectedReads(const GraphData& graph, std::span<const int64_t> train,
                                  const std::vector<int32_t>& fanouts, int threads) {
  const int64_t n = graph.num_nodes();
  std::vector<uint64_t> level(n, 0), next(n, 0);
  std::vector<double> total(n, 0);
  for (int64_t t : train) level[t] += static_cast<uint64_t>(kFixedOne);
  auto add_level = [&] {
    for (int64_t v = 0; v < n; ++v) total[v] += static_cast<double>(level[v]) / kFixedOne;
  };
  add_level();
  for (int32_t fanout : fanouts) {
    std::fill(next.begin(), next.end(), 0);
    ForEachNeighborList(graph, threads, [&](int64_t v, auto neighbors) {
      const int64_t degree = static_cast<int64_t>(neighbors.size());
      if (level[v] == 0 || degree == 0) return;
      // Each of the node's in-neighbor positions is taken with probability k / degree.
      const auto share = static_cast<uint64_t>(static_cast<double>(level[v]) *
                                               static_cast<double>(SampleCount(degree, fanout)) / degree);
      for (auto u : neighbors) std::atomic_ref<uint64_t>(next[u]).fetch_add(share, std::memory_order_relaxed);
    });
    level.swap(next);
    add_level();
  }
  return total;
}

std::vector<double> TypedExpectedReads(const GraphData& graph, int seed_type, std::span<const int64_t> seeds,
                                       const std::vector<int32_t>& fanouts, int threads) {
  const DatasetSchema& schema = graph.schema;
  const auto n = static_cast<size_t>(schema.num_nodes);
  std::vector<uint64_t> level(n, 0), next(n, 0);
  std::vector<double> total(n, 0);
  const int64_t seed_offset = schema.node_types[seed_type].offset;
  for (int64_t s : seeds) level[seed_offset + s] += static_cast<uint64_t>(kFixedOne);
  auto add_level = [&] {
    for (size_t v = 0; v < n; ++v) total[v] += static_cast<double>(level[v]) / kFixedOne;
  };
  add_level();
  for (int32_t fanout : fanouts) {
    std::fill(next.begin(), next.end(), 0);
    for (const RelationSchema& r : schema.relations) {  // the typed rule: every relation into a frontier type
      const int64_t dst_offset = schema.node_types[r.dst_type].offset,
                    src_offset = schema.node_types[r.src_type].offset;
      const auto* indptr = static_cast<const int64_t*>(graph.arrays.data[r.indptr]);
      const void* indices = graph.arrays.data[r.indices];
      const bool wide = r.index_dtype == DType::kInt64;
      ParallelFor(schema.node_types[r.dst_type].num_nodes, kChunk, threads, [&](int64_t begin, int64_t end) {
        for (int64_t v = begin; v < end; ++v) {
          const uint64_t weight = level[dst_offset + v];
          const int64_t degree = indptr[v + 1] - indptr[v];
          if (weight == 0 || degree == 0) continue;
          const auto share = static_cast<uint64_t>(static_cast<double>(weight) *
                                                   static_cast<double>(SampleCount(degree, fanout)) / degree);
          for (int64_t p = indptr[v]; p < indptr[v + 1]; ++p) {
            const int64_t u = wide ? static_cast<const int64_t*>(indices)[p] : static_cast<const int32_t*>(indices)[p];
            std::atomic_ref<uint64_t>(next[src_offset + u]).fetch_add(share, std::memory_order_relaxed);
          }
        }
      });
    }
    level.swap(next);
    add_level();
  }
  return total;
}

std::vector<int64_t> ListAppearances(const GraphData& graph, int threads) {
  std::vector<int64_t> count(graph.num_nodes(), 0);
  ForEachNeighborList(graph, threads, [&](int64_t, auto neighbors) {
    for (auto u : neighbors) std::atomic_ref<int64_t>(count[u]).fetch_add(1, std::memory_order_relaxed);
  });
  return count;
}

absl::Status CheckHotnessSpec(const HotnessSpec& spec) {
  if (spec.batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size = ", spec.batch_size, " (must be at least 1)"));
  }
  return CheckHopFanouts(spec.fanouts);
}

std::vector<int64_t> CountReads(const GraphData& graph, std::span<const int64_t> train, const HotnessSpec& spec,
                                uint64_t epoch) {
  std::vector<int64_t> count(graph.num_nodes(), 0);
  const EpochSeeds seeds(train, {.seed = spec.seed, .batch_size = spec.batch_size}, epoch);
  const int64_t steps = CountedSteps(seeds, spec);
  absl::StatusOr<HomogeneousCapacity> capacity =
      ComputeHomogeneousCapacity(SamplingSpec::OneRelation(spec.batch_size, spec.fanouts), graph.num_nodes(),
                                 graph.manifest.num_edges(), graph.MaxInDegree());
  if (!capacity.ok() || steps == 0) return count;
  // No features: a layout with 0-byte rows, sampled without the gather.
  const HomogeneousLayout layout = HomogeneousLayout::Make(*capacity, static_cast<int>(spec.fanouts.size()), 0);
  const int threads = std::max(1, spec.threads);
  ParallelFor(steps, std::max<int64_t>(1, steps / (4 * threads)), threads, [&](int64_t begin, int64_t end) {
    CpuSampler sampler(graph, SamplingSpec::OneRelation(spec.batch_size, spec.fanouts), spec.seed);
    std::vector<uint64_t> buffer(layout.total_bytes / sizeof(uint64_t) + 1);
    const HomogeneousView out = HomogeneousView::At(buffer.data(), layout);
    for (int64_t step = begin; step < end; ++step) {
      sampler.SampleGraph(epoch, seeds.batch_index(step), seeds.batch(step), out);
      for (int64_t i = 0, nodes = out.num_nodes(); i < nodes; ++i) {
        std::atomic_ref<int64_t>(count[out.node_ids[i]]).fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  return count;
}

template <typename Score>
std::vector<int64_t> RankByScore(std::span<const Score> scores) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  return order;
}
template std::vector<int64_t> RankByScore(std::span<const double>);
template std::vector<int64_t> RankByScore(std::span<const int64_t>);

double HitRate(std::span<const int64_t> order, int64_t k, std::span<const int64_t> reads) {
  int64_t hit = 0, all = 0;
  for (int64_t r : reads) all += r;
  for (int64_t i = 0; i < std::min<int64_t>(k, static_cast<int64_t>(order.size())); ++i) hit += reads[order[i]];
  return all == 0 ? 0.0 : static_cast<double>(hit) / static_cast<double>(all);
}

absl::StatusOr<std::string> WriteTypedHotOrder(const std::string& dataset_dir, const GraphData& graph,
                                               const std::string& split, const std::vector<int32_t>& fanouts,
                                               int threads);

absl::StatusOr<std::string> HotnessReport(const std::string& dataset_dir, const std::string& split,
                                          const HotnessSpec& spec, bool write) {
  GNND_ASSIGN_OR_RETURN(const DatasetDir dir, DatasetDir::Open(dataset_dir));
  GNND_RETURN_IF_ERROR(dir.Validate(spec.threads));  // ids below are used as indices
  if (dir.schema().format_version != 1) {            // typed: the ranking, without the hit-rate table
    if (!write) {
      return absl::UnimplementedError(
          "a typed dataset: gnnctl hotness reports hit rates of homogeneous datasets only (--write stores the "
          "typed ranking)");
    }
    GNND_RETURN_IF_ERROR(CheckHotnessSpec(spec));
    return WriteTypedHotOrder(dataset_dir, {dir.manifest(), dir.arrays(), dir.schema()}, split, spec.fanouts,
                              spec.threads);
  }
  GNND_ASSIGN_OR_RETURN(const ArrayId split_id, SplitArrayId(split));
  GNND_RETURN_IF_ERROR(CheckHotnessSpec(spec));
  const GraphData graph{dir.manifest(), dir.arrays(), dir.schema()};
  const auto* ids = static_cast<const int64_t*>(graph.arrays[split_id]);
  const std::span<const int64_t> train(ids, ArrayShape(graph.manifest, split_id)[0]);
  // Refuses specs whose batches would outgrow the layout before any work (CountReads would count nothing).
  GNND_RETURN_IF_ERROR(ComputeHomogeneousCapacity(SamplingSpec::OneRelation(spec.batch_size, spec.fanouts),
                                                  graph.num_nodes(), graph.manifest.num_edges(), graph.MaxInDegree())
                           .status());

  const std::vector<int64_t> truth = CountReads(graph, train, spec, /*epoch=*/0);
  const std::vector<double> expected = ExpectedReads(graph, train, spec.fanouts, spec.threads);
  const std::vector<int64_t> lists = ListAppearances(graph, spec.threads);
  const std::vector<int64_t> presample = CountReads(graph, train, spec, /*epoch=*/1);
  const std::vector<std::pair<std::string, std::vector<int64_t>>> rankings = {
      {"expected", RankByScore<double>(expected)},
      {"lists", RankByScore<int64_t>(lists)},
      {"presample", RankByScore<int64_t>(presample)},
      {"ideal", RankByScore<int64_t>(truth)},
  };
  const int64_t n = graph.num_nodes();
  int64_t reads = 0;
  for (int64_t r : truth) reads += r;
  const int64_t batches = CountedSteps(EpochSeeds(train, {.seed = spec.seed, .batch_size = spec.batch_size}, 0), spec);
  std::string report = absl::StrFormat(
      "%s: %d nodes, split %s (%d seeds), batch %d, fanouts [%s]; hit rate of a cache of the top rows of each "
      "ranking, against the rows read by %d batches of epoch 0 (%.0f rows per batch; presample counts epoch 1; "
      "ideal ranks by epoch 0's own counts)\n\n| cache, %% of rows | rows |",
      dataset_dir, n, split, train.size(), spec.batch_size, absl::StrJoin(spec.fanouts, ","), batches,
      batches > 0 ? static_cast<double>(reads) / batches : 0.0);
  for (const auto& [name, order] : rankings) absl::StrAppend(&report, " ", name, " |");
  absl::StrAppend(&report, "\n|---|---|");
  for (size_t i = 0; i < rankings.size(); ++i) absl::StrAppend(&report, "---|");
  absl::StrAppend(&report, "\n");
  for (double percent : {1.0, 2.0, 5.0, 10.0, 20.0, 25.0, 50.0}) {
    const auto k = static_cast<int64_t>(static_cast<double>(n) * percent / 100);
    absl::StrAppendFormat(&report, "| %g | %d |", percent, k);
    for (const auto& [name, order] : rankings) absl::StrAppendFormat(&report, " %.3f |", HitRate(order, k, truth));
    absl::StrAppend(&report, "\n");
  }
  if (write) {
    GNND_ASSIGN_OR_RETURN(const std::string path, StoreHotOrder(dataset_dir, rankings[0].second));
    absl::StrAppend(&report, "\nwrote ", path, " (node ids by expected reads, hottest first)\n");
  }
  return report;
}

absl::StatusOr<std::string> WriteTypedHotOrder(const std::string& dataset_dir, const GraphData& graph,
                                               const std::string& split, const std::vector<int32_t>& fanouts,
                                               int threads) {
  const DatasetSchema& schema = graph.schema;
  const auto s = std::find(kSplitNames.begin(), kSplitNames.end(), split) - kSplitNames.begin();
  if (s == static_cast<int64_t>(kSplitNames.size())) {
    return absl::InvalidArgumentError(absl::StrCat("split = ", Quoted(split), " (must be train, valid or test)"));
  }
  int seed_type = -1;  // the first type with that split (typed datasets have their splits on one type)
  for (size_t t = 0; t < schema.node_types.size() && seed_type < 0; ++t) {
    if (schema.node_types[t].splits[s] >= 0) seed_type = static_cast<int>(t);
  }
  if (seed_type < 0 || schema.node_types[seed_type].split_sizes[s] == 0) {
    return absl::StrCat("no ", kHotOrderFile, ": no node type has a ", split, " split");
  }
  const NodeTypeSchema& seeds_type = schema.node_types[seed_type];
  const std::span<const int64_t> seeds(static_cast<const int64_t*>(graph.arrays.data[seeds_type.splits[s]]),
                                       static_cast<size_t>(seeds_type.split_sizes[s]));
  const std::vector<double> reads = TypedExpectedReads(graph, seed_type, seeds, fanouts, threads);
  // Only rows that exist are ranked: the nodes of types with features (global ids, as the hot tier reads them).
  std::vector<int64_t> order;
  for (int64_t id : RankByScore<double>(reads)) {
    const auto type = std::upper_bound(schema.node_types.begin(), schema.node_types.end(), id,
                                       [](int64_t v, const NodeTypeSchema& t) { return v < t.offset; }) -
                      1;
    if (type->features >= 0) order.push_back(id);
  }
  GNND_ASSIGN_OR_RETURN(const std::string path, StoreHotOrder(dataset_dir, order));
  return absl::StrCat("wrote ", path, " (the GPU hot tier's ranking of every featured type's rows, global ids: ",
                      "expected reads from the ", seeds_type.name, " ", split, " split with fanouts [",
                      absl::StrJoin(fanouts, ","), "] through every relation)");
}

absl::StatusOr<std::string> WriteHotOrder(const std::string& dataset_dir, const std::string& split,
                                          const std::vector<int32_t>& fanouts, int threads) {
  GNND_RETURN_IF_ERROR(CheckHopFanouts(fanouts));
  GNND_ASSIGN_OR_RETURN(const DatasetDir dir, DatasetDir::Open(dataset_dir));
  if (dir.schema().format_version != 1) {
    return WriteTypedHotOrder(dataset_dir, {dir.manifest(), dir.arrays(), dir.schema()}, split, fanouts, threads);
  }
  GNND_ASSIGN_OR_RETURN(const ArrayId split_id, SplitArrayId(split));
  const NodeTypeSchema& nodes = dir.schema().node_types[0];
  if (nodes.features < 0) return absl::StrCat("no ", kHotOrderFile, ": the dataset has no features to cache");
  if (nodes.labels < 0) return absl::StrCat("no ", kHotOrderFile, ": the dataset has no node splits");
  const GraphData graph{dir.manifest(), dir.arrays(), dir.schema()};
  const std::span<const int64_t> seeds(static_cast<const int64_t*>(graph.arrays[split_id]),
                                       ArrayShape(graph.manifest, split_id)[0]);
  if (seeds.empty()) return absl::StrCat("no ", kHotOrderFile, ": the ", split, " split is empty");
  GNND_ASSIGN_OR_RETURN(const std::string path,
                        StoreHotOrder(dataset_dir, RankByScore<double>(ExpectedReads(graph, seeds, fanouts, threads))));
  return absl::StrCat("wrote ", path, " (the GPU hot tier's ranking: expected reads with fanouts [",
                      absl::StrJoin(fanouts, ","), "])");
}

}  // namespace gnnd::dataset
