#include "common/batch/spec.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status.h"

namespace gnnd {

absl::Status CheckHopFanouts(std::span<const int32_t> fanouts) {
  if (fanouts.empty() || fanouts.size() > kMaxHops) {
    return absl::InvalidArgumentError(
        absl::StrCat("fanouts has ", fanouts.size(), " entries (need 1 to ", kMaxHops, ", one per hop)"));
  }
  for (size_t h = 0; h < fanouts.size(); ++h) {
    if (fanouts[h] < -1) {  // 0 draws none (PyG's num_neighbors=[0]: the seeds alone)
      return absl::InvalidArgumentError(
          absl::StrCat("fanouts[", h, "] = ", fanouts[h], " (must be -1 for all neighbors, or 0 or more)"));
    }
  }
  return absl::OkStatus();
}

namespace {
absl::Status CheckEdgeData(const SamplingSpec& spec, const DatasetSchema& schema) {
  if (spec.edge_attrs.empty()) return absl::OkStatus();
  if (spec.edge_attrs.size() != schema.relations.size()) {
    return absl::InvalidArgumentError(absl::StrCat("edge attributes for ", spec.edge_attrs.size(),
                                                   " relations, the dataset has ", schema.relations.size()));
  }
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const RelationSchema& rel = schema.relations[r];
    for (int a : spec.edge_attrs[r]) {
      if (a < 0 || a >= static_cast<int>(rel.edge_attrs.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("edge attribute ", a, " of ", rel.key(), " (it has ", rel.edge_attrs.size(), ")"));
      }
      if (rel.edge_ids < 0) {  // the dataset check requires them beside attributes
        return absl::InvalidArgumentError(absl::StrCat(rel.key(), " has edge attributes but no edge ids"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEdgeWeights(const SamplingSpec& spec, const DatasetSchema& schema) {
  if (spec.edge_weights.empty()) return absl::OkStatus();
  if (spec.edge_weights.size() != schema.relations.size()) {
    return absl::InvalidArgumentError(absl::StrCat("edge weights for ", spec.edge_weights.size(),
                                                   " relations, the dataset has ", schema.relations.size()));
  }
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const RelationSchema& rel = schema.relations[r];
    const int a = spec.edge_weights[r];
    if (a == -1) continue;
    if (a < 0 || a >= static_cast<int>(rel.edge_attrs.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("edge weights: attribute ", a, " of ", rel.key(), " (it has ", rel.edge_attrs.size(), ")"));
    }
    const EdgeAttributeSchema& attr = rel.edge_attrs[a];
    if (!attr.CanWeighDraws()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "edge attribute '", attr.name, "' of ", rel.key(), " weighs draws only as one float32 an edge (it is ",
          attr.dim > 0 ? absl::StrCat(attr.dim, " x ") : "", DTypeName(attr.dtype), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckTime(const SamplingSpec& spec, const DatasetSchema& schema) {
  if (spec.disjoint) {
    // A disjoint batch keys its nodes by (subgraph, id) in one int64.
    for (const NodeTypeSchema& type : schema.node_types) {
      if (type.num_nodes > 0 && spec.MaxSubgraphs() > (int64_t{1} << 62) / type.num_nodes) {
        return absl::InvalidArgumentError(absl::StrCat("a disjoint batch of ", spec.MaxSubgraphs(), " subgraphs over ",
                                                       type.num_nodes, " nodes: lower batch_size"));
      }
    }
  }
  const TimeSpec& time = spec.time;
  if (!time.active()) return absl::OkStatus();
  if (time.node_level && !time.edge_times.empty()) {
    return absl::InvalidArgumentError("times of nodes and of edges: the temporal rule reads one of them");
  }
  if (!time.edge_times.empty() && time.edge_times.size() != schema.relations.size()) {
    return absl::InvalidArgumentError(absl::StrCat("edge times for ", time.edge_times.size(),
                                                   " relations, the dataset has ", schema.relations.size()));
  }
  // Node-level: a source type without node times is drawn from unfiltered (PyG's rule), so any will do.
  for (size_t r = 0; r < schema.relations.size() && !time.node_level; ++r) {
    const RelationSchema& rel = schema.relations[r];
    if (std::all_of(spec.fanouts[r].begin(), spec.fanouts[r].end(), [](int32_t f) { return f == 0; })) continue;
    const int a = time.edge_times[r];
    if (a < 0 || a >= static_cast<int>(rel.edge_attrs.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("edge times: attribute ", a, " of ", rel.key(), " (it has ", rel.edge_attrs.size(), ")"));
    }
    const EdgeAttributeSchema& attr = rel.edge_attrs[a];
    if (!attr.CanTimeDraws()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "edge attribute '", attr.name, "' of ", rel.key(), " holds times only as one int64 an edge (it is ",
          attr.dim > 0 ? absl::StrCat(attr.dim, " x ") : "", DTypeName(attr.dtype), ")"));
    }
  }
  if (spec.link() && !time.seed_times_given) {
    return absl::InvalidArgumentError("a temporal link batch's subgraphs take their pairs' times: none came with them");
  }
  if (!spec.link() && !time.seed_times_given && schema.node_types[spec.seed_type].node_time < 0) {
    return absl::InvalidArgumentError(absl::StrCat("the seeds' times: node type '",
                                                   schema.node_types[spec.seed_type].name,
                                                   "' has no node times, and none came with the seeds"));
  }
  return absl::OkStatus();
}
// LABOR-0 (spec.labor) keys nodes by type and id in one word.
absl::Status CheckLabor(const SamplingSpec& spec, const DatasetSchema& schema) {
  if (!spec.labor.active) return absl::OkStatus();
  if (spec.labor.dependency.batches < 1 || spec.labor.dependency.batches > (uint64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        absl::StrCat("labor batch_dependency = ", spec.labor.dependency.batches, " (must be 1 to 2^31)"));
  }
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    if (t > 255 || schema.node_types[t].num_nodes > (int64_t{1} << 48)) {
      return absl::InvalidArgumentError(
          absl::StrCat("LABOR sampling keys nodes by type (below 256) and id (below 2^48): ", "node type '",
                       schema.node_types[t].name, "' is beyond"));
    }
  }
  return absl::OkStatus();
}
}  // namespace

absl::Status CheckDrawCombination(const SamplingSpec& spec) {
  const bool weighted = !spec.edge_weights.empty(), temporal = spec.time.active(), labor = spec.labor.active;
  // A temporal batch is one subgraph per seed: a node's eligible neighbors depend on its seed's time.
  if (temporal && !spec.disjoint) {
    return absl::InvalidArgumentError("time_attr without disjoint: a temporal batch is one subgraph per seed");
  }
  if (weighted && temporal) {
    return absl::UnimplementedError(
        "weight_attr with time_attr: the weighted and temporal rules together are not built (choose one)");
  }
  // LABOR-0 replaces the uniform rule; a destination's kept in-edges share their sources with the hop's other
  // destinations, which a disjoint batch's subgraphs do not.
  if (labor && (weighted || temporal || spec.disjoint)) {
    const char* other = weighted   ? "weight_attr: LABOR sampling with the weighted rule"
                        : temporal ? "time_attr: LABOR sampling with the temporal rule"
                                   : "disjoint: LABOR sampling with disjoint subgraphs";
    return absl::UnimplementedError(absl::StrCat("labor with ", other, " is not built (choose one)"));
  }
  // Induced subgraphs are of one node set: PyG refuses them with disjoint subgraphs, and neither its induced
  // sampling nor gnnd's keeps times or LABOR's per-edge weights.
  if (spec.induced && (spec.disjoint || temporal || labor)) {
    const char* other = temporal        ? "time_attr: induced subgraphs with the temporal rule"
                        : spec.disjoint ? "disjoint: induced subgraphs with disjoint subgraphs"
                                        : "labor: induced subgraphs with LABOR sampling";
    return absl::UnimplementedError(absl::StrCat("induced with ", other,
                                                 " are not built (PyG's induced subgraphs are of one node set, "
                                                 "without times or edge weights)"));
  }
  return absl::OkStatus();
}

absl::Status CheckSamplingSpec(const SamplingSpec& spec, const DatasetSchema& schema) {
  if (spec.batch_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("batch_size = ", spec.batch_size, " (must be at least 1)"));
  }
  const bool link = spec.seed_type == -1 && spec.max_hop0.size() == schema.node_types.size();
  if (!link && (spec.seed_type < 0 || spec.seed_type >= static_cast<int>(schema.node_types.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("seed type ", spec.seed_type, " is not a node type"));
  }
  if (spec.fanouts.size() != schema.relations.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fanouts for ", spec.fanouts.size(), " relations, the dataset has ", schema.relations.size()));
  }
  GNND_RETURN_IF_ERROR(CheckDrawCombination(spec));
  GNND_RETURN_IF_ERROR(CheckEdgeData(spec, schema));
  GNND_RETURN_IF_ERROR(CheckEdgeWeights(spec, schema));
  GNND_RETURN_IF_ERROR(CheckTime(spec, schema));
  GNND_RETURN_IF_ERROR(CheckLabor(spec, schema));
  if (schema.format_version == 1) return CheckHopFanouts(spec.fanouts[0]);
  const size_t hops = spec.fanouts.empty() ? 0 : spec.fanouts[0].size();
  if (hops < 1 || hops > kMaxHops) {
    return absl::InvalidArgumentError(absl::StrCat("fanouts have ", hops, " hops (need 1 to ", kMaxHops, ")"));
  }
  for (size_t r = 0; r < spec.fanouts.size(); ++r) {
    const std::string key = schema.relations[r].key();
    if (spec.fanouts[r].size() != hops) {
      return absl::InvalidArgumentError(
          absl::StrCat("fanouts[", key, "] has ", spec.fanouts[r].size(), " hops, the others ", hops));
    }
    for (size_t h = 0; h < hops; ++h) {
      if (spec.fanouts[r][h] < -1) {
        return absl::InvalidArgumentError(absl::StrCat("fanouts[", key, "][", h, "] = ", spec.fanouts[r][h],
                                                       " (must be -1 for all neighbors, 0 for none, or more)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace gnnd
