// The seed stage of link batches on the GPU, byte for byte LinkStage's (kernels/cpu/link_stage.h): a batch's positives
// (from its edge split, or the session's given pairs, in host memory) are uploaded with its excluded edges
// (EdgeExclusions, made on the host from those few thousand pairs); the negatives, their strictness check,
// the hop-0 nodes and the local pairs are made on the GPU (link_seeds.h), and the graph is drawn around the
// excluded edges on the GPU by the one CUDA sampler (CudaSampler::SampleLinkGraph, each relation with its
// excluded edges). The host waits for nothing but the previous batch's upload. A disjoint (or temporal) batch's
// seed side, a few thousand endpoints in pair order with their times, is made on the host by MakeLinkSeeds itself
// and uploaded with the positives.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/link_batch.h"
#include "common/dataset/graph.h"
#include "kernels/cuda/cuda_sampler.h"
#include "kernels/cuda/link_seeds.h"

namespace gnnd::cuda {

class CudaLinkStage {
 public:
  // The pairs of `spec` on `host`'s graph as the current device sees it (`device`, with the CSC in GPU memory
  // or read in place), drawn around by `sampler` (which outlives the stage; its spec LinkSampling's, whose
  // batch_size is the most positives a batch has; its layout the session's: graph arrays, then pairs). `ways`:
  // host staging areas, used in turn by the caller (Sample's `way`): a session keeps one per slot, so no
  // upload waits for an earlier batch.
  static absl::StatusOr<std::unique_ptr<CudaLinkStage>> Create(const GraphData& host, const DeviceGraph& device,
                                                               CudaSampler& sampler, const LinkSeedSpec& spec,
                                                               uint64_t seed, int ways = 1);
  ~CudaLinkStage();
  CudaLinkStage(const CudaLinkStage&) = delete;
  CudaLinkStage& operator=(const CudaLinkStage&) = delete;

  // Enqueues the batch of the positives at `input_id` (positions in the split) for (epoch, batch_index) on
  // `stream`: the graph arrays into `out` (device memory laid out by layout()), the pairs into seeds().
  // With `labels`, a labeled split's edge labels are uploaded after the input ids (SampleInto).
  // `way`: the staging area (waited for only if the batch that used it last is not complete).
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> input_id, void* out,
                      cudaStream_t stream, bool labels = false, int way = 0);
  // The same into `slot` (device memory laid out by layout()), then the batch's pair arrays there: input_id, and
  // edge_label_index (L x 2 rows) with edge_label (1. / 0., or a labeled split's classes + 1 with 0 for negatives), or
  // src_index, dst_pos_index and dst_neg_index. The batch's strict flag is copied to *strict_failed (pinned host
  // memory: UINT64_MAX, or the first negative whose draws all hit edges) on `stream`.
  absl::Status SampleInto(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> input_id, std::byte* slot,
                          uint64_t* strict_failed, int way, cudaStream_t stream);
  // Waits for `stream`: the error of a strict negative that found only edges in the last batch, or OK.
  absl::Status CheckStrict(uint64_t batch_index, cudaStream_t stream) const;
  // The error for a strict flag read after the batch of `input_id` (SampleInto's *strict_failed), or OK.
  absl::Status StrictError(uint64_t batch_index, uint64_t failed, std::span<const int64_t> input_id) const;
  const CudaLinkSeeds& seeds() const { return *seeds_; }
  const BatchLayout& layout() const { return sampler_->layout(); }

 private:
  CudaLinkStage() = default;
  // Room for `positions` excluded positions in one hop (grown, after the stream's work, when short).
  absl::Status ReservePositions(int64_t positions, cudaStream_t stream);

  // A disjoint batch's seed side on the host, staged at `at`: its hop-0 counts, nodes and times.
  // A disjoint batch's pair arrays, its pair times and its strict flag (none: drawn on the host) into `slot`.
  absl::Status WriteDisjointPairs(int64_t positives, std::byte* slot, uint64_t* strict_failed, cudaStream_t stream);
  absl::Status StageDisjointSeeds(uint64_t epoch, uint64_t batch_index, const int64_t* src, const int64_t* dst,
                                  std::span<const int64_t> input_id, int64_t* staging, int64_t at, int64_t* end);

  const GraphData* host_ = nullptr;
  LinkRelation relation_;  // the seed relation, as the host sees it (sizes, name; temporal negatives' index)
  std::shared_ptr<const NodesByTimeIndex> by_time_;
  bool disjoint_ = false, temporal_ = false;
  LinkSeeds host_seeds_;            // a disjoint batch's
  std::vector<int64_t> times_;      // its positives' times
  int64_t disjoint_at_ = 0;         // where its counts, nodes, subgraph and pair times start in uploaded_
  uint64_t* no_failure_ = nullptr;  // UINT64_MAX on the device: a disjoint batch's strict flag (drawn on the host)
  DeviceRelation csc_;              // and as the GPU does
  LinkSeedSpec spec_;
  uint64_t seed_ = 0;
  LinkSeedEdges positives_;  // in host memory
  int64_t max_positives_ = 0;
  CudaSampler* sampler_ = nullptr;
  std::unique_ptr<CudaLinkSeeds> seeds_;
  std::vector<EdgeExclusions> excluded_;           // per relation
  std::vector<DeviceExclusions> device_excluded_;  // the same, as the sampling kernels read them
  std::vector<int64_t> fixed_;                     // a batch's fixed negatives (kFixed)
  // Uploaded per batch, pinned on the host: the positives' sources and destinations, the excluded pairs'
  // destinations and sources, the input ids and a labeled split's edge labels; the same on the device.
  int64_t* staging_ = nullptr;  // ways x staging_size_ ids
  int64_t staging_size_ = 0;
  int64_t* uploaded_ = nullptr;
  std::vector<cudaEvent_t> staged_;  // per way: the last upload from it is done
  int64_t upload_tail_ = 0;          // where the last upload's input ids start
  int64_t* num_hop0_ = nullptr;      // per node type
  DeviceExclusions scratch_;         // its counts, offsets and positions
};

}  // namespace gnnd::cuda
