// A GPU session's device side: slots in the trainer's GPU memory shared by CUDA IPC, an interprocess
// `ready` and `consumed` event per slot, the session's CudaSampler and stream. Fill() enqueues a batch
// behind the trainer's `consumed` event and records `ready`; nothing is allocated per batch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "absl/status/statusor.h"
#include "common/batch.h"
#include "common/seeds.h"
#include "gnnd/v1/service.pb.h"
#include "kernels/cuda/cuda_sampler.h"
#include "kernels/cuda/green_context.h"

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
  // Fills slots on `stream` from now on (a green context's, shared with other sessions) instead of the
  // session's own stream.
  void UseStream(cudaStream_t stream);
  // Batches per second over `count` batches of `seeds` on `stream` (calibration; uses slot 0).
  absl::StatusOr<double> Rate(const EpochSeeds& seeds, cudaStream_t stream, int count);
  // Fills `slot` with `step`'s batch and waits until it is complete, so that `ready` can report the
  // shapes; the trainer's stream still orders itself after the slot's `ready` event.
  absl::Status Fill(uint64_t epoch, const EpochSeeds& seeds, int64_t step, int slot, v1::BatchReady& ready);

 private:
  GpuSlots() = default;
  struct State;
  std::unique_ptr<State> state_;
};

// Where each GPU's producers run: the whole GPU, or a green context of producer_sms SMs (made once per
// GPU, calibrated when producer_sms is -1). Thread-safe.
class GpuProducers {
 public:
  explicit GpuProducers(int producer_sms) : producer_sms_(producer_sms) {}
  ~GpuProducers();
  // The stream for a new session on `device`, or null for a stream of its own on the whole GPU. `rate`
  // measures batches/s on a stream (auto calibration).
  absl::StatusOr<cudaStream_t> StreamFor(int device, const std::function<absl::StatusOr<double>(cudaStream_t)>& rate);

 private:
  const int producer_sms_;
  std::mutex mutex_;
  std::map<int, std::unique_ptr<cuda::GreenContext>> contexts_;
};

// Whether CUDA MPS serves this machine (its control pipe exists); gnnd warns when it does not.
bool MpsActive();

}  // namespace gnnd
