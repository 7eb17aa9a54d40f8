// The seed stage of a link-prediction batch on the host: a batch of seed edges from an edge split (or given
// pairs), the negatives drawn for them and the hop-0 nodes they give (common/batch/link_seeds.h), the
// excluded edges, then the graph drawn around those by the one CPU sampler (CpuSampler::SampleLinkGraph,
// exclusion inside the draw), and the pair arrays PyG's LinkNeighborLoader yields (PairArrays).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/batch.h"
#include "common/batch/layout.h"
#include "common/batch/link_batch.h"
#include "common/batch/link_seeds.h"
#include "common/dataset/graph.h"
#include "kernels/cpu/sampler.h"

namespace gnnd {

struct LinkBatch {
  // Where the graph is sampled to: a slot laid out for the session's LinkSampling spec, or a ring entry.
  BatchView graph;
  LinkSeeds seeds;
  std::vector<int64_t> input_id;
  std::vector<float> edge_label;         // an unlabeled split's
  std::vector<int64_t> edge_label_long;  // a labeled split's
};

// Copies a sampled batch's pair arrays into the slot at `slot`, placed as `pairs` says (its graph arrays are
// there already); returns the pair and positive counts.
std::pair<int64_t, int64_t> WriteLinkArrays(const LinkBatch& batch, const PairArrays& pairs, std::byte* slot);

class LinkStage {
 public:
  // The pairs of `spec` for samplers of `sampling` (LinkSampling: its batch_size the most positives a batch
  // has); checks both against the graph.
  static absl::StatusOr<LinkStage> Create(const GraphData& graph, const SamplingSpec& sampling,
                                          const LinkSeedSpec& spec, uint64_t seed);

  int64_t split_size() const { return positives_.size; }
  // Samples the batch of the split's positives at `input_id` (positions, as EpochSeeds gives them over
  // [0, split_size)) for (epoch, batch_index) into `out`, its graph through `sampler` (made with the
  // `sampling` of Create, the same seed); `times`, when given, gets the gather's seconds and the rest as
  // sampling. Without `gather_features` the graph's feature rows are left as they are (features on storage:
  // read by the caller).
  absl::Status Sample(CpuSampler& sampler, uint64_t epoch, uint64_t batch_index, std::span<const int64_t> input_id,
                      LinkBatch& out, SampleTimes* times = nullptr, bool gather_features = true);

 private:
  LinkStage(const GraphData& graph, const LinkSeedSpec& spec, uint64_t seed)
      : graph_(&graph), spec_(spec), seed_(seed) {}

  const GraphData* graph_;
  LinkSeedSpec spec_;
  uint64_t seed_;
  bool disjoint_ = false;                            // of the sampling spec
  std::shared_ptr<const NodesByTimeIndex> by_time_;  // temporal negatives' (relation_ points into it)
  LinkRelation relation_;
  LinkSeedEdges positives_;
  std::vector<int64_t> times_;            // a temporal batch's positives' times
  std::vector<EdgeExclusions> excluded_;  // per relation
  std::vector<int64_t> src_, dst_, fixed_;
  std::vector<std::span<const int64_t>> hop0_;  // per node type
};

}  // namespace gnnd
