// The minibatch of every session: what sampling a dataset (common/dataset/schema.h) gives, for each node type
// and each relation, in one contiguous buffer (a slot):
//   per node type T:   T.node_ids int64[N_T]   ids within T: T's seeds first, then the nodes of T first
//                                               reached at hop 1 sorted by id, hop 2, ...
//                      T.num_nodes_per_hop int32[L+1]
//                      T.features [N_T, D_T]   (types with features)
//                      T.labels int64[S]       (the seed type, when it has labels)
//   per relation R:    R.edge_src / R.edge_dst int32[E_R]   local indices into the source / destination
//                                               type's node_ids, message direction src -> dst, by hop
//                      R.num_edges_per_hop int32[L]
//                      R.e_id int64[E_R]    each edge's original id (its row in the import's input),
//                                           where the dataset stores them and the spec asks for them
//                      R.NAME [E_R, D]      the rows of each edge attribute the spec asks for
//                      R.edge_weight float32[E_R]   a LABOR batch's (spec.labor): 1 / each edge's inclusion
//                                           probability
//   a disjoint batch (spec.disjoint: one subgraph per seed, each deduplicated on its own; a node may then be
//   in several), per node type T:
//                      T.batch int64[N_T]      each node's subgraph, its seed's position (PyG's batch); a
//                                              hop's new nodes are sorted by (subgraph, id)
//                      T.seed_time int64[S]    a temporal batch's seed type: each seed's time
// Each hop's nodes and edges are a prefix of the next hop's (PyG's num_sampled_nodes / num_sampled_edges).
// A homogeneous dataset is its one type and one relation, its arrays placed and named as API 1.0 clients read
// them (common/batch/batch.h). A link batch adds its pair arrays (PairArrays). The spec that sizes a layout:
// common/batch/spec.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/batch_schema.h"
#include "common/batch/link_rule.h"
#include "common/batch/spec.h"
#include "common/dataset/schema.h"

namespace gnnd {

// Upper bounds of one batch, per type and relation (a fanout of -1 bounded by the relation's largest
// in-degree); INVALID_ARGUMENT if a count could outgrow the int32 local indices.
struct BatchCapacity {
  std::vector<int64_t> max_nodes;  // per node type
  std::vector<int64_t> max_edges;  // per relation
  int64_t max_seeds = 0;
  // Per node type, the rows of its features a slot holds: empty for max_nodes (the bound), less when the
  // slots are sized by the batches a session samples (OpenSession.slots_may_grow).
  std::vector<int64_t> feature_rows;
  int64_t FeatureRows(size_t type) const { return feature_rows.empty() ? max_nodes[type] : feature_rows[type]; }
  // Per hop: each type's frontier (nodes it expands) and each relation's edges, at most (what a GPU
  // launch covers).
  struct Hop {
    std::vector<int64_t> frontier;     // per node type
    std::vector<int64_t> edges;        // per relation
    std::vector<int64_t> nodes_after;  // per node type: all its nodes once this hop's new ones are added
  };
  std::vector<Hop> hops;
};
absl::StatusOr<BatchCapacity> ComputeBatchCapacity(const SamplingSpec& spec, const DatasetSchema& schema,
                                                   const std::vector<int64_t>& max_in_degree);
// A LABOR hop's edge bound for a frontier of `frontier` nodes each keeping `expected` in-edges on average (the
// fanout, or the largest in-degree where smaller) and `most` at most (the largest in-degree): 1.5 x the
// expected edges and a margin of 8 standard deviations of a Poisson count, never more than `most` each.
int64_t LaborHopEdges(int64_t frontier, int64_t expected, int64_t most);
// The error of a LABOR batch whose hop `hop` (0-based; < 0: unknown) of `relation` kept more edges than its
// `bound` (< 0: unknown) in every one of labor::kMaxAttempts draws (sources shared by many destinations keep their
// edges together): RESOURCE_EXHAUSTED, naming them and what helps. Such a batch is never handed out: without that hop's
// edges it would be biased.
absl::Status LaborOutgrownError(absl::string_view relation, int hop, int64_t bound);

// A link batch's pair arrays, after its graph arrays (common/batch/link_batch.h; SIZE_MAX where the negative
// mode has none):
//   edge_label_index  int32 (L, 2)   local (source, destination) rows: the positives, then their binary
//                                   negatives, `amount` each in positive order (a trainer views it transposed)
//   edge_label        (L,)           float32 1 / 0, or a labeled split's int64 classes + 1 with 0 for negatives
//   input_id          int64 (P,)     each positive's position in its edge split
//   triplets instead of the first two: src_index, dst_pos_index int32 (P,), dst_neg_index int32 (P, amount)
struct PairArrays {
  int relation = 0;  // the seed edges' relation (names the arrays of a typed dataset)
  int64_t max_positives = 0, max_pairs = 0, amount = 0;
  bool labeled = false;  // edge_label is int64
  size_t edge_label_index = SIZE_MAX, edge_label = SIZE_MAX, input_id = 0;
  size_t src_index = SIZE_MAX, dst_pos_index = SIZE_MAX, dst_neg_index = SIZE_MAX;
  // A temporal batch's edge_label_time: each pair's time (int64; triplets: each positive's).
  size_t edge_label_time = SIZE_MAX;
  double ratio = 0;  // binary negatives as a fraction of the positives (NegativeSpec::ratio), 0: amount each
  // The edge_label_index rows of a batch of `positives` (0 for triplets).
  int64_t pairs(int64_t positives) const {
    if (max_positives == 0) return 0;
    if (ratio > 0) return positives + NegativesAtRatio(positives, ratio);
    return positives * (max_pairs / max_positives);
  }
};

// The one slot layout of every session: byte offsets of every array in one buffer (kBatchAlignment-aligned);
// SIZE_MAX where a type has no such array. A homogeneous dataset's (format_version 1) puts its one type's and
// relation's arrays in the order of common/batch/batch.h, the layout API 1.0 clients check
// (HomogeneousLayoutOf), and keeps that header's array names.
struct BatchLayout {
  // An edge or node attribute's rows: `array` its position in the dataset schema's arrays.
  struct EdgeRows {
    int array = -1;
    size_t offset = 0, row_bytes = 0;
  };
  struct TypeArrays {
    size_t node_ids = 0, num_nodes_per_hop = 0, features = SIZE_MAX, labels = SIZE_MAX;
    size_t feature_row_bytes = 0;
    size_t batch = SIZE_MAX, seed_time = SIZE_MAX;  // a disjoint batch's (PlaceSubgraphData)
    std::vector<EdgeRows> attrs;                    // its node attributes' rows (PlaceNodeData)
  };
  struct RelationArrays {
    size_t edge_src = 0, edge_dst = 0, num_edges_per_hop = 0;
    size_t e_id = SIZE_MAX;         // SIZE_MAX: the batch carries no edge data of this relation
    std::vector<EdgeRows> attrs;    // in the spec's order (SamplingSpec::edge_attrs)
    size_t edge_weight = SIZE_MAX;  // a LABOR batch's: each edge's float32 weight
  };
  int num_hops = 0;
  int seed_type = 0;  // -1: a link batch
  bool homogeneous = false;
  BatchCapacity capacity;
  std::vector<TypeArrays> types;
  std::vector<RelationArrays> relations;
  std::optional<PairArrays> pairs;  // link batches (AddPairArrays)
  size_t total_bytes = 0;

  static BatchLayout Make(const BatchCapacity& capacity, const SamplingSpec& spec, const DatasetSchema& schema);

 private:
  static BatchLayout MakeWithoutEdgeData(const BatchCapacity& capacity, const SamplingSpec& spec,
                                         const DatasetSchema& schema);
};

// The schema of a homogeneous dataset of these sizes, without features or labels (set them to describe some).
DatasetSchema HomogeneousSchema(int64_t num_nodes, int64_t num_edges);

// A homogeneous dataset's bound (num_nodes nodes, num_edges edges, max_in_degree the largest in-degree; `spec`
// one relation's) as the API 1.0 layout has it: ComputeBatchCapacity of its one type and relation.
absl::StatusOr<HomogeneousCapacity> ComputeHomogeneousCapacity(const SamplingSpec& spec, int64_t num_nodes,
                                                               int64_t num_edges, int64_t max_in_degree);

// A homogeneous layout's capacity and offsets as common/batch/batch.h has them (the API 1.0 SlotLayout), its
// total_bytes the whole slot's (with the arrays API 1.0 has not: edge data, pairs); a link batch's hop-0 bound
// as its seeds.
HomogeneousLayout HomogeneousLayoutOf(const BatchLayout& layout);

// Pointers to each array of one buffer laid out by a BatchLayout.
struct BatchView {
  // An edge or node attribute's rows in the buffer, and where they come from (the dataset schema's array).
  struct EdgeRows {
    void* data = nullptr;
    int array = -1;
    size_t row_bytes = 0;
  };
  struct Type {
    int64_t* node_ids = nullptr;
    int32_t* num_nodes_per_hop = nullptr;
    void* features = nullptr;      // null: the type has no features
    int64_t* labels = nullptr;     // null but for the seed type
    int64_t feature_rows = 0;      // rows `features` holds (a batch with more nodes has none of its rows there)
    int64_t* batch = nullptr;      // a disjoint batch's: each node's subgraph (its seed's position)
    int64_t* seed_time = nullptr;  // a temporal node batch's seed type: each seed's time
    std::vector<EdgeRows> attrs;   // its node attributes' rows, gathered by node_ids
  };
  struct Relation {
    int32_t* edge_src = nullptr;
    int32_t* edge_dst = nullptr;
    int32_t* num_edges_per_hop = nullptr;
    // Null: no edge data. While a batch is sampled, each edge's position in the relation's CSC (what
    // the attribute rows are gathered by), then its stored id (GatherEdgeRows).
    int64_t* e_id = nullptr;
    std::vector<EdgeRows> attrs;
    float* edge_weight = nullptr;            // a LABOR batch's: each edge's 1 / its inclusion probability
    std::vector<int64_t> max_edges_per_hop;  // the layout's bound at each hop (empty: unbounded, a legacy view)
  };
  int num_hops = 0;
  std::vector<Type> types;
  std::vector<Relation> relations;

  static BatchView At(void* base, const BatchLayout& layout);
  int64_t num_nodes(int type) const;
  int64_t num_edges(int relation) const;
};

// A homogeneous layout (common/batch/batch.h) as the one-type, one-relation layout of the same offsets.
BatchLayout AsBatchLayout(const HomogeneousLayout& layout);
// A homogeneous batch's arrays as the one-type, one-relation view of them.
BatchView AsBatchView(const HomogeneousView& view);
std::vector<BatchView> AsBatchViews(const std::vector<HomogeneousView>& views);

// What sampling writes (counts, node ids, edges and their data; not features or labels) of `from` into `to`,
// whose layout may differ in features and labels.
void CopyBatchGraph(const BatchView& from, const BatchView& to);
// `schema` as a layout without features, labels and node attributes sees it (a ring entry of the sampling stage).
DatasetSchema WithoutNodeData(DatasetSchema schema);

// The batch schema of a layout. Typed: arrays named "T.node_ids", "R.edge_src", ... (R a relation's key);
// counts "node_hops" (L+1), "edge_hops" (L), per type "T.nodes", "T.nodes_hop0".."T.nodes_hopL" (and
// "T.seeds" for the seed type), per relation "R.edges", "R.edges_hop0".."R.edges_hop(L-1)". Homogeneous:
// HomogeneousBatchSchema's (common/batch/batch_schema.h; a link batch's without labels, and without features
// where the dataset has none). Then a link batch's pair arrays (a typed dataset's named after the seed
// relation as its other arrays are: "author___writes___paper.edge_label_index") and counts "pairs", "positives".
BatchSchema BatchSchemaOf(const BatchLayout& layout, const DatasetSchema& schema);
// ... and each relation's edge data after its other arrays: a LABOR batch's "R.edge_weight" float32, "R.e_id"
// int64 and "R.NAME" per attribute (a homogeneous dataset's "edge_weight", "e_id", "NAME"), counted by the
// relation's edges.
// A batch's count values in that schema's order (`pairs`, `positives`: a link batch's).
std::vector<int64_t> BatchCountsOf(const BatchView& view, const BatchLayout& layout, int64_t pairs = 0,
                                   int64_t positives = 0);

}  // namespace gnnd
