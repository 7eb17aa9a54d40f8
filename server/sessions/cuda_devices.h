// What the sessions on each GPU share, and how a CUDA session's slots are made: the dataset as each GPU
// sees it (registered once for zero-copy, CSC copied or read in place), and where producers run (the
// whole GPU, a green context of producer_sms SMs made once per GPU, or with auto the GPU's producer slices,
// which grow while a trainer waits for batches). Thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/green_context.h"
#include "kernels/cuda/hot_tier.h"
#include "server/sessions/producer_slices.h"
#include "server/sessions/slot_backend.h"

namespace gnnd {

class CudaSlots;

class CudaDevices {
 public:
  explicit CudaDevices(const SlotBackends::Options& options) : options_(options) {}
  ~CudaDevices();

  // A CUDA session's slots on plan.device, its producer placed (PlaceProducer). Sessions of
  // a dataset on storage are staged by `host_workers`.
  absl::StatusOr<std::unique_ptr<SlotBackend>> CreateSlots(const SessionPlan& plan,
                                                           std::unique_ptr<TaskRunner> host_workers);
  void Forget(const LoadedDataset& dataset);
  // Places `dataset` on the GPUs of options.prepare_gpus; logs what it did and what failed.
  void Prepare(const LoadedDataset& dataset);
  // Memory of the GPUs gnnd uses (those with a dataset placed or a producer), and the host memory
  // registered for them.
  void AppendStats(v1::Stats& stats);

 private:
  // `dataset` placed for `device`, made on first use (with a hot tier of its own if `hot_tier`).
  absl::StatusOr<const cuda::DeviceGraph*> Place(const LoadedDataset& dataset, int device, bool hot_tier);
  // The rows of `dataset` that the hot tier on `device` holds (null: no tier there).
  std::shared_ptr<const std::vector<bool>> HeldRows(const LoadedDataset& dataset, int device);
  // Where the current device gets a dataset's CSC: GPU memory, unless options say host memory; then
  // indptr still goes to GPU memory when it is small beside what is free.
  cuda::CscPlacement CscPlacementFor(const DatasetSchema& schema) const;
  // Builds `dataset`'s hot tier on `devices` (placed already): split between them when they have peer
  // access to each other, else one per device. Logs what it did; without a ranking, or without room,
  // there is none. Holds placed_mutex_.
  void BuildHotTiers(const LoadedDataset& dataset, const std::vector<int>& devices);
  // A typed dataset's: one tier per featured type, filled from the global ranking `order` within `budget`.
  void BuildTypedHotTiers(const LoadedDataset& dataset, const std::vector<int64_t>& order, uint64_t budget,
                          const std::vector<int>& group);
  // Where a new session's producer on `device` runs: a fixed green context of producer_sms SMs, the GPU's
  // producer slices (auto, under MPS), or its own stream on the whole GPU (0, or auto without MPS).
  absl::Status PlaceProducer(int device, CudaSlots& slots);

  const SlotBackends::Options options_;
  std::mutex placed_mutex_;  // held while placing; producers below have their own
  std::map<std::pair<const LoadedDataset*, int>, std::unique_ptr<cuda::DeviceDataset>> placed_;
  std::map<const LoadedDataset*, std::vector<std::unique_ptr<cuda::HotTier>>> hot_tiers_;
  std::mutex producers_mutex_;
  std::map<int, std::unique_ptr<cuda::GreenContext>> producer_contexts_;  // producer_sms N
  std::map<int, std::shared_ptr<ProducerSlices>> producer_slices_;        // producer_sms auto (null: none here)
};

}  // namespace gnnd
