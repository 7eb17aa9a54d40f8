// The reference (CPU) backend: samples one batch with the shared rule (common/batch/sampling.h) and
// assembles it in the canonical layout (common/batch/batch.h), features and labels included.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/batch/batch.h"
#include "common/batch/link_seeds.h"
#include "common/batch/sampling.h"
#include "common/dataset/graph.h"
#include "kernels/cpu/draw.h"

namespace gnnd {

// Samples batches. Holds per-batch scratch, so use one per thread; output depends only on the inputs.
// Where a batch's time went (seconds).
struct SampleTimes {
  double sample = 0;  // neighbors, dedup, relabel
  double gather = 0;  // feature rows and labels
};

class CpuSampler {
 public:
  CpuSampler(const GraphData& graph, const SamplingSpec& spec, uint64_t seed);

  // Samples around `seeds` for (epoch, batch_index) and writes every array of `out`, which must have
  // room for the capacity of this sampler's spec (see ComputeBatchCapacity).
  // `times`, if set, gets the time of each stage.
  void Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds, BatchView out,
              SampleTimes* times = nullptr);
  // The sampling stage alone: node ids, edges and per-hop counts of `out`; features and labels are not
  // touched (a layout made with a feature row of 0 bytes will do).
  void SampleGraph(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds, BatchView out);
  // A link batch's sampling stage: hop 0 is `hop0` (the unique endpoints of its pairs, link_seeds.h) and no
  // edge of `excluded` is sampled, each node still getting min(fanout, in-degree - excluded in-edges).
  void SampleLinkGraph(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> hop0,
                       const EdgeExclusions& excluded, BatchView out);
  // The feature rows of a sampled batch's nodes into out.features (none for a dataset without features).
  void GatherFeatures(const BatchView& out) const;
  // The seeds' labels of a sampled batch into out.labels.
  void GatherLabels(const BatchView& out) const;

 private:
  template <typename Index>
  void SampleHops(uint64_t epoch, uint64_t batch_index, const Index* indices, BatchView out);

  const GraphData& graph_;
  SamplingSpec spec_;
  uint64_t seed_;
  const EdgeExclusions* excluded_ = nullptr;     // a link batch's, while it is sampled
  absl::flat_hash_map<int64_t, int32_t> local_;  // global id -> local index, this batch
  DrawScratch draw_;
  std::vector<int64_t> sampled_, fresh_, reset_;
};

}  // namespace gnnd
