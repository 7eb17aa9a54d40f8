// The CUDA backend: samples a batch on the GPU with the shared rule (common/batch/sampling.h) and assembles it
// in the canonical layout, bit-identical to CpuSampler. Every buffer is allocated up front from the
// batch capacity; Sample() only launches work on its stream (no allocation, no host synchronization):
// hop sizes stay on the device and each launch covers the host-side upper bound. The work is split by
// phase: sampling.h (neighbors), dedup.h (node table, relabel), gather.h (features, labels).
//
// A batch's ~70 launches are the same for every batch into the same output (what varies, the seeds and
// the draw's key, is written to the device first: BatchArgs), so they are captured once per output as
// two CUDA graphs (sampling, gather) and replayed: three launches per batch instead of ~70.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/batch.h"
#include "kernels/cuda/batch_graphs.h"
#include "kernels/cuda/dedup.h"
#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/gather.h"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

class CudaSampler {
 public:
  // Sizes every buffer for `capacity` (ComputeBatchCapacity of the same spec) on the current device.
  static absl::StatusOr<std::unique_ptr<CudaSampler>> Create(const DeviceGraph& graph, const SamplingSpec& spec,
                                                             uint64_t seed, const BatchCapacity& capacity);

  // Enqueues the batch for (epoch, batch_index) around `device_seeds` (device memory) on `stream`,
  // writing every array of `out` (device memory laid out by layout()). `sampled`, if given, is recorded
  // between the sampling and the gather (the stage split).
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> device_seeds, BatchView out,
                      cudaStream_t stream, cudaEvent_t sampled = nullptr);
  // A link batch's graph (CpuSampler::SampleLinkGraph): around the hop-0 nodes at `hop0` (device memory,
  // *num_hop0 of them, at most the capacity's seeds), never drawing an edge of `excluded`; features
  // gathered, labels not. No CUDA graph: every kernel is launched.
  absl::Status SampleLinkGraph(uint64_t epoch, uint64_t batch_index, const int64_t* hop0, const int64_t* num_hop0,
                               const DeviceExclusions& excluded, BatchView out, cudaStream_t stream);
  const BatchLayout& layout() const { return layout_; }
  // Rows that are not multiples of 16 bytes: read them with 16-byte loads shifted through shared memory
  // (default), or with the widest narrower loads that fit (kept for comparison in benchmarks).
  void set_shifted_gather(bool shifted) { gather_.shifted = shifted; }
  // Replay captured CUDA graphs (default), or launch every kernel each batch (kept for comparison).
  void set_use_graphs(bool use) { use_graphs_ = use; }
  // Captures and instantiates the graphs that Sample launches for `out` on `stream` now, rather than at
  // its first batch (tens of kernels each: work for a setup thread, not for a session's step).
  absl::Status Prepare(BatchView out, cudaStream_t stream);
  // Destroys the captured graphs; call before the stream they were captured on goes away (the next
  // batch captures again).
  void DropGraphs() { graphs_.Drop(); }

 private:
  CudaSampler() = default;
  absl::Status EnqueueSampling(BatchView out, cudaStream_t stream, const DeviceExclusions& excluded = {});
  absl::Status EnqueueGather(BatchView out, cudaStream_t stream);

  DeviceGraph graph_;
  SamplingSpec spec_;
  uint64_t seed_ = 0;
  BatchLayout layout_;
  IdRange ids_;
  GatherOptions gather_;
  bool use_graphs_ = true;
  bool needs_reset_ = false;  // a batch's sampling was not enqueued whole: reset the dedup state first
  std::unique_ptr<Workspace> workspace_;
  BatchGraphs graphs_;  // keyed by the output's node_ids
};

}  // namespace gnnd::cuda
