// What every CUDA phase of the sampler shares: the block size, grid sizing, a checked and named kernel
// launch, the CUB temporary buffer, and dispatch from run-time sizes to kernel template arguments (the
// layering of GraphBolt's cuda/common.h and of CUB's dispatch). Host code may include it too.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/base/cuda_check.h"
#include "common/base/status.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd::cuda {

inline constexpr int kThreads = 256;
inline constexpr int kWarp = 32;

// Blocks of `per_block` threads covering `items` (at least one, so a launch is never empty).
inline int Blocks(int64_t items, int per_block = kThreads) {
  return static_cast<int>(std::max<int64_t>(1, (items + per_block - 1) / per_block));
}

// For a grid-stride kernel over a device-side count of at most `items`: enough blocks to fill an H100-sized
// GPU once (8 blocks of kThreads on each of 128 SMs), fewer when `items` needs fewer.
inline int StrideBlocks(int64_t items) { return std::min(Blocks(items), 1024); }

// Launches `kernel` on `stream` and returns (from the enclosing function) a status naming the kernel if
// the launch failed.
#define GNND_LAUNCH(kernel, blocks, threads, shared_bytes, stream, ...)     \
  do {                                                                      \
    kernel<<<(blocks), (threads), (shared_bytes), (stream)>>>(__VA_ARGS__); \
    GNND_CUDA(cudaGetLastError(), "launch " #kernel);                       \
  } while (0)

// One temporary buffer for every CUB call of a sampler, sized up front for the largest of them.
struct CubTemp {
  void* data = nullptr;
  size_t bytes = 0;

  // Grows `bytes` to what `call(nullptr, bytes&)` (a CUB call's sizing form) needs.
  template <typename Call>
  absl::Status Reserve(absl::string_view what, Call&& call) {
    size_t need = 0;
    GNND_CUDA(call(nullptr, need), what);
    bytes = std::max(bytes, need);
    return absl::OkStatus();
  }
  // Runs `call(data, bytes&)`: a CUB call on this buffer.
  template <typename Call>
  absl::Status Run(absl::string_view what, Call&& call) const {
    size_t size = bytes;
    return CudaStatus(call(data, size), what);
  }
};

// Calls f(Index{}) with the C++ type of the dataset's neighbor ids.
template <typename F>
decltype(auto) DispatchIndex(v1::IndexDType dtype, F&& f) {
  if (dtype == v1::INDEX_DTYPE_INT64) return f(int64_t{});
  return f(int32_t{});
}

// Calls f(Word{}) with the widest load of at most kMaxBytes (16, 8, 4, 2 or 1) that divides `row_bytes`.
template <size_t kMaxBytes, typename F>
decltype(auto) DispatchWord(size_t row_bytes, F&& f) {
  if constexpr (kMaxBytes >= 16) {
    if (row_bytes % 16 == 0) return f(uint4{});
  }
  if constexpr (kMaxBytes >= 8) {
    if (row_bytes % 8 == 0) return f(uint2{});
  }
  if (row_bytes % 4 == 0) return f(uint32_t{});
  if (row_bytes % 2 == 0) return f(uint16_t{});
  return f(uint8_t{});  // float8 rows of an odd width
}

}  // namespace gnnd::cuda
