// The CUDA backend against the CPU reference: byte-identical batches over seeds, fanouts (with -1),
// feature dtypes and widths that are not multiples of 128 bytes, with the CSC in GPU or host memory
// (zero-copy from the registered shared-memory segments), with captured graphs and without, and with a
// hot tier of none, 0 %, part and all of the rows (on one GPU, and split over two), and on a producer's slice of
// 8 SMs (where the gather reads four rows a warp). Skips without a GPU.
#include "kernels/cuda/cuda_sampler.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "common/base/philox.h"
#include "common/batch/seeds.h"
#include "common/dataset/shm_store.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "kernels/cuda/gather.h"
#include "kernels/cuda/green_context.h"
#include "kernels/cuda/hot_tier.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd::cuda {
namespace {

using gnnd::testing::ScratchDir;

// Sets every fifth value of a float32 .npy to 0 in place (weights the weighted rule never draws).
void ZeroEveryFifth(const std::string& path) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  char head[10];
  f.read(head, sizeof(head));
  const size_t data = 10 + static_cast<uint8_t>(head[8]) + 256 * static_cast<uint8_t>(head[9]);  // .npy 1.0
  f.seekg(0, std::ios::end);
  const size_t end = static_cast<size_t>(f.tellg());
  const float zero = 0;
  for (size_t at = data; at + sizeof(float) <= end; at += 5 * sizeof(float)) {
    f.seekp(static_cast<std::streamoff>(at));
    f.write(reinterpret_cast<const char*>(&zero), sizeof(zero));
  }
}

// A generated dataset in shared memory, removed at the end.
class ShmGraph {
 public:
  ShmGraph(const std::string& name, int64_t feature_dim, v1::FeatureDType dtype)
      : name_(absl::StrCat(name, "-", ::getpid())) {
    auto spec = dataset::PresetSpec("tiny", 0.5);
    EXPECT_TRUE(spec.ok());
    spec->feature_dim = feature_dim;
    EXPECT_TRUE(dataset::Generate(
                    *spec, {.seed = 11, .feature_dtype = dtype, .threads = 4, .edge_attrs = true, .node_attrs = true},
                    dir_ / "g")
                    .ok());
    ZeroEveryFifth(dir_ / "g/edge.edge_weight.npy");
    auto source = DatasetDir::Open(dir_ / "g");
    EXPECT_TRUE(source.ok());
    auto shm = ShmDataset::Load(name_, *source, {});
    EXPECT_TRUE(shm.ok()) << shm.status();
    shm_ = *std::move(shm);
    graph_ = {shm_->manifest(), shm_->arrays(), shm_->schema()};
  }
  ~ShmGraph() {
    shm_.reset();
    EXPECT_TRUE(ShmDataset::Remove(name_).ok());
  }
  const GraphData& graph() const { return graph_; }

 private:
  ScratchDir dir_;
  std::string name_;
  std::unique_ptr<ShmDataset> shm_;
  GraphData graph_;
};

// A ranking that mixes high and low ids (not the identity, so a wrong rank lookup shows).
std::vector<int64_t> ShuffledOrder(int64_t num_nodes) {
  std::vector<int64_t> order(num_nodes);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [](int64_t a, int64_t b) { return Mix64(a) < Mix64(b); });
  return order;
}

// Sorts fitted from the first batch on, to exactly the furthest keys seen: the first batch outgrows every hop's
// sort (fitted to none), and each batch drawing more edges at a hop than any before outgrows that hop's.
constexpr CudaSamplerOptions kTightSorts{
    .fit_sorts = true, .fit_sorts_after = 0, .fit_sorts_margin = 1, .fit_sorts_slack = 0};

// Every batch of an epoch sampled on the current device through `device_graph` equals CpuSampler's.
// `weighted`: by the weighted rule over edge_weight. With `redone` the sorts are fitted tight (kTightSorts) and
// a batch that outgrew one is sampled again (counted there), as a session does. On `slice_stream` (a green
// context's) if given, else on a stream of the whole GPU.
void ExpectCpuBatches(const GraphData& graph, const DeviceGraph& device_graph, const std::vector<int32_t>& fanouts,
                      uint64_t seed, bool graphs, const std::string& what, bool weighted = false, int* redone = nullptr,
                      cudaStream_t slice_stream = nullptr) {
  const int64_t batch_size = 200;
  // As a homogeneous session samples: the one type and one relation, in the API 1.0 layout, then the edges'
  // ids and both attributes (edge_weight, edge_feat).
  SamplingSpec spec = SamplingSpec::OneRelation(batch_size, fanouts);
  spec.edge_ids = true;
  spec.edge_attrs = {{0, 1}};
  if (weighted) spec.edge_weights = {0};
  ASSERT_TRUE(CheckSamplingSpec(spec, graph.schema).ok());
  auto capacity = ComputeBatchCapacity(spec, graph.schema, graph.MaxInDegrees());
  ASSERT_TRUE(capacity.ok());
  const BatchLayout layout = BatchLayout::Make(*capacity, spec, graph.schema);
  const BatchSchema schema = BatchSchemaOf(layout, graph.schema);
  ASSERT_GE(schema.ArrayNamed("edge_feat"), 0);
  CudaSamplerOptions options = redone != nullptr ? kTightSorts : CudaSamplerOptions{};
  options.use_graphs = graphs;
  auto gpu = CudaSampler::Create(device_graph, spec, seed, layout, options);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  CpuSampler cpu(graph, spec, seed);
  std::vector<std::byte> expected(layout.total_bytes), got(layout.total_bytes);
  void* device_batch = nullptr;
  int64_t* device_seeds = nullptr;
  cudaStream_t stream = slice_stream;
  if (slice_stream == nullptr) ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_batch, layout.total_bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_seeds, batch_size * sizeof(int64_t)), cudaSuccess);
  const auto* train = static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]);
  EpochSeeds seeds(std::span<const int64_t>(train, graph.manifest.num_train()),
                   {.seed = seed, .batch_size = batch_size}, 3);
  for (int64_t step = 0; step < seeds.num_steps(); ++step) {
    const auto batch = seeds.batch(step);
    const BatchView want = BatchView::At(expected.data(), layout);
    cpu.Sample(3, seeds.batch_index(step), batch, want);
    ASSERT_EQ(cudaMemset(device_batch, 0xab, layout.total_bytes), cudaSuccess);  // poison: every byte must be written
    ASSERT_EQ(cudaMemcpy(device_seeds, batch.data(), batch.size_bytes(), cudaMemcpyHostToDevice), cudaSuccess);
    for (bool again = false;; again = true) {
      absl::Status s = (*gpu)->Sample(3, seeds.batch_index(step), {device_seeds, batch.size()}, device_batch, stream);
      ASSERT_TRUE(s.ok()) << s;
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      auto outgrown = (*gpu)->Outgrown(device_batch);
      ASSERT_TRUE(outgrown.ok()) << outgrown.status();
      if (!*outgrown) break;
      ASSERT_FALSE(again) << what << ", step " << step << ": outgrew the sorts refitted to it";
      ASSERT_NE(redone, nullptr) << what << ": outgrew a sort that was not fitted";
      ++*redone;
    }
    ASSERT_EQ(cudaMemcpy(got.data(), device_batch, layout.total_bytes, cudaMemcpyDeviceToHost), cudaSuccess)
        << cudaGetErrorString(cudaGetLastError());
    const std::vector<int64_t> counts = BatchCountsOf(want, layout);
    ASSERT_EQ(BatchCountsOf(BatchView::At(got.data(), layout), layout), counts) << what << ", step " << step;
    ASSERT_EQ(gnnd::testing::SchemaContents(schema, counts, got.data()),
              gnnd::testing::SchemaContents(schema, counts, expected.data()))
        << what << ", seed " << seed << " step " << step;
  }
  cudaFree(device_batch);
  cudaFree(device_seeds);
  if (slice_stream == nullptr) cudaStreamDestroy(stream);
}

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
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ShmGraph shm(absl::StrCat("gpu-test-", c.name), c.feature_dim, c.dtype);
  const GraphData& graph = shm.graph();
  auto device = DeviceDataset::Create(graph, c.placement);
  ASSERT_TRUE(device.ok()) << device.status();
  // Seed 0 replays captured graphs (the production path), seed 77 launches each kernel.
  for (uint64_t seed : {0, 77}) ExpectCpuBatches(graph, (*device)->graph(), c.fanouts, seed, seed == 0, "no hot tier");
  ExpectCpuBatches(graph, (*device)->graph(), c.fanouts, 3, true, "weighted", /*weighted=*/true);
  // Batches that outgrow their fitted sorts are whole and leave the node table empty: each, sampled again, and
  // every batch after it equal the CPU's (with graphs, recaptured at each refit, and without).
  for (bool graphs : {true, false}) {
    int redone = 0;
    ExpectCpuBatches(graph, (*device)->graph(), c.fanouts, 13, graphs, "sorts fitted tight", false, &redone);
    EXPECT_GT(redone, 0) << "the first batch outgrows sorts fitted to no batch";
  }
  const std::vector<int64_t> order = ShuffledOrder(graph.num_nodes());
  // On a producer's slice of 8 SMs the gather reads four rows a warp (rows of 16-byte multiples), hot or not.
  auto slice = GreenContext::Create(0, 8);
  ASSERT_TRUE(slice.ok()) << slice.status();
  ASSERT_EQ(StreamSms((*slice)->stream()).value_or(-1), (*slice)->sms());
  ASSERT_EQ(RowsPerWarpOn((*slice)->stream()), kRowsPerWarp);
  cudaStream_t whole_gpu;
  ASSERT_EQ(cudaStreamCreate(&whole_gpu), cudaSuccess);
  EXPECT_EQ(StreamSms(whole_gpu).value_or(-1), 0);
  EXPECT_EQ(RowsPerWarpOn(whole_gpu), 1);
  cudaStreamDestroy(whole_gpu);
  {
    auto tier =
        HotTier::Create((*device)->graph(), order, graph.num_nodes() / 3, {0}, c.placement != CscPlacement::kDevice);
    ASSERT_TRUE(tier.ok()) << tier.status();
    DeviceGraph cached = (*device)->graph();
    cached.types[0].hot = (*tier)->view(0);
    for (const DeviceGraph& g : {(*device)->graph(), cached}) {
      ExpectCpuBatches(graph, g, c.fanouts, 21, true, "on a slice of 8 SMs", false, nullptr, (*slice)->stream());
    }
  }
  for (double share : {0.0, 0.3, 1.0}) {
    const auto num_hot = static_cast<int64_t>(share * static_cast<double>(graph.num_nodes()));
    // The adjacency too when the CSC is in host memory (as gnnd does).
    auto tier = HotTier::Create((*device)->graph(), order, num_hot, {0}, c.placement != CscPlacement::kDevice);
    ASSERT_TRUE(tier.ok()) << tier.status();
    DeviceGraph cached = (*device)->graph();
    cached.types[0].hot = (*tier)->view(0);
    ExpectCpuBatches(graph, cached, c.fanouts, 5, true, absl::StrCat("hot tier of ", num_hot, " rows"));
    ExpectCpuBatches(graph, cached, c.fanouts, 5, false, absl::StrCat("weighted, hot tier of ", num_hot, " rows"),
                     /*weighted=*/true);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaVsCpu,
    ::testing::Values(Case{"f32_100_device", 100, v1::FEATURE_DTYPE_FLOAT32, {15, 10, 5}, CscPlacement::kDevice},
                      Case{"f32_100_host", 100, v1::FEATURE_DTYPE_FLOAT32, {15, 10, 5}, CscPlacement::kHost},
                      Case{"f32_129_all", 129, v1::FEATURE_DTYPE_FLOAT32, {-1, 3}, CscPlacement::kHost},
                      Case{"f32_353", 353, v1::FEATURE_DTYPE_FLOAT32, {5, -1}, CscPlacement::kDevice},
                      Case{"f16_33", 33, v1::FEATURE_DTYPE_FLOAT16, {4, 4, 4}, CscPlacement::kHost},
                      Case{"f32_64_host_indices", 64, v1::FEATURE_DTYPE_FLOAT32, {10, 5}, CscPlacement::kHostIndices},
                      Case{"bf16_128", 128, v1::FEATURE_DTYPE_BFLOAT16, {25, 10}, CscPlacement::kDevice},
                      Case{"fp8_101", 101, v1::FEATURE_DTYPE_FLOAT8_E4M3FN, {10, 5}, CscPlacement::kHost},
                      Case{"fp8_1024", 1024, v1::FEATURE_DTYPE_FLOAT8_E4M3FN, {15, 10, 5}, CscPlacement::kDevice}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

// Two GPUs with peer access split the hot set (each holds every other rank) and read each other's part.
TEST(HotTierTest, SplitOverTwoGpusIsByteIdentical) {
  int count = 0;
  if (!HaveGpu() || cudaGetDeviceCount(&count) != cudaSuccess || count < 2) {
    GTEST_SKIP() << "fewer than two CUDA devices: two-GPU test skipped";
  }
  if (!EnablePeerAccess({0, 1})) GTEST_SKIP() << "cuda:0 and cuda:1 have no peer access: two-GPU test skipped";
  ShmGraph shm("gpu-test-two", 33, v1::FEATURE_DTYPE_FLOAT16);
  const GraphData& graph = shm.graph();
  for (CscPlacement placement : {CscPlacement::kDevice, CscPlacement::kHost}) {
    std::vector<std::unique_ptr<DeviceDataset>> devices;
    for (int d : {0, 1}) {
      ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
      auto placed = DeviceDataset::Create(graph, placement);
      ASSERT_TRUE(placed.ok()) << placed.status();
      devices.push_back(*std::move(placed));
    }
    const int64_t num_hot = graph.num_nodes() * 3 / 5;
    const bool adjacency = placement == CscPlacement::kHost;
    auto tier = HotTier::Create(devices[0]->graph(), ShuffledOrder(graph.num_nodes()), num_hot, {0, 1}, adjacency);
    ASSERT_TRUE(tier.ok()) << tier.status();
    EXPECT_EQ((*tier)->view(1).num_parts, 2);
    EXPECT_EQ((*tier)->view(1).adjacency != nullptr, adjacency);
    for (int d : {0, 1}) {
      ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
      DeviceGraph cached = devices[d]->graph();
      cached.types[0].hot = (*tier)->view(d);
      ExpectCpuBatches(graph, cached, {15, 10, 5}, 9, true,
                       absl::StrCat("split hot tier, cuda:", d, adjacency ? ", with adjacency" : ""));
    }
  }
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace
}  // namespace gnnd::cuda
