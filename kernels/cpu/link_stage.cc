#include "kernels/cpu/link_stage.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/base/status.h"

namespace gnnd {

absl::StatusOr<LinkStage> LinkStage::Create(const GraphData& graph, const SamplingSpec& sampling,
                                            const LinkSeedSpec& spec, uint64_t seed) {
  GNND_RETURN_IF_ERROR(CheckLinkSeedSpec(spec, graph.schema, ""));
  GNND_RETURN_IF_ERROR(CheckSamplingSpec(sampling, graph.schema));
  if (!sampling.link()) return absl::InvalidArgumentError("a link stage's sampling spec is a node batch's");
  LinkStage stage(graph, spec, seed);
  stage.positives_ = SeedEdgesOf(spec, graph);
  stage.disjoint_ = sampling.disjoint;
  if (!sampling.temporal()) stage.positives_.times = nullptr;  // a split's times, unread
  if (sampling.temporal() && stage.positives_.times == nullptr) {
    return absl::InvalidArgumentError("a temporal link stage's pairs have no times");
  }
  stage.by_time_ = NodesByTimeOf(graph, spec, sampling);
  stage.relation_ = LinkRelationOf(graph, spec.relation, stage.by_time_.get());
  return stage;
}

absl::Status LinkStage::Sample(CpuSampler& sampler, uint64_t epoch, uint64_t batch_index,
                               std::span<const int64_t> input_id, LinkBatch& out, SampleTimes* times,
                               bool gather_features) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point gather_start, gather_end;
  const size_t p = input_id.size();
  src_.resize(p);
  dst_.resize(p);
  for (size_t i = 0; i < p; ++i) {
    src_[i] = positives_.edges[input_id[i]];
    dst_[i] = positives_.edges[positives_.size + input_id[i]];
  }
  const LinkRelation& relation = relation_;
  if (spec_.negatives.mode == NegativeMode::kFixed) FixedNegatives(positives_, input_id, fixed_);
  PositiveTimes(positives_, input_id, times_);
  GNND_RETURN_IF_ERROR(MakeLinkSeeds(MakeSamplingKey(seed_, epoch, RandomPurpose::kNegatives), batch_index, src_, dst_,
                                     spec_.negatives, relation, out.seeds, fixed_, {disjoint_, times_}));
  BuildRelationExclusions(graph_->schema, spec_.relation, spec_.exclude, src_, dst_, excluded_);
  const BatchView& graph = out.graph;
  const RelationSchema& r = graph_->schema.relations[spec_.relation];
  hop0_.assign(graph_->schema.node_types.size(), {});
  hop0_[r.src_type] = out.seeds.src_nodes;
  if (!relation.same_type) hop0_[r.dst_type] = out.seeds.dst_nodes;
  sampler.SampleLinkGraph(epoch, batch_index, hop0_, excluded_, graph, out.seeds.subgraph_time);
  GNND_RETURN_IF_ERROR(sampler.status());
  gather_start = Clock::now();
  if (gather_features) {  // a link batch has no labels
    sampler.GatherFeatures(graph);
    sampler.GatherNodeAttributes(graph);
  }
  gather_end = Clock::now();
  if (times != nullptr) {
    times->gather = std::chrono::duration<double>(gather_end - gather_start).count();
    times->sample = std::chrono::duration<double>(Clock::now() - start).count() - times->gather;
  }

  out.input_id.assign(input_id.begin(), input_id.end());
  out.edge_label.clear();
  out.edge_label_long.clear();
  if (TripletLayout(spec_.negatives.mode)) return absl::OkStatus();
  const size_t negatives = out.seeds.pair_src.size() - p;
  if (positives_.labels != nullptr) {
    out.edge_label_long.resize(out.seeds.pair_src.size());
    LabeledEdgeLabels(positives_.labels, input_id, positives_.label_shift,
                      static_cast<int64_t>(out.edge_label_long.size()), out.edge_label_long.data());
  } else {
    out.edge_label.assign(p, 1.0f);
    out.edge_label.insert(out.edge_label.end(), negatives, 0.0f);
  }
  return absl::OkStatus();
}

std::pair<int64_t, int64_t> WriteLinkArrays(const LinkBatch& batch, const PairArrays& layout, std::byte* slot) {
  auto copy = [slot](size_t offset, const auto& values) {
    std::memcpy(slot + offset, values.data(), values.size() * sizeof(values[0]));
  };
  const LinkSeeds& s = batch.seeds;
  const int64_t positives = static_cast<int64_t>(batch.input_id.size());
  copy(layout.input_id, batch.input_id);
  if (layout.edge_label_time != SIZE_MAX) copy(layout.edge_label_time, s.pair_time);
  if (layout.src_index != SIZE_MAX) {
    copy(layout.src_index, s.src_index);
    copy(layout.dst_pos_index, s.dst_pos_index);
    copy(layout.dst_neg_index, s.dst_neg_index);
    return {0, positives};
  }
  auto* rows = reinterpret_cast<int32_t*>(slot + layout.edge_label_index);  // (L, 2): source, destination
  for (size_t i = 0; i < s.pair_src.size(); ++i) rows[2 * i] = s.pair_src[i], rows[2 * i + 1] = s.pair_dst[i];
  if (layout.labeled) {
    copy(layout.edge_label, batch.edge_label_long);
  } else {
    copy(layout.edge_label, batch.edge_label);
  }
  return {static_cast<int64_t>(s.pair_src.size()), positives};
}

}  // namespace gnnd
