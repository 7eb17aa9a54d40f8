#include "common/batch/link_batch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"

namespace gnnd {

absl::StatusOr<NegativeMode> ParseNegativeMode(absl::string_view mode, absl::string_view field) {
  if (mode.empty() || mode == "none") return NegativeMode::kNone;
  if (mode == "binary") return NegativeMode::kBinary;
  if (mode == "triplet") return NegativeMode::kTriplet;
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quoted(mode, 64), " (must be none, binary or triplet)"));
}

absl::StatusOr<ExcludeMode> ParseExcludeMode(absl::string_view mode, absl::string_view field) {
  if (mode.empty() || mode == "none") return ExcludeMode::kNone;
  if (mode == "self") return ExcludeMode::kSelf;
  if (mode == "reverse") return ExcludeMode::kReverse;
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quoted(mode, 64), " (must be none, self or reverse)"));
}

absl::StatusOr<int> ParseEdgeSplit(absl::string_view split, absl::string_view field) {
  const auto* at = std::find(kSplitNames.begin(), kSplitNames.end(), split);
  if (at == kSplitNames.end()) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quoted(split, 64), " (must be train, valid or test)"));
  }
  return static_cast<int>(at - kSplitNames.begin());
}

absl::Status CheckSeedEdges(std::span<const int64_t> seed_edges, int64_t num_nodes, absl::string_view prefix) {
  if (seed_edges.empty() || seed_edges.size() % 2 != 0 || seed_edges.size() > 2 * kMaxSeedEdges) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "seed_edges: ", seed_edges.size(),
                     " ids (must be E sources then E destinations, 1 <= E <= ", kMaxSeedEdges, ")"));
  }
  for (size_t i = 0; i < seed_edges.size(); ++i) {
    if (seed_edges[i] < 0 || seed_edges[i] >= num_nodes) {
      const size_t pairs = seed_edges.size() / 2;
      return absl::InvalidArgumentError(absl::StrCat(prefix, "seed_edges[", i / pairs, "][", i % pairs, "] = ",
                                                     seed_edges[i], " (node ids are 0 to ", num_nodes - 1, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLinkSamplingSpec(const LinkSamplingSpec& spec, const DatasetSchema& schema,
                                   absl::string_view prefix) {
  if (!schema.homogeneous() || schema.format_version != 1) {
    return absl::UnimplementedError(
        absl::StrCat(prefix, "edge_split: link batches of typed datasets are not served yet (homogeneous only)"));
  }
  if (spec.negatives.amount < 1 || spec.negatives.amount > kMaxNegativeAmount) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "neg_amount = ", spec.negatives.amount, " (must be 1 to ", kMaxNegativeAmount, ")"));
  }
  if (spec.seed_edges != nullptr) return CheckSeedEdges(*spec.seed_edges, schema.num_nodes, prefix);
  if (spec.edge_split < 0 || spec.edge_split >= static_cast<int>(kSplitNames.size())) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "edge_split: position ", spec.edge_split));
  }
  const EdgeSplitSchema& split = schema.relations[0].edge_splits[spec.edge_split];
  const absl::string_view name = kSplitNames[spec.edge_split];
  if (split.edges < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "edge_split = '", name, "' (the graph has no such edge split)"));
  }
  if (spec.negatives.mode == NegativeMode::kTriplet && split.labels >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "neg_sampling = triplet: edge split '", name,
                                                   "' is labeled, and triplets carry no labels (as PyG)"));
  }
  return absl::OkStatus();
}

void LabeledEdgeLabels(const int64_t* split_labels, std::span<const int64_t> input_id, NegativeMode mode, int64_t pairs,
                       int64_t* out) {
  const int64_t shift = mode == NegativeMode::kBinary ? 1 : 0;
  for (size_t i = 0; i < input_id.size(); ++i) out[i] = split_labels[input_id[i]] + shift;
  std::fill(out + input_id.size(), out + pairs, 0);
}

int64_t MaxLinkSeeds(int64_t pairs, const NegativeSpec& negatives) {
  const int64_t amount = negatives.mode == NegativeMode::kNone ? 0 : negatives.amount;
  // Binary negatives add two endpoints each, triplet negatives one.
  return pairs * (2 + amount * (negatives.mode == NegativeMode::kBinary ? 2 : 1));
}

LinkBatchLayout LinkBatchLayout::Make(const BatchLayout& graph, int64_t max_positives, const LinkSamplingSpec& spec,
                                      bool labeled) {
  LinkBatchLayout l;
  l.graph = graph;
  l.max_positives = max_positives;
  l.amount = spec.negatives.mode == NegativeMode::kNone ? 0 : spec.negatives.amount;
  l.labeled = labeled;
  const bool triplet = spec.negatives.mode == NegativeMode::kTriplet;
  l.max_pairs = triplet ? 0 : max_positives * (1 + (spec.negatives.mode == NegativeMode::kBinary ? l.amount : 0));
  size_t at = graph.total_bytes;
  auto take = [&at](size_t bytes) {
    const size_t offset = at;
    at = AlignBatchOffset(at + bytes);
    return offset;
  };
  const size_t p = static_cast<size_t>(max_positives);
  l.input_id = take(8 * p);
  if (triplet) {
    l.src_index = take(4 * p);
    l.dst_pos_index = take(4 * p);
    l.dst_neg_index = take(4 * p * static_cast<size_t>(l.amount));
  } else {
    l.edge_label_index = take(8 * static_cast<size_t>(l.max_pairs));
    l.edge_label = take((labeled ? 8 : 4) * static_cast<size_t>(l.max_pairs));
  }
  l.total_bytes = at;
  return l;
}

BatchSchema LinkBatchSchema(const LinkBatchLayout& layout, int64_t feature_dim, DType feature_dtype) {
  BatchSchema s = HomogeneousBatchSchema(layout.graph, feature_dim, feature_dtype);
  s.arrays.erase(std::remove_if(s.arrays.begin(), s.arrays.end(),
                                [&](const BatchArraySchema& a) {
                                  return a.name == "labels" || (a.name == "features" && feature_dim == 0);
                                }),
                 s.arrays.end());
  const int pairs = static_cast<int>(s.counts.size()), positives = pairs + 1;
  s.counts.push_back("pairs");
  s.capacity.push_back(layout.max_pairs);
  s.counts.push_back("positives");
  s.capacity.push_back(layout.max_positives);
  s.arrays.push_back({"input_id", DType::kInt64, {}, positives, layout.input_id});
  if (layout.src_index != SIZE_MAX) {
    s.arrays.push_back({"src_index", DType::kInt32, {}, positives, layout.src_index});
    s.arrays.push_back({"dst_pos_index", DType::kInt32, {}, positives, layout.dst_pos_index});
    s.arrays.push_back({"dst_neg_index", DType::kInt32, {layout.amount}, positives, layout.dst_neg_index});
  } else {
    s.arrays.push_back({"edge_label_index", DType::kInt32, {2}, pairs, layout.edge_label_index});
    s.arrays.push_back({"edge_label", layout.labeled ? DType::kInt64 : DType::kFloat32, {}, pairs, layout.edge_label});
  }
  s.slot_bytes = layout.total_bytes;
  return s;
}

std::vector<int64_t> LinkBatchCounts(const BatchView& graph, int64_t pairs, int64_t positives) {
  std::vector<int64_t> counts =
      HomogeneousBatchCounts({graph.num_nodes_per_hop, static_cast<size_t>(graph.num_hops) + 1},
                             {graph.num_edges_per_hop, static_cast<size_t>(graph.num_hops)});
  counts.push_back(pairs);
  counts.push_back(positives);
  return counts;
}

}  // namespace gnnd
