// What CudaSlots asks of the thing that fills a GPU slot: a CUDA sampler (homogeneous or typed), or the
// host's two-stage producer for features on storage (staged_slot_sampler.h). It fills a slot on a stream
// and says where the batch's per-hop counts are (int32 arrays, copied to the host after each fill) and what
// the batch's counts are from them.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/batch.h"
#include "common/batch/seeds.h"
#include "gnnd/v1/service.pb.h"

namespace gnnd {

class SlotSampler {
 public:
  virtual ~SlotSampler() = default;
  virtual size_t slot_bytes() const = 0;
  // Enqueues the fill of `slot` (device memory) with batch `batch_index` of `epoch` around `seeds` (in host
  // memory, and the same on the device: `device_seeds`; each with its times where the session's seeds have
  // them) on `stream`.
  virtual absl::Status Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds,
                              const SeedBatch& device_seeds, char* slot, cudaStream_t stream) = 0;
  virtual absl::Status Prepare(char* slot, cudaStream_t stream) = 0;
  // (byte offset in a slot, int32 entries) of each per-hop count array, in the order they are copied.
  virtual std::vector<std::pair<size_t, int>> HopArrays() const = 0;
  // `ready`'s counts from the copied arrays (HopArrays' order, one after another).
  virtual void SetCounts(const int32_t* hops, v1::BatchReady& ready) const = 0;

  // For a sampler whose batches are made elsewhere first: starts an epoch (`stream` is the one fills use),
  // says whether step `step` (the next in order) may be enqueued now, hears that `slot`'s fill is complete
  // on the GPU (fills complete in the order they were enqueued), and stops. An error from Ready or Filled
  // ends the session.
  virtual absl::Status StartEpoch(uint64_t /*epoch*/, const EpochSeeds& /*seeds*/, cudaStream_t /*stream*/) {
    return absl::OkStatus();
  }
  virtual absl::StatusOr<bool> Ready(int64_t /*step*/) { return true; }
  virtual absl::Status Filled(int /*slot*/) { return absl::OkStatus(); }
  // Whether the fill of `slot` (device memory), complete on the GPU, must be done again before it is delivered
  // (a CUDA sampler's batch that outgrew a fitted sort or a LABOR bound: kernels/cuda/cuda_sampler.h).
  virtual absl::StatusOr<bool> Outgrown(const char* /*slot*/) { return false; }
  virtual void Stop() {}
  // Whether the fills may run in a producer slice, a green context shared by the GPU's sessions (the fill is
  // sampling kernels).
  virtual bool runs_in_slice() const { return true; }

  // A fill in two parts (the GPU samples, the host gathers the rows: host_gather_part.h). Sample enqueues the
  // GPU's part and CopyOut, after it, what the host's part reads of slot `slot` (at `slot_memory`, device memory);
  // once that is complete (and not outgrown), StartHostPart(slot) begins the host's part, which wakes the session
  // when it ends; HostPartDone says whether it has, and Finish then enqueues on `stream` what completes the slot.
  // A sampler of one part has none of this. `can_two_parts`: it can make fills of two parts; UseTwoParts says
  // whether the fills Sample enqueues from now on are (a sampler that can makes them so until told otherwise).
  virtual bool can_two_parts() const { return false; }
  virtual void UseTwoParts(bool /*two*/) {}
  virtual absl::Status CopyOut(int /*slot*/, const char* /*slot_memory*/, cudaStream_t /*stream*/) {
    return absl::OkStatus();
  }
  virtual absl::Status StartHostPart(int /*slot*/) { return absl::OkStatus(); }
  virtual absl::StatusOr<bool> HostPartDone(int /*slot*/) { return true; }
  virtual absl::Status Finish(int /*slot*/, char* /*slot_memory*/, cudaStream_t /*stream*/) { return absl::OkStatus(); }
  // The wall seconds the host's part of `slot`'s last fill took (once HostPartDone).
  virtual double HostPartSeconds(int /*slot*/) const { return 0; }
};

}  // namespace gnnd
