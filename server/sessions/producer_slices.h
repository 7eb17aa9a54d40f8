// The slices of one GPU's SMs that its producers run in under producer_sms auto (with CUDA MPS): green
// contexts of 8, 16, 32, ... SMs and then the whole GPU, each made on first use. Every session on the GPU
// runs on the current slice. It starts on the smallest, so a compute-bound trainer keeps nearly every SM; it
// moves as the sessions' governors ask (slice_governor.h): up while a trainer waits for its producer, back
// down for good when a larger slice did not make the batches faster, down when a session's producer idles
// most of the time and no other found the slice busy lately. When the last session leaves, the next starts on the
// smallest again. Moves are logged. Thread-safe.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/green_context.h"
#include "server/sessions/slice_governor.h"

namespace gnnd {

class ProducerSlices {
 public:
  struct Slice {
    int level = 0;
    cudaStream_t stream = nullptr;  // null: the whole GPU (the session's own stream)
  };

  static absl::StatusOr<std::shared_ptr<ProducerSlices>> Create(int device);

  // A session (a key) joins: its producer runs on the returned slice. Leave before its graphs go.
  Slice Join(const void* session);
  void Leave(const void* session);
  int smallest_sms() const { return sizes_[0]; }  // set at Create
  // The session's governor said `move` (kNone: no window ended) while on level `from`. Returns the slice
  // the GPU's sessions run on now.
  Slice Follow(const void* session, int from, SliceGovernor::Move move);

 private:
  explicit ProducerSlices(int levels) : levels_(levels) {}
  Slice At(int level) const;                  // holds mutex_
  void Log(int from, const char* why) const;  // holds mutex_

  int device_ = 0;
  int total_sms_ = 0;
  std::vector<int> sizes_;  // the SMs of each level, the last the whole GPU

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<cuda::GreenContext>> contexts_;  // per level below the last, made on first use
  SliceLevels levels_;
};

}  // namespace gnnd
