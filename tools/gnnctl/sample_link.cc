// `gnnctl sample --edge-split S`: one link-prediction batch (kernels/cpu/link_stage.h) to an .npz, its
// arrays named as the session's batch schema names them (edge_label_index as PyG's (2, L)).
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status.h"
#include "common/batch/seeds.h"
#include "kernels/cpu/batch_maker.h"
#include "tools/dataset/npz.h"
#include "tools/gnnctl/sample.h"
#if GNND_WITH_CUDA
#include "absl/cleanup/cleanup.h"
#include "common/base/cuda_check.h"
#include "kernels/cuda/batch_maker.h"
#endif

namespace gnnd::gnnctl {
namespace {

// The same link batch through the CUDA backend (kernels/cuda/link_stage.h), its slot copied into `slot`.
absl::Status SampleLinkOnGpu(const SampleRequest& request, const SessionShape& shape, const GraphData& graph,
                             uint64_t batch_index, std::span<const int64_t> input_id, std::vector<std::byte>& slot) {
#if GNND_WITH_CUDA
  GNND_CUDA(cudaSetDevice(shape.device.cuda), absl::StrCat("select ", request.device));
  GNND_ASSIGN_OR_RETURN(auto placed, cuda::DeviceDataset::Create(graph, cuda::CscPlacement::kDevice));
  GNND_ASSIGN_OR_RETURN(
      auto maker, cuda::CudaBatchMaker::Create({&graph, shape.sampling, shape.link->seeds, request.seed, shape.layout},
                                               placed->graph()));
  void* out = nullptr;
  GNND_CUDA(cudaMalloc(&out, slot.size()), "allocate the batch");
  absl::Cleanup free_out = [out] { cudaFree(out); };
  GNND_RETURN_IF_ERROR(
      maker->Sample(request.epoch, batch_index, {input_id, {}}, {}, static_cast<std::byte*>(out), /*stream=*/nullptr));
  GNND_CUDA(cudaMemcpy(slot.data(), out, slot.size(), cudaMemcpyDeviceToHost), "copy the batch back");
  return maker->Filled().status();
#else
  (void)shape, (void)graph, (void)batch_index, (void)input_id, (void)slot;
  return absl::UnimplementedError(absl::StrCat("device = '", request.device, "': this gnnctl was built without CUDA"));
#endif
}

}  // namespace
absl::StatusOr<std::string> SampleLinkToNpz(const SampleRequest& request, const GraphData& graph,
                                            const SessionShape& shape, const std::string& out_npz) {
  const LinkShape& link = *shape.link;
  std::vector<int64_t> positions(static_cast<size_t>(link.split_size));
  std::iota(positions.begin(), positions.end(), 0);
  const EpochSeeds seeds(positions, shape.schedule, request.epoch);
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of edge split '",
                                              request.edge_split, "' has ", seeds.num_steps(),
                                              " steps for this rank)"));
  }
  std::vector<std::byte> slot(shape.layout.total_bytes);
  LinkBatch batch;
  batch.graph = BatchView::At(slot.data(), shape.layout);
  const std::span<const int64_t> input_id = seeds.batch(request.step);
  const auto positives = static_cast<int64_t>(input_id.size());
  const int64_t pairs = shape.layout.pairs->pairs(positives);
  if (shape.device.is_cuda()) {
    GNND_RETURN_IF_ERROR(SampleLinkOnGpu(request, shape, graph, seeds.batch_index(request.step), input_id, slot));
  } else {
    GNND_ASSIGN_OR_RETURN(std::vector<BatchMaker> maker,
                          BatchMaker::Create({&graph, shape.sampling, link.seeds, request.seed, shape.layout}));
    GNND_RETURN_IF_ERROR(
        maker[0].Sample(request.epoch, seeds.batch_index(request.step), {input_id, {}}, batch.graph, true, batch));
    WriteLinkArrays(batch, *shape.layout.pairs, slot.data());
  }
  const std::vector<int64_t> counts = BatchCountsOf(batch.graph, shape.layout, pairs, positives);

  std::vector<dataset::NpzArray> arrays;
  std::vector<int32_t> columns;  // edge_label_index as (2, L): sources, then destinations
  for (const BatchArraySchema& a : shape.schema.arrays) {
    std::vector<int64_t> array_shape = {counts[a.count]};
    array_shape.insert(array_shape.end(), a.row_shape.begin(), a.row_shape.end());
    if (a.name.ends_with("edge_label_index")) {
      const auto* rows = reinterpret_cast<const int32_t*>(slot.data() + a.offset);
      columns.resize(2 * pairs);
      for (int64_t i = 0; i < pairs; ++i) columns[i] = rows[2 * i], columns[pairs + i] = rows[2 * i + 1];
      arrays.push_back({a.name, a.dtype, {2, pairs}, columns.data()});
      continue;
    }
    arrays.push_back({a.name, a.dtype, array_shape, slot.data() + a.offset});
  }
  GNND_RETURN_IF_ERROR(dataset::WriteNpz(out_npz, arrays));
  int64_t hop0 = 0;
  for (const BatchView::Type& t : batch.graph.types) hop0 += t.num_nodes_per_hop[0];
  return absl::StrFormat("%s: step %d of %d, %d seed edges, %d nodes at hop 0 (%s)", out_npz, request.step,
                         seeds.num_steps(), positives, hop0, request.device);
}

}  // namespace gnnd::gnnctl
