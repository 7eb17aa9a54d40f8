// `gnnctl sample --edge-split S`: one link-prediction batch (kernels/cpu/link_sampler.h) to an .npz, its
// arrays named as the session's batch schema names them (edge_label_index as PyG's (2, L)).
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/status.h"
#include "common/batch/seeds.h"
#include "kernels/cpu/link_sampler.h"
#include "tools/dataset/npz.h"
#include "tools/gnnctl/sample.h"

namespace gnnd::gnnctl {
absl::StatusOr<std::string> SampleLinkToNpz(const SampleRequest& request, const GraphData& graph,
                                            const SessionShape& shape, const std::string& out_npz) {
  const LinkShape& link = *shape.link;
  GNND_ASSIGN_OR_RETURN(CpuLinkSampler sampler,
                        CpuLinkSampler::Create(graph, link.sampling, request.seed, request.batch_size));
  std::vector<int64_t> positions(static_cast<size_t>(sampler.split_size()));
  std::iota(positions.begin(), positions.end(), 0);
  const EpochSeeds seeds(positions, shape.schedule, request.epoch);
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of edge split '",
                                              request.edge_split, "' has ", seeds.num_steps(),
                                              " steps for this rank)"));
  }
  std::vector<std::byte> slot(link.layout.total_bytes);
  LinkBatch batch;
  if (shape.typed) {
    batch.typed = TypedBatchView::At(slot.data(), shape.typed->layout);
  } else {
    batch.graph = BatchView::At(slot.data(), shape.layout);
  }
  GNND_RETURN_IF_ERROR(
      sampler.Sample(request.epoch, seeds.batch_index(request.step), seeds.batch(request.step), batch));
  const auto [pairs, positives] = WriteLinkArrays(batch, link.layout, slot.data());
  const std::vector<int64_t> counts = shape.typed ? TypedLinkBatchCounts(batch.typed, pairs, positives)
                                                  : LinkBatchCounts(batch.graph, pairs, positives);

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
  const LinkSeeds& s = batch.seeds;
  return absl::StrFormat("%s: step %d of %d, %d seed edges, %d nodes at hop 0", out_npz, request.step,
                         seeds.num_steps(), positives, s.src_nodes.size() + s.dst_nodes.size());
}

}  // namespace gnnd::gnnctl
