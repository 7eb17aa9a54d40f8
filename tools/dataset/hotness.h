// Which feature rows sampling reads most: rankings of a dataset's nodes for a GPU hot tier, and the hit
// rate each gives a cache of the top k rows. A row is read once per batch that holds its node, so the
// truth is counted by sampling batches with the session's rule (CpuSampler); the rankings are
//   expected  the seeds' weight pushed hop by hop to in-neighbors, each taken with probability
//             min(1, fanout / in-degree): the seed paper's weighted reverse PageRank, with the fanout
//             cap and one step per hop (expected reads per epoch, before in-batch dedup);
//   lists     how many in-neighbor lists hold the node (its out-degree: how often it can be drawn);
//   presample row reads counted over batches of another epoch than the one that is scored.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dataset/graph.h"

namespace gnnd::dataset {

struct HotnessSpec {
  std::vector<int32_t> fanouts;
  int64_t batch_size = 1024;
  uint64_t seed = 0;
  int64_t presample_batches = 200;  // per counted epoch; 0: the whole epoch
  int threads = 1;
};

// Expected row reads per node in one epoch whose seeds are `train` (see the header comment).
std::vector<double> ExpectedReads(const GraphData& graph, std::span<const int64_t> train,
                                  const std::vector<int32_t>& fanouts, int threads);
// A typed dataset's expected reads per node (global ids: a type's offset plus its id): the same weights pushed
// through every relation into each hop's frontier types (common/batch/layout.h's rule).
std::vector<double> TypedExpectedReads(const GraphData& graph, int seed_type, std::span<const int64_t> seeds,
                                       const std::vector<int32_t>& fanouts, int threads);
// Per node, the number of in-neighbor lists holding it.
std::vector<int64_t> ListAppearances(const GraphData& graph, int threads);
// Per node, the batches holding it among the first `spec.presample_batches` of `epoch` (shuffled seeds).
std::vector<int64_t> CountReads(const GraphData& graph, std::span<const int64_t> train, const HotnessSpec& spec,
                                uint64_t epoch);

// Node ids by descending score, ties by ascending id.
template <typename Score>
std::vector<int64_t> RankByScore(std::span<const Score> scores);
// The share of all reads in `reads` that a cache of the first `k` ids of `order` would serve.
double HitRate(std::span<const int64_t> order, int64_t k, std::span<const int64_t> reads);

// `gnnctl hotness`: the hit rate of each ranking for caches of 1 to 50 % of the rows (scored against the
// reads counted in epoch 0; the presample ranking counts epoch 1), as a table. With `write`, stores the
// `expected` ranking as hot_order.npy (int64 node ids, hottest first) in the dataset directory.
absl::StatusOr<std::string> HotnessReport(const std::string& dataset_dir, const std::string& split,
                                          const HotnessSpec& spec, bool write);

// Stores the `expected` ranking of the dataset in `dataset_dir` (seeds: `split`; of a typed dataset, the type with
// that split, ranking every featured type's rows by global id) as hot_order.npy there, as
// `gnnctl import` and `generate` do for the datasets they write (their ids are checked as they are written;
// HotnessReport validates first). Returns a line saying what was stored; an empty split stores nothing.
absl::StatusOr<std::string> WriteHotOrder(const std::string& dataset_dir, const std::string& split,
                                          const std::vector<int32_t>& fanouts, int threads);

}  // namespace gnnd::dataset
