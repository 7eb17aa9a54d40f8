// A GPU session's device side: slots in the trainer's GPU memory shared by CUDA IPC, an interprocess
// `ready` and `consumed` event per slot, the session's CudaSampler and stream. Fill() enqueues a batch
// behind the trainer's `consumed` event and records `ready`; nothing is allocated per batch.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "common/batch.h"
#include "common/seeds.h"
#include "gnnd/v1/service.pb.h"
#include "kernels/cuda/cuda_sampler.h"

namespace gnnd {

class GpuSlots {
 public:
  static absl::StatusOr<std::unique_ptr<GpuSlots>> Create(int device, const cuda::DeviceGraph& graph,
                                                          const std::vector<int32_t>& fanouts, uint64_t seed,
                                                          const BatchCapacity& capacity, int num_slots,
                                                          int64_t max_epoch_seeds);
  ~GpuSlots();

  const BatchLayout& layout() const;
  // Adds the IPC handles of the slots and events to `opened`.
  absl::Status Describe(v1::SessionOpened& opened) const;
  // Uploads one epoch's seeds for this rank (once per epoch).
  absl::Status StartEpoch(const EpochSeeds& seeds);
  // Fills `slot` with `step`'s batch and waits until it is complete, so that `ready` can report the
  // shapes; the trainer's stream still orders itself after the slot's `ready` event.
  absl::Status Fill(uint64_t epoch, const EpochSeeds& seeds, int64_t step, int slot, v1::BatchReady& ready);

 private:
  GpuSlots() = default;
  struct State;
  std::unique_ptr<State> state_;
};

// Whether CUDA MPS serves this machine (its control pipe exists); gnnd warns when it does not.
bool MpsActive();

}  // namespace gnnd
