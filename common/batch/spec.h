// What a session samples: the one spec of every batch kind (node and link seeds, homogeneous and typed
// datasets). A homogeneous dataset is one node type and one relation; a link session's hop 0 is its pairs'
// endpoints (the seed stage of common/batch/link_batch.h, LinkSeedSpec, fills max_hop0). The hops are a fanout
// per relation and hop; the draw within a node's in-edges is the rule of common/batch/sampling.h.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "common/batch/sampling.h"
#include "common/dataset/schema.h"

namespace gnnd {

inline constexpr int kMaxHops = 16;

// The temporal rule (sampling.h, namespace temporal): which time makes an in-edge a candidate for a seed, and
// how a node draws among its candidates.
struct TimeSpec {
  // node_level: each source node's time (the node_time of every type a sampled relation leaves); else
  // edge_times[r]: relation r's edge attribute (a position in its edge_attrs: int64, one an edge) holding
  // each edge's time, -1 for a relation never sampled through. Neither: no temporal rule.
  bool node_level = false;
  std::vector<int> edge_times;
  temporal::Rule rule;  // how a node draws among its candidates
  // The seeds' times come with them (given with seed ids, or their split's; a link batch's: its pairs'); false:
  // each seed node's own time.
  bool seed_times_given = false;
  bool active() const { return node_level || !edge_times.empty(); }
};

// LABOR-0 (sampling.h, namespace labor) in place of the uniform rule, for every relation: a batch then carries
// each sampled edge's weight (1 / its inclusion probability).
struct LaborSpec {
  bool active = false;
  labor::Dependency dependency;
};

struct SamplingSpec {
  // Node seeds of seed_type a batch (a link batch: its positive pairs, and seed_type is -1).
  int64_t batch_size = 0;
  int seed_type = 0;
  // [relation][hop], every relation the same number of hops; -1: all in-neighbors, 0: none through it.
  std::vector<std::vector<int32_t>> fanouts;
  // The seeds come from a list of ids that may repeat one (kept, as PyG keeps them), not from a split
  // of distinct nodes: a batch may then hold more seed entries, and hop-1 edges, than the graph has.
  bool seeds_may_repeat = false;
  // A link batch: hop 0 holds up to max_hop0[t] distinct nodes of each type t (the endpoints of its pairs).
  std::vector<int64_t> max_hop0;
  // The edge data each batch carries for its sampled edges, of the relations whose edge ids the dataset
  // stores: their e_id (edge_ids), and per relation the rows of these edge attributes (positions in its
  // RelationSchema::edge_attrs; empty, or one list per relation). Carrying an attribute carries e_id too.
  bool edge_ids = false;
  std::vector<std::vector<int>> edge_attrs;
  // The draw policy per relation: the edge attribute (a position in its edge_attrs: 1-D float32, no value
  // negative) whose values weight its draws (sampling.h's weighted rule), or -1 for the uniform rule. Empty:
  // every relation uniform.
  std::vector<int> edge_weights;
  // Each seed's subgraph sampled and deduplicated on its own (PyG's disjoint), the batch carrying each node's
  // subgraph (its "batch" arrays). Every temporal batch is disjoint.
  bool disjoint = false;
  TimeSpec time;
  LaborSpec labor;
  // PyG's subgraph_type="induced": the hops reach the nodes as above, then a batch's edges of each relation are
  // every edge between its nodes rather than the edges drawn: for each destination node in local order, its
  // in-edges in CSC order whose source is in the batch (sampling.h, induced). Not by hop: hop 0's count holds
  // them all. Not with disjoint, temporal or LABOR batches.
  bool induced = false;
  // The uniform and weighted rules' parameters beside the fanouts (sampling.h, namespace neighbors).
  neighbors::Rule neighbors;

  int num_hops() const { return fanouts.empty() ? 0 : static_cast<int>(fanouts[0].size()); }
  // The edge attributes a batch carries of `relation` (none where edge_attrs is empty).
  std::span<const int> EdgeAttributesOf(int relation) const {
    return edge_attrs.empty() ? std::span<const int>() : std::span<const int>(edge_attrs[relation]);
  }
  // The edge attribute weighting `relation`'s draws, -1: none (the uniform rule).
  int WeightOf(int relation) const { return edge_weights.empty() ? -1 : edge_weights[relation]; }
  // Whether a batch carries e_id (and maybe attributes) for `relation`, whose dataset stores edge ids or not.
  bool CarriesEdgeData(int relation, bool stored_ids) const {
    return stored_ids && (edge_ids || !EdgeAttributesOf(relation).empty());
  }
  bool link() const { return seed_type < 0; }
  // A disjoint batch's subgraphs at most: a node batch's seeds, a link batch's endpoints of its most numerous
  // hop-0 type (where endpoints are two types, subgraph i holds entry i of each).
  int64_t MaxSubgraphs() const {
    if (!link()) return batch_size;
    int64_t most = 0;
    for (int64_t n : max_hop0) most = n > most ? n : most;
    return most;
  }
  bool temporal() const { return time.active(); }
  // The edge attribute holding `relation`'s edge times, -1: none (node-level times, or no temporal rule).
  int EdgeTimeOf(int relation) const { return time.edge_times.empty() ? -1 : time.edge_times[relation]; }
  // The schema array of the times the temporal rule reads for `relation` (its edge attribute, indexed by CSC
  // position; or, node-level, its source type's node_time, indexed by source id); -1: not temporal.
  int TimeArrayOf(int relation, const DatasetSchema& schema) const {
    const RelationSchema& r = schema.relations[relation];
    if (time.node_level) return schema.node_types[r.src_type].node_time;
    return EdgeTimeOf(relation) < 0 ? -1 : r.edge_attrs[EdgeTimeOf(relation)].array;
  }
  // A one-type, one-relation dataset's spec.
  static SamplingSpec OneRelation(int64_t batch_size, std::vector<int32_t> hop_fanouts, bool seeds_may_repeat = false) {
    return {.batch_size = batch_size,
            .seed_type = 0,
            .fanouts = {std::move(hop_fanouts)},
            .seeds_may_repeat = seeds_may_repeat,
            .max_hop0 = {},
            .edge_ids = false,
            .edge_attrs = {},
            .edge_weights = {},
            .disjoint = false,
            .time = {},
            .labor = {},
            .induced = false,
            .neighbors = {}};
  }
};

// A homogeneous dataset's fanouts, one per hop: 1 to kMaxHops of them, each -1 or at least 1 (errors name
// "fanouts[h]").
absl::Status CheckHopFanouts(std::span<const int32_t> fanouts);
// Which draw policies (spec.h: uniform, weighted, temporal, LABOR-0) and batch shapes (disjoint, induced)
// combine: the one place that decides it. Errors name the options (OpenSession's and the loaders' names).
absl::Status CheckDrawCombination(const SamplingSpec& spec);
// Checks the spec against the dataset (CheckDrawCombination first): errors name the field ("batch_size = 0 ...",
// "fanouts[author___writes___paper][1] = -3 ..."; a homogeneous dataset's as CheckHopFanouts).
absl::Status CheckSamplingSpec(const SamplingSpec& spec, const DatasetSchema& schema);

}  // namespace gnnd
