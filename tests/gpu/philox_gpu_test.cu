// The Philox header compiled by nvcc and run on the GPU gives the host's words: the shared-RNG half
// of the CPU/GPU bit-identity guarantee. Skips where there is no GPU.
#include <cuda_runtime.h>

#include <vector>

#include "common/base/philox.h"
#include "gtest/gtest.h"

namespace gnnd {
namespace {

__global__ void Words(uint64_t seed, uint32_t stream, Philox4x32* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = RandomWords(seed, stream, static_cast<uint64_t>(i) * 0x9e3779b97ull, i & 7);
}

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(PhiloxGpu, DeviceMatchesHost) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  constexpr int kN = 1 << 16;
  Philox4x32* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, kN * sizeof(Philox4x32)), cudaSuccess);
  Words<<<kN / 256, 256>>>(0x123456789abcdefull, 3, device, kN);
  std::vector<Philox4x32> got(kN);
  ASSERT_EQ(cudaMemcpy(got.data(), device, kN * sizeof(Philox4x32), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(device);
  for (int i = 0; i < kN; ++i) {
    const Philox4x32 want = RandomWords(0x123456789abcdefull, 3, static_cast<uint64_t>(i) * 0x9e3779b97ull, i & 7);
    for (int w = 0; w < 4; ++w) ASSERT_EQ(got[i].v[w], want.v[w]) << "index " << i;
  }
}

}  // namespace
}  // namespace gnnd
