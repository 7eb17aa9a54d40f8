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
namespace {

absl::StatusOr<LinkSamplingSpec> LinkSpec(const SampleRequest& request) {
  LinkSamplingSpec spec;
  const auto* split = std::find(kSplitNames.begin(), kSplitNames.end(), request.edge_split);
  if (split == kSplitNames.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("edge_split = ", Quoted(request.edge_split, 64), " (must be train, valid or test)"));
  }
  spec.edge_split = static_cast<int>(split - kSplitNames.begin());
  spec.fanouts = request.fanouts;
  if (request.neg_sampling == "binary") {
    spec.negatives.mode = NegativeMode::kBinary;
  } else if (request.neg_sampling == "triplet") {
    spec.negatives.mode = NegativeMode::kTriplet;
  } else if (request.neg_sampling != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("neg_sampling = ", Quoted(request.neg_sampling, 64), " (must be none, binary or triplet)"));
  }
  spec.negatives.amount = request.neg_amount;
  spec.negatives.strict = request.strict;
  if (request.exclude == "self") {
    spec.exclude = ExcludeMode::kSelf;
  } else if (request.exclude == "reverse") {
    spec.exclude = ExcludeMode::kReverse;
  } else if (request.exclude != "none") {
    return absl::InvalidArgumentError(
        absl::StrCat("exclude = ", Quoted(request.exclude, 64), " (must be none, self or reverse)"));
  }
  return spec;
}

}  // namespace

absl::StatusOr<std::string> SampleLinkToNpz(const SampleRequest& request, const GraphData& graph,
                                            const std::string& out_npz) {
  if (request.device != "cpu") {
    return absl::UnimplementedError(
        absl::StrCat("device = '", request.device, "': link batches are sampled on the CPU in this version"));
  }
  GNND_ASSIGN_OR_RETURN(const LinkSamplingSpec spec, LinkSpec(request));
  const SeedScheduleSpec schedule{request.seed,       request.shuffle, request.drop_last,
                                  request.batch_size, request.rank,    request.world_size};
  GNND_RETURN_IF_ERROR(CheckSeedScheduleSpec(schedule));
  GNND_ASSIGN_OR_RETURN(CpuLinkSampler sampler, CpuLinkSampler::Create(graph, spec, request.seed, request.batch_size));
  std::vector<int64_t> positions(static_cast<size_t>(sampler.split_size()));
  std::iota(positions.begin(), positions.end(), 0);
  const EpochSeeds seeds(positions, schedule, request.epoch);
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of edge split '",
                                              request.edge_split, "' has ", seeds.num_steps(),
                                              " steps for this rank)"));
  }
  const SamplingSpec sampling{MaxLinkSeeds(request.batch_size, spec.negatives), spec.fanouts};
  GNND_ASSIGN_OR_RETURN(
      const BatchCapacity capacity,
      ComputeBatchCapacity(sampling, graph.num_nodes(), graph.manifest.num_edges(), graph.MaxInDegree()));
  const size_t row_bytes = graph.schema.node_types[0].features >= 0 ? FeatureRowBytes(graph.manifest) : 0;
  BatchBuffer buffer(BatchLayout::Make(capacity, static_cast<int>(spec.fanouts.size()), row_bytes));
  LinkBatch batch{.graph = buffer.view()};
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
  if (row_bytes > 0) {
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
