#include "common/wire/draw_request.h"

#include <algorithm>
#include <string>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/batch/sampling.h"

namespace gnnd {
namespace {

// The request's policy and how its fields are named in errors: open.draw's, or the API 1.x aliases'.
struct Draw {
  v1::DrawPolicy policy;
  bool aliased = false;
  // "open.draw.<field>", or "open.<alias>" where the request used the alias.
  std::string Field(absl::string_view field, absl::string_view alias) const {
    return aliased ? absl::StrCat("open.", alias) : absl::StrCat("open.draw.", field);
  }
};

// The weighted rule: the attribute of every relation sampled through, checked (none undrawable: a pass over its
// values where `first_undrawable` is empty).
absl::Status SetEdgeWeights(const Draw& draw, const GraphData& graph, const std::vector<int64_t>& first_undrawable,
                            SamplingSpec& spec) {
  if (!draw.policy.has_weighted()) return absl::OkStatus();
  const std::string& name = draw.policy.weighted().attr();
  const std::string field = absl::StrCat(draw.Field("weighted.attr", "weight_attr"), " = ", Quoted(name, 100));
  const DatasetSchema& schema = graph.schema;
  spec.edge_weights.assign(schema.relations.size(), -1);
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const RelationSchema& rel = schema.relations[r];
    if (absl::c_all_of(spec.fanouts[r], [](int32_t f) { return f == 0; })) continue;  // never sampled through
    const auto attr = absl::c_find_if(rel.edge_attrs, [&](const auto& a) { return a.name == name; });
    const std::string where = schema.format_version == 1 ? "the dataset" : absl::StrCat("relation ", rel.key());
    if (attr == rel.edge_attrs.end()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", where, " has no such edge attribute"));
    }
    if (!attr->CanWeighDraws()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": weights are one float32 an edge; ", where, "'s is ",
                                                     attr->dim > 0 ? absl::StrCat(attr->dim, " x ") : "",
                                                     DTypeName(attr->dtype)));
    }
    const auto* w = static_cast<const float*>(graph.arrays.data[attr->array]);
    const int64_t e = !first_undrawable.empty()
                          ? first_undrawable[attr->array]
                          : std::find_if(w, w + rel.num_edges, [](float x) { return !weighted::Drawable(x); }) - w;
    if (e >= 0 && e < rel.num_edges) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": ", schema.arrays[attr->array].file(), " element [", e, "] is ", w[e],
          " (weights are 0, never drawn, or from 2^-120 to 2^90: keys outside float's range would tie; scale them)"));
    }
    spec.edge_weights[r] = static_cast<int>(attr - rel.edge_attrs.begin());
  }
  return absl::OkStatus();
}

// LABOR-0 with its dependencies. Its batches' edge_weight takes the name of an edge attribute "edge_weight": such
// an attribute is refused where named, and a dataset that has one needs the attributes to carry named (rather
// than one silently standing in for the other).
absl::Status SetLabor(const Draw& draw, const v1::OpenSession& request, const DatasetSchema& schema,
                      SamplingSpec& spec) {
  if (!draw.policy.has_labor()) return absl::OkStatus();
  const v1::LaborDraw& labor = draw.policy.labor();
  if (labor.batch_dependency() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(draw.Field("labor.batch_dependency", "batch_dependency"), " = ",
                                                   labor.batch_dependency(), " (must be 0 or more)"));
  }
  if (absl::c_linear_search(request.edge_attrs().names(), "edge_weight")) {
    return absl::InvalidArgumentError(
        "open.edge_attrs.names: \"edge_weight\" is a LABOR batch's own array (each edge's 1 / inclusion "
        "probability): leave the attribute out");
  }
  for (size_t r = 0; r < spec.edge_attrs.size(); ++r) {
    for (int a : spec.edge_attrs[r]) {
      if (schema.relations[r].edge_attrs[a].name != "edge_weight") continue;
      return absl::InvalidArgumentError(absl::StrCat(
          draw.Field("labor", "labor"), ": ",
          schema.format_version == 1 ? "the dataset" : "relation " + schema.relations[r].key(),
          " has an edge attribute \"edge_weight\", and a LABOR batch's edge_weight is its own (each edge's 1 / "
          "inclusion probability): name the attributes to carry without it (open.edge_attrs; Python: "
          "edge_attrs=[...])"));
    }
  }
  spec.labor = {.active = true,
                .dependency = {.layer = labor.layer_dependency(),
                               .batches = static_cast<uint64_t>(std::max<int64_t>(labor.batch_dependency(), 1))}};
  return absl::OkStatus();
}

// Where a temporal link session's pairs get their times: open.edge_label_time with given pairs, else the
// edge split's times.
absl::Status SetPairTimes(const v1::OpenSession& request, const DatasetSchema& schema, const std::string& field,
                          SessionShape& shape) {
  LinkSeedSpec& seeds = shape.link->seeds;
  if (request.edge_label_time_size() > 0) {
    if (seeds.seed_edges == nullptr || request.edge_label_time_size() * size_t{2} != seeds.seed_edges->size()) {
      return absl::InvalidArgumentError(absl::StrCat("open.edge_label_time has ", request.edge_label_time_size(),
                                                     " times for ",
                                                     seeds.seed_edges == nullptr ? 0 : seeds.seed_edges->size() / 2,
                                                     " seed_edges pairs (one time per given pair)"));
    }
    seeds.seed_edge_times = std::make_shared<const std::vector<int64_t>>(request.edge_label_time().begin(),
                                                                         request.edge_label_time().end());
  } else if (seeds.seed_edges != nullptr || schema.relations[seeds.relation].edge_splits[seeds.edge_split].times < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        field,
        ": the pairs have no times: give open.edge_label_time with seed_edges (PyG's edge_label_time), or an edge "
        "split with times (SPLIT_edge_time.npy, gnnctl import --split-time)"));
  }
  shape.sampling.time.seed_times_given = true;
  return absl::OkStatus();
}

// The temporal rule and disjoint batches (with open.disjoint, seed_times, edge_label_time): the times each
// relation sampled through reads, checked, and where the seeds' (a link session's pairs') times come from.
absl::Status SetTime(const Draw& draw, const v1::OpenSession& request, const DatasetSchema& schema,
                     SessionShape& shape) {
  SamplingSpec& spec = shape.sampling;
  const bool temporal = draw.policy.has_temporal();
  spec.disjoint = request.disjoint() || temporal;
  const std::string& time_attr = draw.policy.temporal().attr();
  const std::string field = absl::StrCat(draw.Field("temporal.attr", "time_attr"), " = ", Quoted(time_attr, 100));
  if (shape.link ? request.seed_times_size() > 0 : request.edge_label_time_size() > 0) {
    return absl::InvalidArgumentError(shape.link ? "open.seed_times are a node session's seeds' times (a link "
                                                   "session's pairs take open.edge_label_time)"
                                                 : "open.edge_label_time are a link session's pairs' times (set "
                                                   "open.seed_edges; seeds take open.seed_times)");
  }
  if (!temporal) {
    if (request.seed_times_size() > 0 || request.edge_label_time_size() > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("open.", request.seed_times_size() > 0 ? "seed_times" : "edge_label_time",
                       " is temporal sampling's: set open.time_attr (or open.draw.temporal)"));
    }
    return absl::OkStatus();
  }
  if (time_attr.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(draw.Field("temporal.attr", "time_attr"),
                                                   " is empty: name the times (\"node_time\" or an edge attribute)"));
  }
  const std::string& strategy = draw.policy.temporal().strategy();
  if (strategy.empty() || strategy == "uniform") {
    spec.time.rule.strategy = TemporalStrategy::kUniform;
  } else if (strategy == "last") {
    spec.time.rule.strategy = TemporalStrategy::kLast;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(draw.Field("temporal.strategy", "temporal_strategy"), " = ",
                                                   Quoted(strategy, 100), " (must be uniform or last)"));
  }
  if (draw.policy.temporal().has_time_window()) {
    const int64_t window = draw.policy.temporal().time_window();
    if (window < 0) {
      return absl::InvalidArgumentError(absl::StrCat(draw.Field("temporal.time_window", "time_window"), " = ", window,
                                                     " (must be 0 or more, in the times' unit)"));
    }
    spec.time.rule.window = window;
  }
  // Node times by their name or the dataset's other name for them (PyG's rule: a node attribute before an edge
  // attribute of the same name).
  const bool node_level =
      time_attr == "node_time" || (!schema.node_time_name.empty() && time_attr == schema.node_time_name);
  spec.time.node_level = node_level;
  if (!node_level) spec.time.edge_times.assign(schema.relations.size(), -1);
  bool timed = false;  // node-level: some relation sampled through has a timed source type
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const RelationSchema& rel = schema.relations[r];
    if (absl::c_all_of(spec.fanouts[r], [](int32_t f) { return f == 0; })) continue;  // never sampled through
    const std::string where = schema.format_version == 1 ? "the dataset" : absl::StrCat("relation ", rel.key());
    if (node_level) {  // an untimed source type is drawn from unfiltered (PyG's rule; TimeArrayOf is -1)
      timed |= schema.node_types[rel.src_type].node_time >= 0;
      continue;
    }
    const auto a = absl::c_find_if(rel.edge_attrs, [&](const auto& e) { return e.name == time_attr; });
    if (a == rel.edge_attrs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", where, " has no such edge attribute (\"node_time\"",
                       schema.node_time_name.empty() ? "" : " or " + Quoted(schema.node_time_name), ": node times)"));
    }
    if (!a->CanTimeDraws()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": times are one int64 an edge; ", where, "'s is ",
                                                     a->dim > 0 ? absl::StrCat(a->dim, " x ") : "",
                                                     DTypeName(a->dtype)));
    }
    spec.time.edge_times[r] = static_cast<int>(a - rel.edge_attrs.begin());
  }
  if (node_level && !timed) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", schema.format_version == 1 ? "the dataset has no" : "none of the node types sampled from has",
        " node times (import them with gnnctl import --node-time)"));
  }
  if (shape.link) return SetPairTimes(request, schema, field, shape);
  // The seeds' times: given with seed ids, else their split's, else their own node times.
  const NodeTypeSchema& seeds = schema.node_types[shape.seed_type];
  if (request.seed_times_size() > 0) {
    if (request.seed_times_size() != request.seed_ids_size()) {
      return absl::InvalidArgumentError(absl::StrCat("open.seed_times has ", request.seed_times_size(), " times for ",
                                                     request.seed_ids_size(), " seed_ids (one time per seed)"));
    }
    spec.time.seed_times_given = true;
  } else if (shape.split_array >= 0) {
    for (size_t s = 0; s < kSplitNames.size(); ++s) {
      if (seeds.splits[s] == shape.split_array && seeds.split_times[s] >= 0) {
        shape.split_times_array = seeds.split_times[s];
        spec.time.seed_times_given = true;
      }
    }
  }
  if (!spec.time.seed_times_given && seeds.node_time < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ": the seeds have no times: give open.seed_times (PyG's input_time), a split with "
                     "times (SPLIT_time.npy), or node times for ",
                     schema.format_version == 1 ? "the dataset" : absl::StrCat("node type '", seeds.name, "'")));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::DrawPolicy> DrawPolicyOf(const v1::OpenSession& request) {
  // The aliases: their field, whether set, the policy they belong to and whether they name it (the others are its
  // settings), in the order errors name them.
  const struct {
    const char* field;
    bool set;
    v1::DrawPolicy::PolicyCase policy;
    bool names_policy;
  } aliases[] = {
      {"weight_attr", !request.weight_attr().empty(), v1::DrawPolicy::kWeighted, true},
      {"time_attr", !request.time_attr().empty(), v1::DrawPolicy::kTemporal, true},
      {"temporal_strategy", !request.temporal_strategy().empty(), v1::DrawPolicy::kTemporal, false},
      {"time_window", request.has_time_window(), v1::DrawPolicy::kTemporal, false},
      {"labor", request.labor(), v1::DrawPolicy::kLabor, true},
      {"layer_dependency", request.layer_dependency(), v1::DrawPolicy::kLabor, false},
      {"batch_dependency", request.batch_dependency() != 0, v1::DrawPolicy::kLabor, false},
  };
  const char* first = nullptr;  // the first policy-naming alias set
  v1::DrawPolicy::PolicyCase named = v1::DrawPolicy::POLICY_NOT_SET;
  for (const auto& alias : aliases) {
    if (!alias.set) continue;
    if (request.has_draw()) {
      return absl::InvalidArgumentError(absl::StrCat("open.draw and open.", alias.field,
                                                     ": give the draw policy once (open.", alias.field,
                                                     " is API 1.x's spelling of a field of open.draw)"));
    }
    if (!alias.names_policy) continue;
    if (first != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("open.", first, " and open.", alias.field, ": two draw policies (a session draws by one)"));
    }
    first = alias.field;
    named = alias.policy;
  }
  if (request.has_draw()) return request.draw();
  // A policy's own fields without it.
  for (const auto& alias : aliases) {
    if (alias.set && alias.policy != named) {
      return absl::InvalidArgumentError(absl::StrCat("open.", alias.field, " is ",
                                                     alias.policy == v1::DrawPolicy::kLabor
                                                         ? "LABOR's: set open.labor"
                                                         : "temporal sampling's: set open.time_attr"));
    }
  }
  v1::DrawPolicy policy;
  switch (named) {
    case v1::DrawPolicy::kWeighted:
      policy.mutable_weighted()->set_attr(request.weight_attr());
      break;
    case v1::DrawPolicy::kTemporal:
      policy.mutable_temporal()->set_attr(request.time_attr());
      policy.mutable_temporal()->set_strategy(request.temporal_strategy());
      if (request.has_time_window()) policy.mutable_temporal()->set_time_window(request.time_window());
      break;
    case v1::DrawPolicy::kLabor:
      policy.mutable_labor()->set_layer_dependency(request.layer_dependency());
      policy.mutable_labor()->set_batch_dependency(request.batch_dependency());
      break;
    default:
      policy.mutable_uniform();
  }
  return policy;
}

absl::Status SetDrawPolicy(const v1::OpenSession& request, const GraphData& graph,
                           const std::vector<int64_t>& first_undrawable, SessionShape& shape) {
  Draw draw{.aliased = !request.has_draw()};
  GNND_ASSIGN_OR_RETURN(draw.policy, DrawPolicyOf(request));
  shape.sampling.neighbors.replace = (draw.policy.has_uniform() && draw.policy.uniform().replace()) ||
                                     (draw.policy.has_weighted() && draw.policy.weighted().replace());
  GNND_RETURN_IF_ERROR(SetEdgeWeights(draw, graph, first_undrawable, shape.sampling));
  GNND_RETURN_IF_ERROR(SetTime(draw, request, graph.schema, shape));
  return SetLabor(draw, request, graph.schema, shape.sampling);
}

}  // namespace gnnd
