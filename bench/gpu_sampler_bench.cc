// CUDA backend timing: whole batches (sampling + unique/relabel + feature gather + labels) on one
// stream, timed with CUDA events, for the CSC in GPU memory and in registered host memory (zero-copy).
//   gpu_sampler_bench --dataset DIR [--batch_size 1024] [--fanouts 15,10,5] [--batches 50]
// The dataset is loaded into shared memory first, as gnnd does. Prints a markdown table.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/seeds.h"
#include "common/shm_store.h"
#include "kernels/cuda/cuda_sampler.h"

ABSL_FLAG(std::string, dataset, "", "dataset directory");
ABSL_FLAG(int64_t, batch_size, 1024, "seeds per batch");
ABSL_FLAG(std::vector<std::string>, fanouts, std::vector<std::string>({"15", "10", "5"}), "fanouts");
ABSL_FLAG(int, batches, 50, "timed batches per configuration (after 5 warm-up batches)");

namespace gnnd::cuda {
namespace {

#define CHECK_CUDA(call)                                              \
  do {                                                                \
    if (cudaError_t e = (call); e != cudaSuccess) {                   \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

int Run() {
  auto dir = DatasetDir::Open(absl::GetFlag(FLAGS_dataset));
  if (!dir.ok()) return std::fprintf(stderr, "%s\n", std::string(dir.status().message()).c_str()), 2;
  const std::string name = absl::StrCat("bench-", ::getpid());
  auto shm = ShmDataset::Load(name, *dir, {});
  if (!shm.ok()) return std::fprintf(stderr, "%s\n", std::string(shm.status().message()).c_str()), 2;
  const GraphData graph{(*shm)->manifest(), (*shm)->arrays()};
  std::vector<int32_t> fanouts;
  for (const std::string& f : absl::GetFlag(FLAGS_fanouts)) fanouts.push_back(std::stoi(f));
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  auto capacity =
      ComputeBatchCapacity({batch_size, fanouts}, graph.num_nodes(), graph.manifest.num_edges(), graph.MaxInDegree());
  const auto* train = static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]);
  EpochSeeds seeds(std::span<const int64_t>(train, graph.manifest.num_train()), {.seed = 1, .batch_size = batch_size},
                   0);
  int64_t* device_seeds = nullptr;
  CHECK_CUDA(cudaMalloc(&device_seeds, sizeof(int64_t) * batch_size));
  std::printf(
      "| CSC in | median ms/batch | p10–p90 | nodes/batch | edges/batch | feature bytes / batch time (GB/s) "
      "|\n|---|---|---|---|---|---|\n");
  const bool narrow_variant = FeatureRowBytes(graph.manifest) % 16 != 0;  // compare the two gathers
  for (int variant = 0; variant < (narrow_variant ? 3 : 2); ++variant) {
    const CscPlacement placement = variant == 1 ? CscPlacement::kHost : CscPlacement::kDevice;
    auto device = DeviceDataset::Create(graph, placement);
    if (!device.ok()) return std::fprintf(stderr, "%s\n", std::string(device.status().message()).c_str()), 2;
    auto sampler = CudaSampler::Create((*device)->graph(), fanouts, 1, *capacity);
    if (!sampler.ok()) return std::fprintf(stderr, "%s\n", std::string(sampler.status().message()).c_str()), 2;
    (*sampler)->set_shifted_gather(variant != 2);
    const BatchLayout& layout = (*sampler)->layout();
    void* out = nullptr;
    CHECK_CUDA(cudaMalloc(&out, layout.total_bytes));
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    std::vector<double> ms;
    double nodes = 0, edges = 0;
    const int total = absl::GetFlag(FLAGS_batches) + 5;
    for (int i = 0; i < total; ++i) {
      const int64_t step = i % seeds.num_steps();
      const auto batch = seeds.batch(step);
      CHECK_CUDA(cudaMemcpy(device_seeds, batch.data(), batch.size_bytes(), cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaEventRecord(start, stream));
      if (!(*sampler)
               ->Sample(0, seeds.batch_index(step), {device_seeds, batch.size()}, BatchView::At(out, layout), stream)
               .ok())
        return 1;
      CHECK_CUDA(cudaEventRecord(stop, stream));
      CHECK_CUDA(cudaEventSynchronize(stop));
      float elapsed = 0;
      CHECK_CUDA(cudaEventElapsedTime(&elapsed, start, stop));
      if (i < 5) continue;
      ms.push_back(elapsed);
      int32_t counts[2 * kMaxHops + 1];
      CHECK_CUDA(cudaMemcpy(counts, static_cast<char*>(out) + layout.num_nodes_per_hop, 4 * (fanouts.size() + 1),
                            cudaMemcpyDeviceToHost));
      for (size_t h = 0; h <= fanouts.size(); ++h) nodes += counts[h];
      CHECK_CUDA(cudaMemcpy(counts, static_cast<char*>(out) + layout.num_edges_per_hop, 4 * fanouts.size(),
                            cudaMemcpyDeviceToHost));
      for (size_t h = 0; h < fanouts.size(); ++h) edges += counts[h];
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    const double per_batch_nodes = nodes / ms.size();
    std::printf("| %s | %.3f | %.3f–%.3f | %.0f | %.0f | %.1f |\n",
                variant == 2                         ? "GPU memory, narrow-load gather"
                : placement == CscPlacement::kDevice ? "GPU memory"
                                                     : "host (zero-copy)",
                median, sorted[sorted.size() / 10], sorted[sorted.size() * 9 / 10], per_batch_nodes, edges / ms.size(),
                per_batch_nodes * layout.feature_row_bytes / (median * 1e6));
    cudaFree(out);
  }
  (void)ShmDataset::Remove(name);
  return 0;
}

}  // namespace
}  // namespace gnnd::cuda

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gnnd::cuda::Run();
}
