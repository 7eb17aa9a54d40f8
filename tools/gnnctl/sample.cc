#include "tools/gnnctl/sample.h"

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/batch.h"
#include "common/dataset.h"
#include "common/parallel.h"
#include "common/seeds.h"
#include "common/status.h"
#include "common/vocabulary.h"
#include "kernels/cpu/sampler.h"
#include "tools/dataset/npz.h"
#if GNND_WITH_CUDA
#include "common/cuda_check.h"
#include "kernels/cuda/cuda_sampler.h"
#endif

namespace gnnd::gnnctl {

namespace {

// The same batch through the CUDA backend, copied back into `buffer` (which has the same layout).
absl::Status SampleOnGpu(const SampleRequest& request, int device, const GraphData& graph,
                         const BatchCapacity& capacity, const EpochSeeds& seeds, BatchBuffer& buffer) {
#if GNND_WITH_CUDA
  GNND_CUDA(cudaSetDevice(device), absl::StrCat("select ", request.device));
  GNND_ASSIGN_OR_RETURN(auto placed, cuda::DeviceDataset::Create(graph, cuda::CscPlacement::kDevice));
  GNND_ASSIGN_OR_RETURN(auto sampler,
                        cuda::CudaSampler::Create(placed->graph(), request.fanouts, request.seed, capacity));
  const BatchLayout& layout = sampler->layout();
  const std::span<const int64_t> batch_seeds = seeds.batch(request.step);
  void* out = nullptr;
  int64_t* device_seeds = nullptr;
  GNND_CUDA(cudaMalloc(&out, layout.total_bytes), "allocate the batch");
  absl::Cleanup free_out = [out] { cudaFree(out); };
  GNND_CUDA(cudaMalloc(&device_seeds, std::max<size_t>(batch_seeds.size_bytes(), 1)), "allocate the seeds");
  absl::Cleanup free_seeds = [device_seeds] { cudaFree(device_seeds); };
  GNND_CUDA(cudaMemcpy(device_seeds, batch_seeds.data(), batch_seeds.size_bytes(), cudaMemcpyHostToDevice),
            "copy seeds");
  GNND_RETURN_IF_ERROR(sampler->Sample(request.epoch, seeds.batch_index(request.step),
                                       {device_seeds, batch_seeds.size()}, BatchView::At(out, layout), nullptr));
  GNND_CUDA(cudaMemcpy(buffer.view().node_ids, out, layout.total_bytes, cudaMemcpyDeviceToHost), "copy the batch back");
  return absl::OkStatus();
#else
  (void)device, (void)graph, (void)capacity, (void)seeds, (void)buffer;
  return absl::UnimplementedError(absl::StrCat("device = '", request.device, "': this gnnctl was built without CUDA"));
#endif
}

}  // namespace

absl::StatusOr<std::string> SampleToNpz(const SampleRequest& request, const std::string& out_npz) {
  const SamplingSpec sampling{request.batch_size, request.fanouts};
  GNND_RETURN_IF_ERROR(CheckSamplingSpec(sampling));
  const SeedScheduleSpec schedule{request.seed,       request.shuffle, request.drop_last,
                                  request.batch_size, request.rank,    request.world_size};
  GNND_RETURN_IF_ERROR(CheckSeedScheduleSpec(schedule));
  GNND_ASSIGN_OR_RETURN(ArrayId split, SplitArrayId(request.split));
  GNND_ASSIGN_OR_RETURN(const Device device, ParseDevice(request.device, "device"));
  GNND_ASSIGN_OR_RETURN(DatasetDir dataset, DatasetDir::Open(request.dataset_dir));
  GNND_RETURN_IF_ERROR(dataset.Validate(DefaultThreads()));
  const v1::DatasetManifest& m = dataset.manifest();
  const GraphData graph{m, dataset.arrays()};

  const auto* split_ids = static_cast<const int64_t*>(graph.arrays[split]);
  const int64_t split_size = ArrayShape(m, split)[0];
  EpochSeeds seeds(std::span<const int64_t>(split_ids, split_size), schedule, request.epoch);
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of split '",
                                              request.split, "' has ", seeds.num_steps(), " steps for this rank)"));
  }
  GNND_ASSIGN_OR_RETURN(BatchCapacity capacity,
                        ComputeBatchCapacity(sampling, m.num_nodes(), m.num_edges(), graph.MaxInDegree()));
  BatchBuffer buffer(BatchLayout::Make(capacity, static_cast<int>(request.fanouts.size()), FeatureRowBytes(m)));
  BatchView batch = buffer.view();
  if (device.is_cuda()) {
    GNND_RETURN_IF_ERROR(SampleOnGpu(request, device.cuda, graph, capacity, seeds, buffer));
  } else {
    CpuSampler sampler(graph, request.fanouts, request.seed);
    sampler.Sample(request.epoch, seeds.batch_index(request.step), seeds.batch(request.step), batch);
  }

  const int64_t nodes = batch.num_nodes(), edges = batch.num_edges();
  std::vector<dataset::NpzArray> arrays;
  for (const BatchArray& a :
       BatchArrays(batch, nodes, edges, batch.num_seeds(), m.feature_dim(), ArrayDType(m, ArrayId::kFeatures))) {
    arrays.push_back({a.name, a.dtype, {a.shape, a.shape + a.ndim}, a.data});
  }
  GNND_RETURN_IF_ERROR(dataset::WriteNpz(out_npz, arrays));
  return absl::StrFormat("%s: step %d of %d, %d seeds, %d nodes, %d edges", out_npz, request.step, seeds.num_steps(),
                         batch.num_seeds(), nodes, edges);
}

}  // namespace gnnd::gnnctl
