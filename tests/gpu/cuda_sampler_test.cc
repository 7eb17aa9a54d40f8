// The CUDA backend against the CPU reference: byte-identical batches over seeds, fanouts (with -1),
// feature dtypes and widths that are not multiples of 128 bytes, with the CSC in GPU or host memory
// (zero-copy from the registered shared-memory segments). Skips without a GPU.
#include "kernels/cuda/cuda_sampler.h"

#include <cuda_runtime.h>

#include <cstring>

#include "common/seeds.h"
#include "common/shm_store.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd::cuda {
namespace {

using gnnd::testing::ScratchDir;

struct Case {
  std::string name;
  int64_t feature_dim;
  v1::FeatureDType dtype;
  std::vector<int32_t> fanouts;
  CscPlacement placement;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }
};

class CudaVsCpu : public ::testing::TestWithParam<Case> {};

TEST_P(CudaVsCpu, BatchesAreByteIdentical) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  const Case& c = GetParam();
  ScratchDir dir;
  auto spec = dataset::PresetSpec("tiny", 0.5);
  ASSERT_TRUE(spec.ok());
  spec->feature_dim = c.feature_dim;
  ASSERT_TRUE(dataset::Generate(*spec, {.seed = 11, .feature_dtype = c.dtype, .threads = 4}, dir / "g").ok());
  auto source = DatasetDir::Open(dir / "g");
  ASSERT_TRUE(source.ok());
  const std::string name = absl::StrCat("gpu-test-", ::getpid(), "-", c.name);
  auto shm = ShmDataset::Load(name, *source, {});
  ASSERT_TRUE(shm.ok()) << shm.status();
  const GraphData graph{(*shm)->manifest(), (*shm)->arrays()};
  auto device = DeviceDataset::Create(graph, c.placement);
  ASSERT_TRUE(device.ok()) << device.status();

  const int64_t batch_size = 200;
  auto capacity =
      ComputeBatchCapacity({batch_size, c.fanouts}, graph.num_nodes(), graph.manifest.num_edges(), graph.MaxInDegree());
  ASSERT_TRUE(capacity.ok());
  for (uint64_t seed : {0, 77}) {
    auto gpu = CudaSampler::Create((*device)->graph(), c.fanouts, seed, *capacity);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    const BatchLayout& layout = (*gpu)->layout();
    CpuSampler cpu(graph, c.fanouts, seed);
    BatchBuffer expected(layout), got(layout);
    void* device_batch = nullptr;
    int64_t* device_seeds = nullptr;
    ASSERT_EQ(cudaMalloc(&device_batch, layout.total_bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&device_seeds, batch_size * sizeof(int64_t)), cudaSuccess);
    const auto* train = static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]);
    EpochSeeds seeds(std::span<const int64_t>(train, graph.manifest.num_train()),
                     {.seed = seed, .batch_size = batch_size}, 3);
    for (int64_t step = 0; step < seeds.num_steps(); ++step) {
      const auto batch = seeds.batch(step);
      cpu.Sample(3, seeds.batch_index(step), batch, expected.view());
      ASSERT_EQ(cudaMemset(device_batch, 0xab, layout.total_bytes), cudaSuccess);  // poison: every byte must be written
      ASSERT_EQ(cudaMemcpy(device_seeds, batch.data(), batch.size_bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      absl::Status s = (*gpu)->Sample(3, seeds.batch_index(step), {device_seeds, batch.size()},
                                      BatchView::At(device_batch, layout), nullptr);
      ASSERT_TRUE(s.ok()) << s;
      ASSERT_EQ(cudaMemcpy(got.view().node_ids, device_batch, layout.total_bytes, cudaMemcpyDeviceToHost), cudaSuccess)
          << cudaGetErrorString(cudaGetLastError());
      ASSERT_EQ(gnnd::testing::BatchContents(got.view(), layout.feature_row_bytes),
                gnnd::testing::BatchContents(expected.view(), layout.feature_row_bytes))
          << "seed " << seed << " step " << step;
    }
    cudaFree(device_batch);
    cudaFree(device_seeds);
  }
  device->reset();
  ASSERT_TRUE(ShmDataset::Remove(name).ok());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaVsCpu,
    ::testing::Values(Case{"f32_100_device", 100, v1::FEATURE_DTYPE_FLOAT32, {15, 10, 5}, CscPlacement::kDevice},
                      Case{"f32_100_host", 100, v1::FEATURE_DTYPE_FLOAT32, {15, 10, 5}, CscPlacement::kHost},
                      Case{"f32_129_all", 129, v1::FEATURE_DTYPE_FLOAT32, {-1, 3}, CscPlacement::kHost},
                      Case{"f32_353", 353, v1::FEATURE_DTYPE_FLOAT32, {5, -1}, CscPlacement::kDevice},
                      Case{"f16_33", 33, v1::FEATURE_DTYPE_FLOAT16, {4, 4, 4}, CscPlacement::kHost},
                      Case{"bf16_128", 128, v1::FEATURE_DTYPE_BFLOAT16, {25, 10}, CscPlacement::kDevice}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace gnnd::cuda
