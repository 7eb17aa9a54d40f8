// The typed minibatch: what sampling a typed dataset (common/dataset/schema.h) gives, for each node type
// and each relation, in one contiguous buffer:
//   per node type T:   T.node_ids int64[N_T]   ids within T: T's seeds first, then the nodes of T first
//                                               reached at hop 1 sorted by id, hop 2, ...
//                      T.num_nodes_per_hop int32[L+1]
//                      T.features [N_T, D_T]   (types with features)
//                      T.labels int64[S]       (the seed type, when it has labels)
//   per relation R:    R.edge_src / R.edge_dst int32[E_R]   local indices into the source / destination
//                                               type's node_ids, message direction src -> dst, by hop
//                      R.num_edges_per_hop int32[L]
// Each hop's nodes and edges are a prefix of the next hop's (PyG's num_sampled_nodes / num_sampled_edges).
// A one-type, one-relation dataset gives the homogeneous batch's values (common/batch/batch.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/batch_schema.h"
#include "common/dataset/schema.h"

namespace gnnd {

// What a typed session asks for: seeds of one node type, fanouts per relation and hop ([relation][hop],
// every relation the same number of hops; -1: all in-neighbors, 0: none through that relation).
struct TypedSamplingSpec {
  int64_t batch_size = 0;
  int seed_type = 0;
  std::vector<std::vector<int32_t>> fanouts;
  bool seeds_may_repeat = false;
  // Link batches (common/batch/link_batch.h): seed_type is -1, and hop 0 holds up to max_hop0[t] distinct
  // nodes of each type t (the endpoints of the batch's pairs); batch_size is the pairs' positives.
  std::vector<int64_t> max_hop0;

  int num_hops() const { return fanouts.empty() ? 0 : static_cast<int>(fanouts[0].size()); }
};
// A homogeneous session's spec as the one-type, one-relation dataset's.
TypedSamplingSpec AsTypedSpec(const SamplingSpec& spec);
// Checks the spec against the dataset: errors name the field ("fanouts[author___writes___paper][1] = -3").
absl::Status CheckTypedSamplingSpec(const TypedSamplingSpec& spec, const DatasetSchema& schema);

// Upper bounds of one batch, per type and relation (a fanout of -1 bounded by the relation's largest
// in-degree); INVALID_ARGUMENT if a count could outgrow the int32 local indices.
struct TypedCapacity {
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
    std::vector<int64_t> frontier;  // per node type
    std::vector<int64_t> edges;     // per relation
  };
  std::vector<Hop> hops;
};
absl::StatusOr<TypedCapacity> ComputeTypedCapacity(const TypedSamplingSpec& spec, const DatasetSchema& schema,
                                                   const std::vector<int64_t>& max_in_degree);

// Byte offsets of every array in one buffer (kBatchAlignment-aligned, as BatchLayout's); SIZE_MAX where a
// type has no such array.
struct TypedBatchLayout {
  struct TypeArrays {
    size_t node_ids = 0, num_nodes_per_hop = 0, features = SIZE_MAX, labels = SIZE_MAX;
    size_t feature_row_bytes = 0;
  };
  struct RelationArrays {
    size_t edge_src = 0, edge_dst = 0, num_edges_per_hop = 0;
  };
  int num_hops = 0;
  int seed_type = 0;
  TypedCapacity capacity;
  std::vector<TypeArrays> types;
  std::vector<RelationArrays> relations;
  size_t total_bytes = 0;

  static TypedBatchLayout Make(const TypedCapacity& capacity, const TypedSamplingSpec& spec,
                               const DatasetSchema& schema);
};

// Typed pointers into one buffer laid out by a TypedBatchLayout.
struct TypedBatchView {
  struct Type {
    int64_t* node_ids = nullptr;
    int32_t* num_nodes_per_hop = nullptr;
    void* features = nullptr;   // null: the type has no features
    int64_t* labels = nullptr;  // null but for the seed type
    int64_t feature_rows = 0;   // rows `features` holds (a batch with more nodes has none of its rows there)
  };
  struct Relation {
    int32_t* edge_src = nullptr;
    int32_t* edge_dst = nullptr;
    int32_t* num_edges_per_hop = nullptr;
  };
  int num_hops = 0;
  std::vector<Type> types;
  std::vector<Relation> relations;

  static TypedBatchView At(void* base, const TypedBatchLayout& layout);
  int64_t num_nodes(int type) const;
  int64_t num_edges(int relation) const;
};

// A homogeneous layout (common/batch/batch.h) as the one-type, one-relation typed layout of the same offsets.
TypedBatchLayout AsTypedLayout(const BatchLayout& layout);
// A homogeneous batch's arrays as the one-type, one-relation typed view of them.
TypedBatchView AsTypedView(const BatchView& view);
std::vector<TypedBatchView> AsTypedViews(const std::vector<BatchView>& views);

// What sampling writes (counts, node ids, edges; not features or labels) of `from` into `to`, whose layout
// may differ in features and labels.
void CopyTypedBatchGraph(const TypedBatchView& from, const TypedBatchView& to);
// `schema` as a layout without features and labels sees it (a ring entry of the sampling stage).
DatasetSchema WithoutNodeData(DatasetSchema schema);

// The batch schema of a typed layout: arrays named "T.node_ids", "R.edge_src", ... (R a relation's key);
// counts "node_hops" (L+1), "edge_hops" (L), per type "T.nodes", "T.nodes_hop0".."T.nodes_hopL" (and
// "T.seeds" for the seed type), per relation "R.edges", "R.edges_hop0".."R.edges_hop(L-1)".
BatchSchema TypedBatchSchema(const TypedBatchLayout& layout, const DatasetSchema& schema);
// A batch's count values in that schema's order.
std::vector<int64_t> TypedBatchCounts(const TypedBatchView& view, int seed_type);

}  // namespace gnnd
