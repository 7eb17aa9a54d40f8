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
  if (mode == "fixed") return NegativeMode::kFixed;
  return absl::InvalidArgumentError(
      absl::StrCat(field, " = ", Quoted(mode, 64), " (must be none, binary, triplet or fixed)"));
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

absl::Status CheckSeedEdges(std::span<const int64_t> seed_edges, int64_t num_src, int64_t num_dst,
                            absl::string_view prefix, absl::string_view src_what, absl::string_view dst_what) {
  if (seed_edges.empty() || seed_edges.size() % 2 != 0 || seed_edges.size() > 2 * kMaxSeedEdges) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "seed_edges: ", seed_edges.size(),
                     " ids (must be E sources then E destinations, 1 <= E <= ", kMaxSeedEdges, ")"));
  }
  const size_t pairs = seed_edges.size() / 2;
  for (size_t i = 0; i < seed_edges.size(); ++i) {
    const bool source = i < pairs;
    const int64_t limit = source ? num_src : num_dst;
    if (seed_edges[i] < 0 || seed_edges[i] >= limit) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "seed_edges[", i / pairs, "][", i % pairs,
                                                     "] = ", seed_edges[i], " (", source ? src_what : dst_what,
                                                     " ids are 0 to ", limit - 1, ")"));
    }
  }
  return absl::OkStatus();
}

std::vector<int> ReverseRelations(const DatasetSchema& schema, int relation) {
  const RelationSchema& r = schema.relations[relation];
  std::vector<int> out;
  if (r.src_type == r.dst_type) out.push_back(relation);
  for (size_t i = 0; i < schema.relations.size(); ++i) {
    const RelationSchema& o = schema.relations[i];
    if (static_cast<int>(i) == relation || o.src_type != r.dst_type || o.dst_type != r.src_type) continue;
    if (o.name == absl::StrCat("rev_", r.name) || r.name == absl::StrCat("rev_", o.name)) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

absl::Status CheckLinkSeedSpec(const LinkSeedSpec& spec, const DatasetSchema& schema, absl::string_view prefix) {
  if (spec.relation < 0 || spec.relation >= static_cast<int>(schema.relations.size())) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "edge_type: relation ", spec.relation));
  }
  const RelationSchema& relation = schema.relations[spec.relation];
  const bool typed = schema.format_version != 1;
  const std::string of_relation = typed ? absl::StrCat(" of ", relation.key()) : "";
  if (spec.negatives.amount < 1 || spec.negatives.amount > kMaxNegativeAmount) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "neg_amount = ", spec.negatives.amount, " (must be 1 to ", kMaxNegativeAmount, ")"));
  }
  if (typed && spec.exclude == ExcludeMode::kReverse && ReverseRelations(schema, spec.relation).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "exclude = 'reverse': ", relation.key(), " has no reverse relation (", relation.dst, "___rev_",
        relation.name, "___", relation.src, ", as `gnnctl import --add-reverse` adds): use 'self'"));
  }
  if (spec.seed_edges != nullptr) {
    if (spec.negatives.mode == NegativeMode::kFixed) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, "neg_sampling = fixed: given seed_edges have no fixed negatives (an edge split's)"));
    }
    const NodeTypeSchema &src = schema.node_types[relation.src_type], &dst = schema.node_types[relation.dst_type];
    return typed ? CheckSeedEdges(*spec.seed_edges, src.num_nodes, dst.num_nodes, prefix,
                                  absl::StrCat("'", src.name, "' node"), absl::StrCat("'", dst.name, "' node"))
                 : CheckSeedEdges(*spec.seed_edges, src.num_nodes, dst.num_nodes, prefix);
  }
  if (spec.edge_split < 0 || spec.edge_split >= static_cast<int>(kSplitNames.size())) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "edge_split: position ", spec.edge_split));
  }
  const EdgeSplitSchema& split = relation.edge_splits[spec.edge_split];
  const absl::string_view name = kSplitNames[spec.edge_split];
  if (split.edges < 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "edge_split = '", name, "' (",
                                                   typed ? relation.key() : "the graph", " has no such edge split)"));
  }
  if (TripletLayout(spec.negatives.mode) && split.labels >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "neg_sampling = ", spec.negatives.mode == NegativeMode::kFixed ? "fixed" : "triplet",
                     ": edge split '", name, "'", of_relation, " is labeled, and triplets carry no labels (as PyG)"));
  }
  if (spec.negatives.mode == NegativeMode::kFixed) {
    if (split.negatives < 0) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "neg_sampling = fixed: edge split '", name, "'",
                                                     of_relation, " has no fixed negatives (", name, "_neg.npy)"));
    }
    if (spec.negatives.amount != split.num_negatives || spec.negatives.strict) {
      return absl::InvalidArgumentError(absl::StrCat(
          prefix, "neg_sampling = fixed: the split's ", split.num_negatives,
          " negatives per edge are served as they are (",
          spec.negatives.strict ? "strict_negatives must be off" : absl::StrCat("neg_amount = ", spec.negatives.amount),
          ")"));
    }
  }
  return absl::OkStatus();
}

SamplingSpec LinkSampling(const LinkSeedSpec& spec, std::vector<std::vector<int32_t>> fanouts,
                          const DatasetSchema& schema, int64_t max_positives) {
  SamplingSpec sampling;
  sampling.batch_size = max_positives;
  sampling.seed_type = -1;
  sampling.fanouts = std::move(fanouts);
  const RelationSchema& r = schema.relations[spec.relation];
  const int64_t amount = spec.negatives.mode == NegativeMode::kNone ? 0 : spec.negatives.amount;
  // Sources: the positives' and binary negatives'; destinations: the positives' and every negative's.
  const int64_t sources = max_positives * (1 + (spec.negatives.mode == NegativeMode::kBinary ? amount : 0));
  const int64_t destinations = max_positives * (1 + amount);
  sampling.max_hop0.assign(schema.node_types.size(), 0);
  sampling.max_hop0[r.src_type] += sources;
  sampling.max_hop0[r.dst_type] += destinations;
  return sampling;
}

void BuildRelationExclusions(const DatasetSchema& schema, int relation, ExcludeMode mode, std::span<const int64_t> src,
                             std::span<const int64_t> dst, std::vector<EdgeExclusions>& out) {
  out.resize(schema.relations.size());
  for (EdgeExclusions& e : out) e.Build({}, {}, ExcludeMode::kNone);
  if (mode == ExcludeMode::kNone) return;
  const RelationSchema& r = schema.relations[relation];
  // Within the relation: u -> v, and v -> u where both ends are one type (its own reverse).
  out[relation].Build(src, dst, r.src_type == r.dst_type ? mode : ExcludeMode::kSelf);
  if (mode != ExcludeMode::kReverse) return;
  for (int reverse : ReverseRelations(schema, relation)) {
    if (reverse != relation) out[reverse].Build(dst, src, ExcludeMode::kSelf);  // v -> u in the reverse relation
  }
}

int64_t LabelShift(NegativeMode mode, const int64_t* labels, int64_t count) {
  if (mode != NegativeMode::kBinary || labels == nullptr || count == 0) return 0;
  return *std::min_element(labels, labels + count) == 0 ? 1 : 0;
}

void LabeledEdgeLabels(const int64_t* split_labels, std::span<const int64_t> input_id, int64_t shift, int64_t pairs,
                       int64_t* out) {
  for (size_t i = 0; i < input_id.size(); ++i) out[i] = split_labels[input_id[i]] + shift;
  std::fill(out + input_id.size(), out + pairs, 0);
}

LinkSeedEdges SeedEdgesOf(const LinkSeedSpec& spec, const GraphData& graph) {
  if (spec.seed_edges != nullptr) {  // given pairs, laid out as a split's edges; the spec keeps them
    return {.edges = spec.seed_edges->data(),
            .size = static_cast<int64_t>(spec.seed_edges->size() / 2),
            .times = spec.seed_edge_times == nullptr ? nullptr : spec.seed_edge_times->data()};
  }
  const EdgeSplitSchema& split = graph.schema.relations[spec.relation].edge_splits[spec.edge_split];
  auto array = [&graph](int at) { return at >= 0 ? static_cast<const int64_t*>(graph.arrays.data[at]) : nullptr; };
  LinkSeedEdges edges{array(split.edges),     array(split.labels), split.num_edges,
                      array(split.negatives), split.num_negatives, array(split.times)};
  edges.label_shift = LabelShift(spec.negatives.mode, edges.labels, edges.size);
  return edges;
}

void FixedNegatives(const LinkSeedEdges& positives, std::span<const int64_t> input_id, std::vector<int64_t>& out) {
  const auto k = static_cast<size_t>(positives.negatives_per_edge);
  out.resize(input_id.size() * k);
  for (size_t i = 0; i < input_id.size(); ++i) {
    std::copy_n(positives.negatives + input_id[i] * positives.negatives_per_edge, k, out.begin() + i * k);
  }
}

LinkRelation LinkRelationOf(const GraphData& graph, int relation) {
  const DatasetSchema& schema = graph.schema;
  const RelationSchema& r = schema.relations[relation];
  return {static_cast<const int64_t*>(graph.arrays.data[r.indptr]),
          graph.arrays.data[r.indices],
          r.index_dtype == DType::kInt64,
          schema.node_types[r.src_type].num_nodes,
          schema.node_types[r.dst_type].num_nodes,
          r.src_type == r.dst_type,
          schema.format_version == 1 ? "the graph" : r.key()};
}

void PositiveTimes(const LinkSeedEdges& positives, std::span<const int64_t> input_id, std::vector<int64_t>& out) {
  out.clear();
  for (size_t i = 0; i < input_id.size() && positives.times != nullptr; ++i)
    out.push_back(positives.times[input_id[i]]);
}

std::shared_ptr<const NodesByTimeIndex> NodesByTimeOf(const GraphData& graph, const LinkSeedSpec& spec,
                                                      const SamplingSpec& sampling) {
  if (!sampling.temporal() || !sampling.time.node_level) return nullptr;
  if (spec.negatives_by_time != nullptr) return spec.negatives_by_time;
  const RelationSchema& r = graph.schema.relations[spec.relation];
  auto sorted = [&graph](int type) {
    const NodeTypeSchema& t = graph.schema.node_types[type];
    if (t.node_time < 0) return std::vector<int64_t>();
    return NodesByTime({static_cast<const int64_t*>(graph.arrays.data[t.node_time]), static_cast<size_t>(t.num_nodes)});
  };
  auto index = std::make_shared<NodesByTimeIndex>();
  index->src = sorted(r.src_type);
  if (r.dst_type != r.src_type) index->dst = sorted(r.dst_type);
  return index;
}

uint64_t NodesByTimeBytes(const DatasetSchema& schema, int relation, const SamplingSpec& sampling) {
  if (!sampling.temporal() || !sampling.time.node_level) return 0;
  const RelationSchema& r = schema.relations[relation];
  uint64_t nodes = 0;
  for (int type : {r.src_type, r.dst_type}) {
    if (schema.node_types[type].node_time >= 0) nodes += static_cast<uint64_t>(schema.node_types[type].num_nodes);
    if (r.dst_type == r.src_type) break;
  }
  return sizeof(int64_t) * nodes;
}

LinkRelation LinkRelationOf(const GraphData& graph, int relation, const NodesByTimeIndex* by_time) {
  LinkRelation out = LinkRelationOf(graph, relation);
  if (by_time == nullptr) return out;
  const RelationSchema& r = graph.schema.relations[relation];
  // One list where both ends are one type.
  const std::vector<int64_t>& dst = r.dst_type == r.src_type ? by_time->src : by_time->dst;
  auto times = [&graph](int type) {
    return static_cast<const int64_t*>(graph.arrays.data[graph.schema.node_types[type].node_time]);
  };
  if (!by_time->src.empty()) out.src_times = times(r.src_type), out.src_by_time = by_time->src.data();
  if (!dst.empty()) out.dst_times = times(r.dst_type), out.dst_by_time = dst.data();
  return out;
}

int64_t MaxLinkSeeds(int64_t pairs, const NegativeSpec& negatives) {
  const int64_t amount = negatives.mode == NegativeMode::kNone ? 0 : negatives.amount;
  // Binary negatives add two endpoints each, triplet (and fixed) negatives one.
  return pairs * (2 + amount * (negatives.mode == NegativeMode::kBinary ? 2 : 1));
}

void AddPairArrays(BatchLayout& layout, int relation, int64_t max_positives, const NegativeSpec& negatives,
                   bool labeled, bool timed) {
  PairArrays& l = layout.pairs.emplace();
  l.relation = relation;
  l.max_positives = max_positives;
  l.amount = negatives.mode == NegativeMode::kNone ? 0 : negatives.amount;
  l.ratio = negatives.mode == NegativeMode::kBinary ? negatives.ratio : 0;
  l.labeled = labeled;
  const bool triplet = TripletLayout(negatives.mode);
  l.max_pairs = triplet ? 0 : max_positives * (1 + (negatives.mode == NegativeMode::kBinary ? l.amount : 0));
  ArrayPlacer placer(layout.total_bytes);
  const size_t p = static_cast<size_t>(max_positives);
  l.input_id = placer.Place(8 * p);
  if (triplet) {
    l.src_index = placer.Place(4 * p);
    l.dst_pos_index = placer.Place(4 * p);
    l.dst_neg_index = placer.Place(4 * p * static_cast<size_t>(l.amount));
  } else {
    l.edge_label_index = placer.Place(8 * static_cast<size_t>(l.max_pairs));
    l.edge_label = placer.Place((labeled ? 8 : 4) * static_cast<size_t>(l.max_pairs));
  }
  if (timed) l.edge_label_time = placer.Place(8 * (triplet ? p : static_cast<size_t>(l.max_pairs)));
  layout.total_bytes = placer.end();
}

}  // namespace gnnd
