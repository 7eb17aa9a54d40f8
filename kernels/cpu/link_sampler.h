// The CPU backend's link-prediction batch (homogeneous graphs): a batch of seed edges from an edge split,
// the negatives drawn for them and the hop-0 nodes they give (common/batch/link_seeds.h), the graph sampled
// around those with seed-edge exclusion inside the draw (CpuSampler::SampleLinkGraph), and the pair arrays
// PyG's LinkNeighborLoader yields (their slot layout: common/batch/link_batch.h).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/batch.h"
#include "common/batch/link_batch.h"
#include "common/batch/link_seeds.h"
#include "common/dataset/graph.h"
#include "kernels/cpu/sampler.h"

namespace gnnd {

struct LinkBatch {
  BatchView graph;  // node_ids .. features of a BatchLayout for MaxLinkSeeds(batch size) seeds; labels unused
  LinkSeeds seeds;
  std::vector<int64_t> input_id;
  std::vector<float> edge_label;         // an unlabeled split's
  std::vector<int64_t> edge_label_long;  // a labeled split's
};

// Copies a sampled batch's pair arrays into the slot at `slot` laid out by `layout` (its graph arrays are
// there already); returns the pair and positive counts.
std::pair<int64_t, int64_t> WriteLinkArrays(const LinkBatch& batch, const LinkBatchLayout& layout, std::byte* slot);

class CpuLinkSampler {
 public:
  // Checks the spec against the graph (CheckLinkSamplingSpec, and fanouts as a node session's).
  static absl::StatusOr<CpuLinkSampler> Create(const GraphData& graph, const LinkSamplingSpec& spec, uint64_t seed,
                                               int64_t max_positives);

  int64_t split_size() const { return split_size_; }
  // Samples the batch of the split's positives at `input_id` (positions, as EpochSeeds gives them over
  // [0, split_size)) for (epoch, batch_index) into `out`.
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> input_id, LinkBatch& out);

 private:
  CpuLinkSampler(const GraphData& graph, const LinkSamplingSpec& spec, uint64_t seed, const SamplingSpec& sampling);

  const GraphData* graph_;
  LinkSamplingSpec spec_;
  uint64_t seed_;
  CpuSampler sampler_;
  const int64_t* split_edges_ = nullptr;  // (2, split_size)
  const int64_t* split_labels_ = nullptr;
  int64_t split_size_ = 0;
  EdgeExclusions excluded_;
  std::vector<int64_t> src_, dst_;
};

}  // namespace gnnd
