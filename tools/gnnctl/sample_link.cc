// `gnnctl sample --edge-split S`: one link-prediction batch (kernels/cpu/link_sampler.h) to an .npz.
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/batch/seeds.h"
#include "kernels/cpu/link_sampler.h"
#include "tools/dataset/npz.h"
#include "tools/gnnctl/sample.h"

namespace gnnd::gnnctl {
absl::StatusOr<std::string> SampleLinkToNpz(const SampleRequest& request, const GraphData& graph,
                                            const SessionShape& shape, const std::string& out_npz) {
  const LinkSamplingSpec& spec = shape.link->sampling;
  GNND_ASSIGN_OR_RETURN(CpuLinkSampler sampler, CpuLinkSampler::Create(graph, spec, request.seed, request.batch_size));
  std::vector<int64_t> positions(static_cast<size_t>(sampler.split_size()));
  std::iota(positions.begin(), positions.end(), 0);
  const EpochSeeds seeds(positions, shape.schedule, request.epoch);
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of edge split '",
                                              request.edge_split, "' has ", seeds.num_steps(),
                                              " steps for this rank)"));
  }
  BatchBuffer buffer(shape.layout);
  LinkBatch batch;
  batch.graph = buffer.view();
  GNND_RETURN_IF_ERROR(
      sampler.Sample(request.epoch, seeds.batch_index(request.step), seeds.batch(request.step), batch));

  const BatchView& b = batch.graph;
  const int64_t nodes = b.num_nodes(), edges = b.num_edges(), hops = b.num_hops;
  std::vector<dataset::NpzArray> arrays = {
      {"node_ids", DType::kInt64, {nodes}, b.node_ids},
      {"num_nodes_per_hop", DType::kInt32, {hops + 1}, b.num_nodes_per_hop},
      {"edge_src", DType::kInt32, {edges}, b.edge_src},
      {"edge_dst", DType::kInt32, {edges}, b.edge_dst},
      {"num_edges_per_hop", DType::kInt32, {hops}, b.num_edges_per_hop},
      {"input_id", DType::kInt64, {static_cast<int64_t>(batch.input_id.size())}, batch.input_id.data()},
  };
  if (shape.layout.feature_row_bytes > 0) {
    const NodeTypeSchema& t = graph.schema.node_types[0];
    arrays.push_back({"features", NpyStorage(t.feature_dtype), {nodes, t.feature_dim}, b.features});
  }
  const LinkSeeds& s = batch.seeds;
  std::vector<int32_t> pairs(s.pair_src);
  pairs.insert(pairs.end(), s.pair_dst.begin(), s.pair_dst.end());
  if (spec.negatives.mode == NegativeMode::kTriplet) {
    const int64_t p = static_cast<int64_t>(s.src_index.size());
    arrays.push_back({"src_index", DType::kInt32, {p}, s.src_index.data()});
    arrays.push_back({"dst_pos_index", DType::kInt32, {p}, s.dst_pos_index.data()});
    arrays.push_back({"dst_neg_index", DType::kInt32, {p, spec.negatives.amount}, s.dst_neg_index.data()});
  } else {
    const int64_t l = static_cast<int64_t>(s.pair_src.size());
    arrays.push_back({"edge_label_index", DType::kInt32, {2, l}, pairs.data()});
    if (batch.edge_label_long.empty()) {
      arrays.push_back({"edge_label", DType::kFloat32, {l}, batch.edge_label.data()});
    } else {
      arrays.push_back({"edge_label", DType::kInt64, {l}, batch.edge_label_long.data()});
    }
  }
  GNND_RETURN_IF_ERROR(dataset::WriteNpz(out_npz, arrays));
  return absl::StrFormat("%s: step %d of %d, %d seed edges, %d nodes at hop 0, %d nodes, %d edges", out_npz,
                         request.step, seeds.num_steps(), batch.input_id.size(), b.num_seeds(), nodes, edges);
}

}  // namespace gnnd::gnnctl
