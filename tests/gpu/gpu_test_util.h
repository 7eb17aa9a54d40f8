// Helpers of the GPU tests: device arrays copied back to the host for comparison with the CPU backend.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace gnnd::cuda::test_util {

// `count` elements of a device array (none for a negative count), the copy checked.
template <typename T>
std::vector<T> Download(const T* device, int64_t count) {
  std::vector<T> host(std::max<int64_t>(count, 0));
  EXPECT_EQ(cudaMemcpy(host.data(), device, sizeof(T) * host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

}  // namespace gnnd::cuda::test_util
