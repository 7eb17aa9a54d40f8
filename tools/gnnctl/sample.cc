#include "tools/gnnctl/sample.h"

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/batch/batch.h"
#include "common/batch/open_request.h"
#include "common/batch/seeds.h"
#include "common/dataset/dataset.h"
#include "kernels/cpu/sampler.h"
#include "tools/dataset/npz.h"
#if GNND_WITH_CUDA
#include "common/base/cuda_check.h"
#include "kernels/cuda/cuda_sampler.h"
#endif

namespace gnnd::gnnctl {

namespace {

// The same batch through the CUDA backend, copied back into `buffer` (which has the same layout).
absl::Status SampleOnGpu(const SampleRequest& request, const SessionShape& shape, const GraphData& graph,
                         const EpochSeeds& seeds, BatchBuffer& buffer) {
#if GNND_WITH_CUDA
  GNND_CUDA(cudaSetDevice(shape.device.cuda), absl::StrCat("select ", request.device));
  GNND_ASSIGN_OR_RETURN(auto placed, cuda::DeviceDataset::Create(graph, cuda::CscPlacement::kDevice));
  GNND_ASSIGN_OR_RETURN(
      auto sampler, cuda::CudaSampler::Create(placed->graph(), shape.sampling, request.seed, shape.layout.capacity));
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
  (void)shape, (void)graph, (void)seeds, (void)buffer;
  return absl::UnimplementedError(absl::StrCat("device = '", request.device, "': this gnnctl was built without CUDA"));
#endif
}

// The open request a trainer would send for this batch's session.
v1::OpenSession OpenRequest(const SampleRequest& request) {
  v1::OpenSession open;
  open.set_dataset(request.dataset_dir);
  open.set_split(request.split);
  open.set_batch_size(request.batch_size);
  for (int32_t fanout : request.fanouts) open.add_fanouts(fanout);
  open.set_seed(request.seed);
  open.set_epoch(request.epoch);
  open.set_rank(request.rank);
  open.set_world_size(request.world_size);
  open.set_no_shuffle(!request.shuffle);
  open.set_drop_last(request.drop_last);
  open.set_num_slots(1);
  open.set_device(request.device);
  return open;
}

}  // namespace

absl::StatusOr<std::string> SampleToNpz(const SampleRequest& request, const std::string& out_npz) {
  GNND_ASSIGN_OR_RETURN(DatasetDir dataset, DatasetDir::Open(request.dataset_dir));
  GNND_RETURN_IF_ERROR(dataset.Validate(DefaultThreads()));
  const v1::DatasetManifest& m = dataset.manifest();
  const GraphData graph{m, dataset.arrays(), dataset.schema()};
  // Checked as gnnd checks a session's request, with room for one slot of any size.
  GNND_ASSIGN_OR_RETURN(const SessionShape shape,
                        CheckOpenRequest(OpenRequest(request), m, graph.MaxInDegree(),
                                         {.default_slots = 1, .max_session_bytes = UINT64_MAX}));

  const auto* split_ids = static_cast<const int64_t*>(graph.arrays[shape.split]);
  const int64_t split_size = ArrayShape(m, shape.split)[0];
  EpochSeeds seeds(std::span<const int64_t>(split_ids, split_size), shape.schedule, request.epoch);
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of split '",
                                              request.split, "' has ", seeds.num_steps(), " steps for this rank)"));
  }
  BatchBuffer buffer(shape.layout);
  BatchView batch = buffer.view();
  if (shape.device.is_cuda()) {
    GNND_RETURN_IF_ERROR(SampleOnGpu(request, shape, graph, seeds, buffer));
  } else {
    CpuSampler sampler(graph, shape.sampling, request.seed);
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
