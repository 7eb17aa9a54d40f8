// What the sessions on each GPU share, and how a CUDA session's slots are made: the dataset as each GPU
// sees it (registered once for zero-copy, CSC copied or read in place), and where producers run (the
// whole GPU, or a green context of producer_sms SMs made once per GPU, calibrated when auto). Thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/green_context.h"
#include "kernels/cuda/hot_tier.h"
#include "server/sessions/slot_backend.h"

namespace gnnd {

class CudaDevices {
 public:
  explicit CudaDevices(const SlotBackends::Options& options) : options_(options) {}
  ~CudaDevices();

  // A CUDA session's slots on plan.device, its producer placed (and calibrated, the first time). Sessions of
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
  // The stream for a new session's producer on `device`, or null for a stream of its own on the whole
  // GPU. `rate` measures batches/s on a stream (null: the whole GPU) for producer_sms auto.
  absl::StatusOr<cudaStream_t> ProducerStream(int device,
                                              const std::function<absl::StatusOr<double>(cudaStream_t)>& rate);

  const SlotBackends::Options options_;
  std::mutex placed_mutex_;  // held while placing; calibration below holds its own
  std::map<std::pair<const LoadedDataset*, int>, std::unique_ptr<cuda::DeviceDataset>> placed_;
  std::map<const LoadedDataset*, std::vector<std::unique_ptr<cuda::HotTier>>> hot_tiers_;
  std::mutex producers_mutex_;
  std::map<int, std::unique_ptr<cuda::GreenContext>> producer_contexts_;
};

}  // namespace gnnd
