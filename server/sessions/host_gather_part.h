// The host's part of a GPU session's fills with open.producer "host_gather": the GPU's kernels sample each batch's
// graph into its slot; what the host reads of it (node ids, counts, e_id as CSC positions) is copied into the
// slot's pinned host copy; gnnd's threads gather the batch's rows there (HostRowGather); the copy engines upload
// them into the slot, and rows a GPU hot tier holds are then gathered from it on the GPU. No SM reads a row over
// PCIe. CudaSlots drives it through its slot sampler's two-part fill (slot_sampler.h).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/thread_pool.h"
#include "kernels/cuda/device_dataset.h"
#include "server/sessions/host_row_gather.h"
#include "server/sessions/slot_backend.h"

namespace gnnd {

class HostGatherPart {
 public:
  // For `plan`'s slots on the GPU of `graph` (a homogeneous dataset's hot tier holds the rows `held` marks, or
  // none); the gathers run on `workers`.
  static absl::StatusOr<std::unique_ptr<HostGatherPart>> Create(const SessionPlan& plan, const cuda::DeviceGraph& graph,
                                                                std::shared_ptr<const std::vector<bool>> held,
                                                                std::unique_ptr<TaskRunner> workers);
  ~HostGatherPart();  // waits for gathers in flight (they write the pinned copies freed here)

  // Enqueues on `stream`, after the sampling of `slot` (index `k`, device memory), the copy of its graph's arrays
  // that the gather reads into the host copy of slot k.
  absl::Status CopyGraphOut(int k, const char* slot, cudaStream_t stream);
  // Gathers slot k's rows into its host copy (its graph copied out and complete); `wake` runs once they are.
  void Start(int k, std::function<void()> wake);
  bool Done(int k) const { return done_[k]->load(std::memory_order_acquire); }
  // The wall seconds slot k's last gather took (once Done).
  double seconds(int k) const { return seconds_[k]; }
  // Returns once every gather started has finished (an epoch restarts: its slots' copies are written again).
  void Wait() { gather_->Wait(); }
  // Enqueues on `stream` the rows of slot k's host copy into `slot`, then the tier's rows from GPU memory.
  absl::Status Upload(int k, char* slot, cudaStream_t stream);

 private:
  HostGatherPart() = default;

  BatchLayout layout_;
  const cuda::DeviceGraph* graph_ = nullptr;
  bool tier_ = false;  // type 0's held rows come from the GPU's hot tier
  std::unique_ptr<TaskRunner> workers_;
  std::byte* copies_ = nullptr;  // pinned: a host copy of each slot
  std::vector<std::unique_ptr<std::atomic<bool>>> done_;
  std::vector<double> seconds_;            // per slot, written before its done_ is set
  std::unique_ptr<HostRowGather> gather_;  // after copies_: destroyed (waiting for its gathers) before they go
};

}  // namespace gnnd
