// The slices of one GPU's SMs that its producers run in under producer_sms auto (with CUDA MPS): green
// contexts of 8, 16, 32, ... SMs and then the whole GPU, each made on first use. Every session on the GPU
// runs on the current slice. It starts on the smallest, so a compute-bound trainer keeps nearly every SM; a
// session whose producer the trainer waits for moves the GPU up a slice (SliceGovernor), and back down, for
// good, when the larger one did not make its batches faster. When the last session leaves, the next starts
// on the smallest again. Thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/green_context.h"

namespace gnnd {

class ProducerSlices {
 public:
  struct Slice {
    int level = 0;
    int sms = 0;
    cudaStream_t stream = nullptr;  // null: the whole GPU (the session's own stream)
  };

  static absl::StatusOr<std::shared_ptr<ProducerSlices>> Create(int device);

  // A session joins (its producer runs on the returned slice) or leaves.
  Slice Join();
  void Leave();
  // The slice sessions run on now.
  Slice Current();
  // A session on `from` asks to grow: the GPU moves up a slice if `from` is still current and the ceiling
  // allows (a slice that cannot be made becomes the ceiling). Returns the current slice either way.
  Slice Grow(int from);
  // A session on `from`, which it grew to, found no gain: the GPU moves back below it and stays there (the
  // ceiling) while any session runs.
  Slice Back(int from);

 private:
  ProducerSlices() = default;
  Slice At(int level) const;  // holds mutex_

  int device_ = 0;
  int total_sms_ = 0;
  std::vector<int> sizes_;  // the SMs of each level, the last the whole GPU

  std::mutex mutex_;
  std::vector<std::unique_ptr<cuda::GreenContext>> contexts_;  // per level below the last, made on first use
  int level_ = 0;
  int ceiling_ = 0;  // the highest level sessions may grow to
  int sessions_ = 0;
};

}  // namespace gnnd
