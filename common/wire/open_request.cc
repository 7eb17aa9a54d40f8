#include "common/wire/open_request.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status.h"
#include "common/wire/draw_request.h"

namespace gnnd {
namespace {

// Keeps the code, prefixes the message with the request field's path.
absl::Status InField(const absl::Status& s, absl::string_view prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// A typed dataset's field (`name`, given as `value`) in a request for a homogeneous one.
absl::Status LeftEmpty(absl::string_view name, const std::string& value, const v1::OpenSession& request) {
  if (value.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("open.", name, " = ", Quoted(value, 100), " ('", request.dataset(),
                                                 "' is homogeneous: leave it empty)"));
}

// The seeds' node type: the one named, or the one type with splits.
absl::StatusOr<int> SeedType(const v1::OpenSession& request, const DatasetSchema& schema) {
  if (schema.format_version == 1) {
    GNND_RETURN_IF_ERROR(LeftEmpty("node_type", request.node_type(), request));
    return 0;
  }
  if (!request.node_type().empty()) {
    const int type = schema.NodeTypeNamed(request.node_type());
    if (type < 0) {
      std::string types;
      for (const NodeTypeSchema& t : schema.node_types) absl::StrAppend(&types, types.empty() ? "" : ", ", t.name);
      return absl::InvalidArgumentError(
          absl::StrCat("open.node_type = ", Quoted(request.node_type(), 100), " (the node types are ", types, ")"));
    }
    return type;
  }
  int with_splits = -1;
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const auto& splits = schema.node_types[t].splits;
    if (splits[0] < 0 && splits[1] < 0 && splits[2] < 0) continue;
    if (with_splits >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("open.node_type is empty, and node types '", schema.node_types[with_splits].name, "' and '",
                       schema.node_types[t].name, "' both have splits: name the seeds' type"));
    }
    with_splits = static_cast<int>(t);
  }
  if (with_splits < 0) {
    return absl::InvalidArgumentError("open.node_type is empty and no node type has splits: name the seeds' type");
  }
  return with_splits;
}

// The trainer's own seeds (PyG's input_nodes): ids of the seed type, in place of a split.
// A CUDA session draws a node's k of d in-neighbors on one GPU thread, in O(k^2) (the CPU's draw is O(k log k)):
// k beyond kMaxCudaFanout where a node has more in-neighbors would hold a batch for minutes. LABOR's draw is a
// pass over the list, and -1 (or d <= k) takes the whole list: neither is bounded; nor is a session whose batches
// the host makes (open.producer "host").
absl::Status CheckCudaFanouts(const SessionShape& shape, const DatasetSchema& schema,
                              const std::vector<int64_t>& max_in_degrees) {
  if (!shape.device.is_cuda() || shape.producer == BatchProducer::kHost || shape.sampling.labor.active) {
    return absl::OkStatus();
  }
  for (size_t r = 0; r < shape.sampling.fanouts.size(); ++r) {
    for (size_t hop = 0; hop < shape.sampling.fanouts[r].size(); ++hop) {
      const int32_t k = shape.sampling.fanouts[r][hop];
      if (k > kMaxCudaFanout && max_in_degrees[r] > k) {
        return absl::InvalidArgumentError(absl::StrCat(
            "open.fanouts: ", schema.relations[r].key(), " draws ", k, " at hop ", hop + 1, " of in-lists of up to ",
            max_in_degrees[r], ": a CUDA session draws at most ", kMaxCudaFanout,
            " of a list (one GPU thread draws a node's); give -1 to take every in-neighbor, or open it on the CPU"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSeedIds(const v1::OpenSession& request, const NodeTypeSchema& type, bool typed) {
  if (!request.split().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.split = ", Quoted(request.split()), " and open.seed_ids: give one of them"));
  }
  if (request.seed_ids_size() > kMaxSeedIds) {
    return absl::InvalidArgumentError(absl::StrCat("open.seed_ids: ", request.seed_ids_size(), " ids (at most ",
                                                   kMaxSeedIds, "; iterate them in several sessions)"));
  }
  const std::string what = typed ? absl::StrCat("a '", type.name, "' node") : "a node";
  if (request.seed_mask_length() != 0 && request.seed_mask_length() != type.num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat("open.seed_mask_length = ", request.seed_mask_length(),
                                                   " (a mask over the seeds' type has one entry per node: ",
                                                   type.num_nodes, " for ", what, " of '", request.dataset(), "')"));
  }
  for (int i = 0; i < request.seed_ids_size(); ++i) {
    const int64_t id = request.seed_ids(i);
    if (id < 0 || id >= type.num_nodes) {
      return absl::InvalidArgumentError(absl::StrCat("open.seed_ids[", i, "] = ", id, " (not ", what, " of '",
                                                     request.dataset(), "': ids are 0 to ", type.num_nodes - 1, ")"));
    }
  }
  return absl::OkStatus();
}

// The seeds' split: its position in the dataset's arrays.
absl::StatusOr<int> SplitArray(const v1::OpenSession& request, const NodeTypeSchema& type) {
  if (request.split() == kAllNodesSplitName) return kAllNodesSplit;
  for (size_t s = 0; s < kSplitNames.size(); ++s) {
    if (request.split() != kSplitNames[s]) continue;
    if (type.splits[s] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("open.split = ", Quoted(request.split()), " (node type '", type.name, "' has no such split)"));
    }
    return type.splits[s];
  }
  return absl::InvalidArgumentError(absl::StrCat("open.split = ", Quoted(request.split(), 100),
                                                 " (must be train, valid, test, or all: every node of the type)"));
}

// The fanouts per relation: `fanouts` for every relation, or (typed datasets) `relation_fanouts` naming each
// relation once.
absl::StatusOr<std::vector<std::vector<int32_t>>> Fanouts(const v1::OpenSession& request, const DatasetSchema& schema) {
  if (schema.format_version == 1 && request.relation_fanouts_size() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.relation_fanouts: '", request.dataset(), "' is homogeneous (give open.fanouts)"));
  }
  if (request.relation_fanouts_size() == 0) {
    return std::vector<std::vector<int32_t>>(schema.relations.size(),
                                             {request.fanouts().begin(), request.fanouts().end()});
  }
  if (request.fanouts_size() > 0) {
    return absl::InvalidArgumentError("open.fanouts and open.relation_fanouts: give one of them");
  }
  std::vector<std::vector<int32_t>> fanouts(schema.relations.size());
  std::vector<bool> given(schema.relations.size(), false);
  for (int i = 0; i < request.relation_fanouts_size(); ++i) {
    const v1::RelationFanouts& f = request.relation_fanouts(i);
    const int r = schema.RelationKeyed(f.relation());
    if (r < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("open.relation_fanouts[", i, "].relation = ", Quoted(f.relation(), 100), " (not a relation of '",
                       request.dataset(), "': keys are src___rel___dst, or src___dst where one relation links them)"));
    }
    if (given[r]) {
      return absl::InvalidArgumentError(
          absl::StrCat("open.relation_fanouts[", i, "].relation = ", Quoted(f.relation()), " (given twice)"));
    }
    given[r] = true;
    fanouts[r].assign(f.fanouts().begin(), f.fanouts().end());
  }
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    if (!given[r]) {
      return absl::InvalidArgumentError(absl::StrCat("open.relation_fanouts: relation ", schema.relations[r].key(),
                                                     " has none (give every relation, "
                                                     "0 per hop to sample none through it)"));
    }
  }
  return fanouts;
}

// Where the session's batches are made: open.producer, else the daemon's default; a CPU session's on the host.
absl::StatusOr<BatchProducer> ProducerOf(const v1::OpenSession& request, const Device& device,
                                         const SlotLimits& limits) {
  if (request.producer().empty()) return device.is_cuda() ? limits.default_producer : BatchProducer::kHost;
  GNND_ASSIGN_OR_RETURN(const BatchProducer producer, ParseBatchProducer(request.producer(), "open.producer"));
  if (device.is_cuda()) return producer;
  if (producer != BatchProducer::kHost && producer != BatchProducer::kAuto) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.producer = ", Quoted(request.producer()),
                     " (a CPU session's batches are made on the host: host, auto or empty)"));
  }
  return BatchProducer::kHost;
}

// The slot count and the seed schedule the request asks for (the schedule is checked later).
absl::Status SetSlotsAndSchedule(const v1::OpenSession& request, const SlotLimits& limits, SessionShape& shape) {
  shape.num_slots = request.num_slots() == 0 ? limits.default_slots : request.num_slots();
  if (shape.num_slots < 1 || shape.num_slots > kMaxSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.num_slots = ", request.num_slots(), " (must be 1 to ", kMaxSlots, ")"));
  }
  shape.schedule = {request.seed(),       !request.no_shuffle(), request.drop_last(),
                    request.batch_size(), request.rank(),        request.world_size() == 0 ? 1 : request.world_size()};
  return absl::OkStatus();
}

// The slots' bytes within the limit (slots sized by the batches are checked once sized, by the session).
absl::Status CheckSlotBytes(const v1::OpenSession& request, SessionShape& shape, const SlotLimits& limits) {
  if (!request.slots_may_grow() && shape.slot_bytes > limits.max_session_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("open: the session needs ", shape.slot_bytes, " bytes of slots (",
                                                   shape.num_slots, " x ", shape.schema.slot_bytes,
                                                   "), over the limit of ", limits.max_session_bytes,
                                                   " (max_session_bytes): lower batch_size, fanouts or num_slots"));
  }
  return absl::OkStatus();
}

// The seed edges' relation: the one open.edge_type names, or the one relation with the edge split.
absl::StatusOr<int> EdgeType(const v1::OpenSession& request, const DatasetSchema& schema) {
  if (schema.format_version == 1) {
    GNND_RETURN_IF_ERROR(LeftEmpty("edge_type", request.edge_type(), request));
    return 0;
  }
  std::string keys;
  for (const RelationSchema& r : schema.relations) absl::StrAppend(&keys, keys.empty() ? "" : ", ", r.key());
  if (!request.edge_type().empty()) {
    const int r = schema.RelationKeyed(request.edge_type());
    if (r >= 0) return r;
    return absl::InvalidArgumentError(
        absl::StrCat("open.edge_type = ", Quoted(request.edge_type(), 100), " (the relations are ", keys, ")"));
  }
  if (request.seed_edges_size() > 0 && schema.relations.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.edge_type is empty: name the seed_edges' relation (", keys, ")"));
  }
  int with_split = -1;
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const auto& splits = schema.relations[r].edge_splits;
    const bool has = request.seed_edges_size() > 0 || std::any_of(splits.begin(), splits.end(), [&](const auto& e) {
                       return e.edges >= 0 && kSplitNames[&e - splits.data()] == request.edge_split();
                     });
    if (!has) continue;
    if (with_split >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "open.edge_type is empty, and ", schema.relations[with_split].key(), " and ", schema.relations[r].key(),
          " both have edge split ", Quoted(request.edge_split(), 100), ": name the relation"));
    }
    with_split = static_cast<int>(r);
  }
  if (with_split < 0) {
    return absl::InvalidArgumentError(absl::StrCat("open.edge_split = ", Quoted(request.edge_split(), 100),
                                                   " (no relation of '", request.dataset(), "' has it)"));
  }
  return with_split;
}

// The edge data a session's batches carry (open.edge_attrs): every relation's e_id where the dataset stores
// them, and the attributes named (unset: all).
absl::Status SetEdgeData(const v1::OpenSession& request, const DatasetSchema& schema, SamplingSpec& spec) {
  spec.edge_ids = true;
  spec.edge_attrs.assign(schema.relations.size(), {});
  const auto& names = request.edge_attrs().names();
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const std::vector<EdgeAttributeSchema>& attrs = schema.relations[r].edge_attrs;
    for (size_t a = 0; a < attrs.size(); ++a) {
      if (!request.has_edge_attrs() || absl::c_linear_search(names, attrs[a].name)) {
        spec.edge_attrs[r].push_back(static_cast<int>(a));
      }
    }
  }
  for (const std::string& name : names) {
    const bool found = absl::c_any_of(schema.relations, [&](const RelationSchema& r) {
      return absl::c_any_of(r.edge_attrs, [&](const EdgeAttributeSchema& a) { return a.name == name; });
    });
    if (!found) {
      std::vector<std::string> known;
      for (const RelationSchema& r : schema.relations) {
        for (const EdgeAttributeSchema& a : r.edge_attrs) {
          if (!absl::c_linear_search(known, a.name)) known.push_back(a.name);
        }
      }
      return absl::InvalidArgumentError(absl::StrCat("open.edge_attrs.names: ", Quoted(name, 100),
                                                     " is not an edge attribute of the dataset (it has ",
                                                     known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

// Binary negatives as a fraction of the positives (open.neg_ratio): ceil(ratio) the most per positive (what
// slots are sized by); a whole number is an amount per positive.
absl::Status SetNegativeRatio(const v1::OpenSession& request, NegativeSpec& negatives) {
  const double ratio = request.neg_ratio();
  if (ratio == 0) return absl::OkStatus();
  if (!(ratio > 0 && ratio <= kMaxNegativeAmount) || negatives.mode != NegativeMode::kBinary ||
      request.neg_amount() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open.neg_ratio = ", ratio,
        negatives.mode != NegativeMode::kBinary ? " is binary negatives' (set open.neg_sampling \"binary\")"
        : request.neg_amount() != 0             ? " and open.neg_amount: give one of them"
                                    : absl::StrCat(" (must be above 0 and at most ", kMaxNegativeAmount, ")")));
  }
  negatives.amount = static_cast<int32_t>(std::ceil(ratio));
  if (ratio != std::ceil(ratio)) negatives.ratio = ratio;
  return absl::OkStatus();
}

// Weighted negatives (open.neg_src_weight, neg_dst_weight): one weight per node of the relation's endpoint type,
// the count checked in PyG's words.
absl::Status SetNegativeWeights(const v1::OpenSession& request, const DatasetSchema& schema, LinkSeedSpec& spec) {
  const RelationSchema& r = schema.relations[spec.relation];
  struct Side {
    const google::protobuf::RepeatedField<float>& weights;
    const char *field, *pyg, *nodes;
    int type;
    std::shared_ptr<const std::vector<uint64_t>>& out;
  };
  for (const Side& side : {Side{request.neg_src_weight(), "neg_src_weight", "src_weight", "source", r.src_type,
                                spec.negatives.src_weights},
                           Side{request.neg_dst_weight(), "neg_dst_weight", "dst_weight", "destination", r.dst_type,
                                spec.negatives.dst_weights}}) {
    if (side.weights.empty()) continue;
    if (spec.negatives.mode != NegativeMode::kBinary && spec.negatives.mode != NegativeMode::kTriplet) {
      return absl::InvalidArgumentError(absl::StrCat("open.", side.field,
                                                     " weights drawn negatives: set open.neg_sampling \"binary\" or "
                                                     "\"triplet\""));
    }
    const int64_t nodes = schema.node_types[side.type].num_nodes;
    if (side.weights.size() != nodes) {  // PyG's words
      return absl::InvalidArgumentError(absl::StrCat("The '", side.pyg, "' attribute needs to match the number of ",
                                                     side.nodes, " nodes ", nodes, " (got ", side.weights.size(), ")"));
    }
    GNND_ASSIGN_OR_RETURN(std::vector<uint64_t> cumulative,
                          CumulativeWeights({side.weights.data(), static_cast<size_t>(side.weights.size())},
                                            absl::StrCat("open.", side.field)));
    side.out = std::make_shared<const std::vector<uint64_t>>(std::move(cumulative));
  }
  return absl::OkStatus();
}

// A link session (open.edge_split set): its spec, checked against the dataset, and its slot layout.
absl::StatusOr<SessionShape> CheckLinkRequest(const v1::OpenSession& request, const GraphData& graph,
                                              const GraphSummary& summary, const SlotLimits& limits,
                                              SessionShape shape) {
  if (!request.split().empty() || request.seed_ids_size() > 0) {
    return absl::InvalidArgumentError(
        "open.edge_split or open.seed_edges, and open.split or open.seed_ids: give one of them");
  }
  if (!request.edge_split().empty() && request.seed_edges_size() > 0) {
    return absl::InvalidArgumentError("open.edge_split and open.seed_edges: give one of them");
  }
  GNND_RETURN_IF_ERROR(SetSlotsAndSchedule(request, limits, shape));
  LinkShape& link = shape.link.emplace();
  LinkSeedSpec& spec = link.seeds;
  if (request.seed_edges_size() > 0) {
    spec.seed_edges =
        std::make_shared<const std::vector<int64_t>>(request.seed_edges().begin(), request.seed_edges().end());
  } else {
    GNND_ASSIGN_OR_RETURN(spec.edge_split, ParseEdgeSplit(request.edge_split(), "open.edge_split"));
  }
  GNND_ASSIGN_OR_RETURN(spec.negatives.mode, ParseNegativeMode(request.neg_sampling(), "open.neg_sampling"));
  spec.negatives.amount = request.neg_amount() == 0 ? 1 : request.neg_amount();
  GNND_RETURN_IF_ERROR(SetNegativeRatio(request, spec.negatives));
  spec.negatives.strict = request.strict_negatives();
  GNND_ASSIGN_OR_RETURN(spec.exclude, ParseExcludeMode(request.exclude(), "open.exclude"));
  GNND_ASSIGN_OR_RETURN(spec.relation, EdgeType(request, graph.schema));
  if (spec.negatives.mode == NegativeMode::kFixed && spec.seed_edges == nullptr && request.neg_amount() <= 1) {
    // The split's own count (CheckLinkSeedSpec checks that it has fixed negatives).
    spec.negatives.amount = static_cast<int32_t>(
        std::max<int64_t>(graph.schema.relations[spec.relation].edge_splits[spec.edge_split].num_negatives, 1));
  }
  GNND_RETURN_IF_ERROR(CheckLinkSeedSpec(spec, graph.schema, "open."));
  GNND_RETURN_IF_ERROR(SetNegativeWeights(request, graph.schema, spec));
  const bool typed = graph.schema.format_version != 1;
  if (!request.node_type().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("open.node_type = ", Quoted(request.node_type(), 100),
                                                   " (a link session's hop 0 is its pairs' endpoints: leave it empty",
                                                   typed ? " and name the relation in open.edge_type)" : ")"));
  }
  GNND_ASSIGN_OR_RETURN(std::vector<std::vector<int32_t>> fanouts, Fanouts(request, graph.schema));
  // Hop 0 holds every endpoint, and local indices are int32.
  const int64_t max_batch = (int64_t{1} << 30) / MaxLinkSeeds(1, spec.negatives);
  if (request.batch_size() < 1 || request.batch_size() > max_batch) {
    return absl::InvalidArgumentError(absl::StrCat("open.batch_size = ", request.batch_size(), " (must be 1 to ",
                                                   max_batch, " for link batches with these negatives)"));
  }
  if (spec.seed_edges != nullptr) {  // given pairs have no labels
    link.split_size = static_cast<int64_t>(spec.seed_edges->size() / 2);
  } else {
    const EdgeSplitSchema& split = graph.schema.relations[spec.relation].edge_splits[spec.edge_split];
    link.split_size = split.num_edges;
    link.labeled = split.labels >= 0;
  }
  shape.seed_type = -1;
  shape.sampling = LinkSampling(spec, std::move(fanouts), graph.schema, request.batch_size());
  GNND_RETURN_IF_ERROR(SetEdgeData(request, graph.schema, shape.sampling));
  GNND_RETURN_IF_ERROR(SetDrawPolicy(request, graph, summary.first_undrawable_weights, shape));
  if (shape.sampling.time.node_level && (spec.negatives.src_weights || spec.negatives.dst_weights)) {
    return absl::UnimplementedError(
        "open.neg_src_weight / neg_dst_weight with time_attr \"node_time\": temporal negatives are drawn uniformly "
        "among the nodes no newer than their pair; weighting them is not built");
  }
  shape.sampling.induced = request.induced();
  if (request.induced() && spec.exclude != ExcludeMode::kNone) {
    return absl::UnimplementedError(
        "open.induced with open.exclude: an induced batch holds every edge between its nodes, the seed edges too; "
        "excluding them from it is not built");
  }
  GNND_RETURN_IF_ERROR(InField(CheckSamplingSpec(shape.sampling, graph.schema), "open."));
  GNND_RETURN_IF_ERROR(InField(CheckSeedScheduleSpec(shape.schedule), "open."));
  GNND_ASSIGN_OR_RETURN(shape.layout.capacity,
                        ComputeBatchCapacity(shape.sampling, graph.schema, summary.max_in_degrees));
  GNND_RETURN_IF_ERROR(CheckCudaFanouts(shape, graph.schema, summary.max_in_degrees));
  LayOutSlots(graph, shape);
  GNND_RETURN_IF_ERROR(CheckSlotBytes(request, shape, limits));
  return shape;
}

}  // namespace

void LayOutSlots(const GraphData& graph, SessionShape& shape) {
  shape.layout = BatchLayout::Make(shape.layout.capacity, shape.sampling, graph.schema);
  if (shape.link) {
    AddPairArrays(shape.layout, shape.link->seeds.relation, shape.sampling.batch_size, shape.link->seeds.negatives,
                  shape.link->labeled, shape.sampling.temporal());
  }
  shape.schema = BatchSchemaOf(shape.layout, graph.schema);
  shape.slot_bytes = shape.schema.slot_bytes * shape.num_slots;
}

void SetFeatureRows(const GraphData& graph, std::span<const int64_t> rows, SessionShape& shape) {
  BatchCapacity& capacity = shape.layout.capacity;
  capacity.feature_rows.resize(capacity.max_nodes.size());
  for (size_t t = 0; t < capacity.max_nodes.size(); ++t) {
    capacity.feature_rows[t] = std::clamp<int64_t>(rows[t], 0, capacity.max_nodes[t]);
  }
  LayOutSlots(graph, shape);
}

std::span<const int64_t> SplitSeeds(const v1::OpenSession& request, const SessionShape& shape, const GraphData& graph,
                                    std::vector<int64_t>& made) {
  if (request.seed_ids_size() > 0) return {request.seed_ids().data(), static_cast<size_t>(request.seed_ids_size())};
  if (shape.split_array == kAllNodesSplit) {
    made.resize(static_cast<size_t>(graph.schema.node_types[shape.seed_type].num_nodes));
    std::iota(made.begin(), made.end(), 0);
    return made;
  }
  return {static_cast<const int64_t*>(graph.arrays.data[shape.split_array]),
          static_cast<size_t>(graph.schema.arrays[shape.split_array].shape[0])};
}

std::span<const int64_t> SplitSeedTimes(const v1::OpenSession& request, const SessionShape& shape,
                                        const GraphData& graph, size_t count) {
  if (request.seed_times_size() > 0) {
    return {request.seed_times().data(), static_cast<size_t>(request.seed_times_size())};
  }
  if (shape.split_times_array >= 0) {
    return {static_cast<const int64_t*>(graph.arrays.data[shape.split_times_array]), count};
  }
  return {};
}

absl::StatusOr<SessionShape> CheckOpenRequest(const v1::OpenSession& request, const GraphData& graph,
                                              const GraphSummary& summary, const SlotLimits& limits) {
  const DatasetSchema& schema = graph.schema;
  const bool typed = schema.format_version != 1;
  SessionShape shape;
  GNND_ASSIGN_OR_RETURN(shape.device, ParseDevice(request.device(), "open.device"));
  GNND_ASSIGN_OR_RETURN(shape.producer, ProducerOf(request, shape.device, limits));
  if (!request.edge_split().empty() || request.seed_edges_size() > 0) {
    return CheckLinkRequest(request, graph, summary, limits, shape);
  }
  const auto given = [](const std::string& mode) { return !mode.empty() && mode != "none"; };
  if (given(request.neg_sampling()) || request.neg_amount() > 1 || request.neg_ratio() != 0 ||
      request.neg_src_weight_size() > 0 || request.neg_dst_weight_size() > 0 || request.strict_negatives() ||
      given(request.exclude())) {
    return absl::InvalidArgumentError(
        "open.neg_sampling, neg_amount, neg_ratio, neg_src_weight, neg_dst_weight, strict_negatives and exclude are "
        "a link session's: set open.edge_split or open.seed_edges");
  }
  GNND_ASSIGN_OR_RETURN(shape.seed_type, SeedType(request, schema));
  // A graph without features or labels serves node batches too (as a typed one does): its batches lack them.
  const NodeTypeSchema& seed_type = schema.node_types[shape.seed_type];
  if (request.seed_ids_size() > 0) {
    GNND_RETURN_IF_ERROR(CheckSeedIds(request, seed_type, typed));
  } else {
    GNND_ASSIGN_OR_RETURN(shape.split_array, SplitArray(request, seed_type));
  }
  GNND_RETURN_IF_ERROR(SetSlotsAndSchedule(request, limits, shape));
  const bool seeds_may_repeat = request.seed_ids_size() > 0;
  // After the sampling spec's checks (their messages name batch_size first), before any capacity.
  auto check_schedule = [&] { return InField(CheckSeedScheduleSpec(shape.schedule), "open."); };
  shape.sampling.batch_size = request.batch_size();
  shape.sampling.seed_type = shape.seed_type;
  shape.sampling.seeds_may_repeat = seeds_may_repeat;
  GNND_ASSIGN_OR_RETURN(shape.sampling.fanouts, Fanouts(request, schema));
  GNND_RETURN_IF_ERROR(SetEdgeData(request, schema, shape.sampling));
  GNND_RETURN_IF_ERROR(SetDrawPolicy(request, graph, summary.first_undrawable_weights, shape));
  shape.sampling.induced = request.induced();
  GNND_RETURN_IF_ERROR(InField(CheckSamplingSpec(shape.sampling, schema), "open."));
  GNND_RETURN_IF_ERROR(check_schedule());
  GNND_ASSIGN_OR_RETURN(shape.layout.capacity, ComputeBatchCapacity(shape.sampling, schema, summary.max_in_degrees));
  GNND_RETURN_IF_ERROR(CheckCudaFanouts(shape, schema, summary.max_in_degrees));
  LayOutSlots(graph, shape);
  GNND_RETURN_IF_ERROR(CheckSlotBytes(request, shape, limits));
  return shape;
}

}  // namespace gnnd
