#include "tools/gnnctl/sample.h"

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/base/text_proto.h"
#include "common/base/vocabulary.h"
#include "common/batch/batch.h"
#include "common/batch/layout.h"
#include "common/batch/seeds.h"
#include "common/dataset/dataset.h"
#include "common/wire/open_request.h"
#include "kernels/cpu/batch_maker.h"
#include "tools/dataset/npz.h"
#if GNND_WITH_CUDA
#include "common/base/cuda_check.h"
#include "kernels/cuda/batch_maker.h"
#endif

namespace gnnd::gnnctl {

namespace {

// The same batch through the CUDA backend, copied back into `host` (laid out as the session's slot).
absl::Status SampleOnGpu(const SampleRequest& request, const SessionShape& shape, const GraphData& graph,
                         const EpochSeeds& seeds, void* host) {
#if GNND_WITH_CUDA
  GNND_CUDA(cudaSetDevice(shape.device.cuda), absl::StrCat("select ", request.device));
  GNND_ASSIGN_OR_RETURN(auto placed, cuda::DeviceDataset::Create(graph, cuda::CscPlacement::kDevice));
  const BatchLayout& layout = shape.layout;
  GNND_ASSIGN_OR_RETURN(auto maker, cuda::CudaBatchMaker::Create(
                                        {&graph, shape.sampling, std::nullopt, request.seed, layout}, placed->graph()));
  const SeedBatch batch_seeds = seeds.at(request.step);
  void* out = nullptr;
  int64_t* device_seeds = nullptr;  // the ids, then their times (if any)
  GNND_CUDA(cudaMalloc(&out, layout.total_bytes), "allocate the batch");
  absl::Cleanup free_out = [out] { cudaFree(out); };
  GNND_CUDA(cudaMalloc(&device_seeds, std::max<size_t>(2 * batch_seeds.ids.size_bytes(), 1)), "allocate the seeds");
  absl::Cleanup free_seeds = [device_seeds] { cudaFree(device_seeds); };
  GNND_CUDA(cudaMemcpy(device_seeds, batch_seeds.ids.data(), batch_seeds.ids.size_bytes(), cudaMemcpyHostToDevice),
            "copy seeds");
  int64_t* device_times = device_seeds + batch_seeds.ids.size();
  GNND_CUDA(cudaMemcpy(device_times, batch_seeds.times.data(), batch_seeds.times.size_bytes(), cudaMemcpyHostToDevice),
            "copy seed times");
  const SeedBatch on_device{{device_seeds, batch_seeds.ids.size()}, {device_times, batch_seeds.times.size()}};
  GNND_RETURN_IF_ERROR(maker->Sample(request.epoch, seeds.batch_index(request.step), batch_seeds, on_device,
                                     static_cast<std::byte*>(out), /*stream=*/nullptr));
  GNND_RETURN_IF_ERROR(maker->Filled().status());
  GNND_CUDA(cudaMemcpy(host, out, layout.total_bytes, cudaMemcpyDeviceToHost), "copy the batch back");
  return absl::OkStatus();
#else
  (void)shape, (void)graph, (void)seeds, (void)host;
  return absl::UnimplementedError(absl::StrCat("device = '", request.device, "': this gnnctl was built without CUDA"));
#endif
}

// The open request a trainer would send for this batch's session.
absl::StatusOr<v1::OpenSession> OpenRequest(const SampleRequest& request) {
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
  open.set_node_type(request.node_type);
  if (!request.edge_split.empty()) {
    open.set_split("");
    open.set_edge_split(request.edge_split);
    open.set_edge_type(request.edge_type);
  }
  open.set_neg_sampling(request.neg_sampling);  // refused without an edge split
  open.set_neg_amount(request.neg_amount);
  open.set_strict_negatives(request.strict);
  open.set_exclude(request.exclude);
  if (request.labor) {
    v1::LaborDraw& labor = *open.mutable_draw()->mutable_labor();
    labor.set_layer_dependency(request.layer_dependency);
    labor.set_batch_dependency(request.batch_dependency);
  } else {  // refused without --labor, naming them
    open.set_layer_dependency(request.layer_dependency);
    open.set_batch_dependency(request.batch_dependency);
  }
  GNND_RETURN_IF_ERROR(SetTextFields(request.open_fields, "--open_fields", &open));
  return open;
}

}  // namespace

absl::StatusOr<std::string> SampleToNpz(const SampleRequest& request, const std::string& out_npz) {
  GNND_ASSIGN_OR_RETURN(DatasetDir dataset, DatasetDir::Open(request.dataset_dir));
  GNND_RETURN_IF_ERROR(RequireWhole(dataset.schema(), request.dataset_dir));
  GNND_RETURN_IF_ERROR(dataset.Validate(DefaultThreads()));
  const v1::DatasetManifest& m = dataset.manifest();
  const GraphData graph{m, dataset.arrays(), dataset.schema()};
  // Checked as gnnd checks a session's request, with room for one slot of any size.
  GNND_ASSIGN_OR_RETURN(const v1::OpenSession open, OpenRequest(request));
  GNND_ASSIGN_OR_RETURN(
      const SessionShape shape,
      CheckOpenRequest(open, graph, {graph.MaxInDegrees()}, {.default_slots = 1, .max_session_bytes = UINT64_MAX}));
  if (shape.link) return SampleLinkToNpz(request, graph, shape, out_npz);
  std::vector<int64_t> made;
  // --open_fields may give seed_ids (with --split "") and their times.
  const std::span<const int64_t> split = SplitSeeds(open, shape, graph, made);
  EpochSeeds seeds(split, shape.schedule, request.epoch, SplitSeedTimes(open, shape, graph, split.size()));
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of split '",
                                              request.split, "' has ", seeds.num_steps(), " steps for this rank)"));
  }
  // The session's slot, its arrays named as the batch schema names them.
  const DatasetSchema& schema = graph.schema;
  std::vector<std::byte> buffer(shape.layout.total_bytes);
  const BatchView view = BatchView::At(buffer.data(), shape.layout);
  if (shape.device.is_cuda()) {
    GNND_RETURN_IF_ERROR(SampleOnGpu(request, shape, graph, seeds, buffer.data()));
  } else {
    GNND_ASSIGN_OR_RETURN(std::vector<BatchMaker> maker,
                          BatchMaker::Create({&graph, shape.sampling, std::nullopt, request.seed, shape.layout}));
    LinkBatch no_pairs;
    GNND_RETURN_IF_ERROR(
        maker[0].Sample(request.epoch, seeds.batch_index(request.step), seeds.at(request.step), view, true, no_pairs));
  }
  const std::vector<int64_t> counts = BatchCountsOf(view, shape.layout);
  std::vector<dataset::NpzArray> arrays;
  for (const BatchArraySchema& a : shape.schema.arrays) {
    std::vector<int64_t> array_shape = {counts[a.count]};
    array_shape.insert(array_shape.end(), a.row_shape.begin(), a.row_shape.end());
    arrays.push_back({a.name, a.dtype, array_shape, buffer.data() + a.offset});
  }
  GNND_RETURN_IF_ERROR(dataset::WriteNpz(out_npz, arrays));
  int64_t nodes = 0, edges = 0;
  for (size_t t = 0; t < schema.node_types.size(); ++t) nodes += view.num_nodes(static_cast<int>(t));
  for (size_t r = 0; r < schema.relations.size(); ++r) edges += view.num_edges(static_cast<int>(r));
  const int64_t batch_seeds = static_cast<int64_t>(seeds.batch(request.step).size());
  if (shape.layout.homogeneous) {
    return absl::StrFormat("%s: step %d of %d, %d seeds, %d nodes, %d edges", out_npz, request.step, seeds.num_steps(),
                           batch_seeds, nodes, edges);
  }
  return absl::StrFormat("%s: step %d of %d, %d '%s' seeds, %d nodes, %d edges in all", out_npz, request.step,
                         seeds.num_steps(), batch_seeds, schema.node_types[shape.seed_type].name, nodes, edges);
}

}  // namespace gnnd::gnnctl
