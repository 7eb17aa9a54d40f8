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
#include "common/batch/typed_batch.h"
#include "common/dataset/dataset.h"
#include "kernels/cpu/sampler.h"
#include "kernels/cpu/typed_sampler.h"
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

// A typed dataset's batch, on the CPU backend, its arrays named as the typed batch schema names them.
absl::StatusOr<std::string> SampleTypedToNpz(const SampleRequest& request, const GraphData& graph,
                                             const std::string& out_npz) {
  const DatasetSchema& schema = graph.schema;
  if (request.device != "cpu" && !request.device.empty()) {
    return absl::UnimplementedError(
        absl::StrCat("device = '", request.device, "': typed datasets are sampled on the CPU backend for now"));
  }
  int seed_type = schema.NodeTypeNamed(request.node_type);
  if (request.node_type.empty()) {  // the one type with splits
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      if (schema.node_types[t].labels < 0) continue;
      if (seed_type >= 0) return absl::InvalidArgumentError("node_type: several types have splits; name one");
      seed_type = static_cast<int>(t);
    }
  }
  if (seed_type < 0 || schema.node_types[seed_type].labels < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("node_type = ", Quoted(request.node_type), " (a node type of the dataset with splits)"));
  }
  const TypedSamplingSpec spec{request.batch_size, seed_type,
                               std::vector<std::vector<int32_t>>(schema.relations.size(), request.fanouts)};
  GNND_RETURN_IF_ERROR(CheckTypedSamplingSpec(spec, schema));
  const SeedScheduleSpec schedule{request.seed,       request.shuffle, request.drop_last,
                                  request.batch_size, request.rank,    request.world_size};
  GNND_RETURN_IF_ERROR(CheckSeedScheduleSpec(schedule));
  GNND_ASSIGN_OR_RETURN(const ArrayId split_id, SplitArrayId(request.split));
  const int split = static_cast<int>(split_id) - static_cast<int>(kSplits[0]);  // kSplitNames' position
  const NodeTypeSchema& type = schema.node_types[seed_type];
  const std::span<const int64_t> ids(static_cast<const int64_t*>(graph.arrays.data[type.splits[split]]),
                                     static_cast<size_t>(type.split_sizes[split]));
  EpochSeeds seeds(ids, schedule, request.epoch);
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of split '",
                                              request.split, "' has ", seeds.num_steps(), " steps for this rank)"));
  }
  GNND_ASSIGN_OR_RETURN(const TypedCapacity capacity, ComputeTypedCapacity(spec, schema, graph.MaxInDegrees()));
  const TypedBatchLayout layout = TypedBatchLayout::Make(capacity, spec, schema);
  std::vector<std::byte> buffer(layout.total_bytes);
  const TypedBatchView view = TypedBatchView::At(buffer.data(), layout);
  TypedCpuSampler(graph, spec, request.seed)
      .Sample(request.epoch, seeds.batch_index(request.step), seeds.batch(request.step), view);
  const BatchSchema batch = TypedBatchSchema(layout, schema);
  const std::vector<int64_t> counts = TypedBatchCounts(view, seed_type);
  std::vector<dataset::NpzArray> arrays;
  for (const BatchArraySchema& a : batch.arrays) {
    std::vector<int64_t> shape = {counts[a.count]};
    shape.insert(shape.end(), a.row_shape.begin(), a.row_shape.end());
    arrays.push_back({a.name, a.dtype, shape, buffer.data() + a.offset});
  }
  GNND_RETURN_IF_ERROR(dataset::WriteNpz(out_npz, arrays));
  int64_t nodes = 0, edges = 0;
  for (size_t t = 0; t < schema.node_types.size(); ++t) nodes += view.num_nodes(static_cast<int>(t));
  for (size_t r = 0; r < schema.relations.size(); ++r) edges += view.num_edges(static_cast<int>(r));
  return absl::StrFormat("%s: step %d of %d, %d '%s' seeds, %d nodes, %d edges in all", out_npz, request.step,
                         seeds.num_steps(), seeds.batch(request.step).size(), type.name, nodes, edges);
}

absl::StatusOr<std::string> SampleToNpz(const SampleRequest& request, const std::string& out_npz) {
  GNND_ASSIGN_OR_RETURN(DatasetDir dataset, DatasetDir::Open(request.dataset_dir));
  GNND_RETURN_IF_ERROR(dataset.Validate(DefaultThreads()));
  const v1::DatasetManifest& m = dataset.manifest();
  const GraphData graph{m, dataset.arrays(), dataset.schema()};
  if (graph.schema.format_version != 1) return SampleTypedToNpz(request, graph, out_npz);
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
