// A green context: a slice of a GPU's SMs for gnnd's producer, so sampling and gathering leave the rest
// of the GPU to the trainer (under MPS the two then run side by side). Driver entry points are fetched
// through the runtime (cudaGetDriverEntryPointByVersion), so gnnd does not link libcuda and still starts
// on machines without a GPU.
#pragma once

#include <cuda_runtime.h>

#include <memory>

#include "absl/status/statusor.h"

namespace gnnd::cuda {

class GreenContext {
 public:
  // At least `sms` SMs of `device` (rounded up to the hardware's granularity).
  static absl::StatusOr<std::unique_ptr<GreenContext>> Create(int device, int sms);
  ~GreenContext();

  // A non-blocking stream whose work runs on this context's SMs only.
  cudaStream_t stream() const { return stream_; }
  int sms() const { return sms_; }

 private:
  GreenContext() = default;
  void* context_ = nullptr;  // CUgreenCtx
  cudaStream_t stream_ = nullptr;
  int sms_ = 0;
};

// The device's SM count.
absl::StatusOr<int> SmCount(int device);

// The SMs of the green context whose stream `stream` is; 0 for any other stream (it runs on the whole GPU).
absl::StatusOr<int> StreamSms(cudaStream_t stream);

}  // namespace gnnd::cuda
