// The reference (CPU) sampler, one for every dataset: the rule of common/batch/sampling.h per relation. At
// each hop, for each relation R in the dataset's order and each frontier node v of R's destination type (in
// frontier order), draw fanout[R][hop] of v's in-neighbors in R uniformly without replacement (-1: all;
// Philox counter (v, R, hop, batch)); the sources first reached at that hop join their type's node list
// sorted by id and are the next hop's frontier of their type. PyG's NeighborLoader semantics (HeteroData's
// for a typed dataset). A homogeneous dataset is the one-type, one-relation case: the HomogeneousView overloads
// sample it into the homogeneous layout (common/batch/batch.h) through the same loop.
#pragma once

#include <cstdint>
#include <span>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "common/batch/batch.h"
#include "common/batch/layout.h"
#include "common/batch/link_seeds.h"
#include "common/batch/sampling.h"
#include "common/dataset/graph.h"
#include "kernels/cpu/draw.h"

namespace gnnd {

// Where a batch's time went (seconds).
struct SampleTimes {
  double sample = 0;  // neighbors, dedup, relabel
  double gather = 0;  // feature rows and labels
};

// Row `ids[i]` of `table` into row i of `out`, for i < n (rows of `row_bytes`): every gather of rows on the host.
// Rows whose id `skip` holds (a GPU tier's) are left as they are.
void CopyRows(const void* table, const int64_t* ids, int64_t n, size_t row_bytes, void* out,
              const std::vector<bool>* skip = nullptr);

// A sampled batch's edge data: each relation's attribute rows at the CSC positions its e_id holds, then
// e_id itself turned into the stored ids (the CUDA backend's gather does the same; relations without e_id
// are left alone).
void GatherEdgeRows(const GraphData& graph, const BatchView& out);
// The same for edges [begin, end) of `relation` alone (which must carry e_id): the rule both the whole batch's
// gather and the host's chunked one (server/sessions/host_row_gather.h) follow.
void GatherEdgeRows(const GraphData& graph, const BatchView::Relation& edges, int relation, int64_t begin, int64_t end);

// Holds per-batch scratch, so use one per thread; output depends only on the inputs.
class CpuSampler {
 public:
  CpuSampler(const GraphData& graph, const SamplingSpec& spec, uint64_t seed);
  // Builds what `spec`'s draw policies read beyond the dataset's arrays (the temporal rule's time orders,
  // GraphData::time_orders, kept with the dataset), so a session fails at its start where memory is short: call
  // it before a spec's first batch (sessions and gnnctl sample do), since a draw has no way to report a failure.
  static absl::Status PrepareDraws(const GraphData& graph, const SamplingSpec& spec);
  // The bytes PrepareDraws would map for `spec`: what it reads not built yet.
  static uint64_t DrawPreparationBytes(const GraphData& graph, const SamplingSpec& spec);

  // Samples around `seeds` (ids of the seed type) for (epoch, batch_index) and writes every array of `out`,
  // laid out for this spec's capacity (ComputeBatchCapacity). `times`, if set, gets the stages' seconds.
  // `seed_times`: a temporal spec's seed times, one per seed, when it says they are given (else each seed
  // node's own time).
  void Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds, const BatchView& out,
              SampleTimes* times = nullptr, std::span<const int64_t> seed_times = {});
  // The sampling stage alone: node ids, edges, their data and counts of `out` (a disjoint batch's subgraph
  // arrays too); features and labels are not touched (a layout without them will do).
  void SampleGraph(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds, const BatchView& out,
                   std::span<const int64_t> seed_times = {});
  // A link batch's sampling stage: hop 0 of each type t is hop0[t] (the unique endpoints of the batch's pairs
  // of that type, link_seeds.h), and no edge of excluded[r] is a sampled edge of relation r, each node still
  // getting min(fanout, in-degree - excluded in-edges). `excluded` is empty or one per relation. A temporal
  // batch's `subgraph_times`: each subgraph's time (LinkSeeds::subgraph_time).
  void SampleLinkGraph(uint64_t epoch, uint64_t batch_index, std::span<const std::span<const int64_t>> hop0,
                       std::span<const EdgeExclusions> excluded, const BatchView& out,
                       std::span<const int64_t> subgraph_times = {});
  // Every type's feature rows of a sampled batch (types whose features are in memory and in the layout), its
  // node attributes' rows, and the seed type's labels (where the layout has them).
  void Gather(const BatchView& out) const;
  // The feature rows alone.
  void GatherFeatures(const BatchView& out) const;
  // The seed type's labels of a sampled batch into its labels array (if it has one).
  void GatherLabels(const BatchView& out) const;
  // Every type's node attribute rows of a sampled batch (those its layout has), by node_ids.
  void GatherNodeAttributes(const BatchView& out) const;

  // Why the last batch sampled could not be made, or OK: a LABOR hop of a relation kept more edges than the
  // slot's bound in every attempt (sampling.h, labor). Its edges at that hop are then left out, so callers
  // must not hand such a batch out: every batch maker checks this after sampling.
  const absl::Status& status() const { return status_; }

  // The same for a homogeneous dataset's batch in its own layout (common/batch/batch.h).
  void Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds, const HomogeneousView& out,
              SampleTimes* times = nullptr);
  void SampleGraph(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds, const HomogeneousView& out);

 private:
  // A relation's draw policy in this spec: the one place on the CPU that picks it.
  using Draw = std::variant<UniformRule, WeightedRule, TemporalRule, LaborRule>;
  Draw DrawOf(int relation);
  // Draws each frontier node's in-neighbors in `relation` at `hop` (frontier [begin, end) of its destination
  // type) by its policy, into the batch's edges and `sampled` (the sources, as NodeKeys).
  template <typename Index>
  void SampleRelation(int relation, int hop, const SamplingKey& key, uint64_t batch_index, const BatchView& out,
                      int64_t frontier_begin, int64_t frontier_end, std::vector<int64_t>& sampled);
  template <typename Index, typename Policy>
  void DrawFrontier(const Policy& policy, int relation, int hop, const SamplingKey& key, uint64_t batch_index,
                    const BatchView& out, int64_t frontier_begin, int64_t frontier_end, std::vector<int64_t>& sampled);
  // An induced batch's edges of `relation` in place of those drawn (sampling.h, induced), once its nodes are known.
  template <typename Index>
  void InduceEdges(int relation, const BatchView& out);
  void SampleFrom(uint64_t epoch, uint64_t batch_index, std::span<const std::span<const int64_t>> hop0,
                  const BatchView& out);
  void SampleAttempt(uint64_t epoch, uint64_t batch_index, std::span<const std::span<const int64_t>> hop0,
                     const BatchView& out);
  // The node table's key of node `id` of type `type` in `subgraph` (a disjoint batch's; else the id).
  int64_t NodeKey(size_t type, int64_t subgraph, int64_t id) const {
    return spec_.disjoint ? subgraph * graph_.schema.node_types[type].num_nodes + id : id;
  }
  // A node's local index from its entry in local_[type]: a seed's index, or -1 - g for the type's g-th node
  // first reached at a hop (its index is known once that hop's new nodes are sorted: fresh_index_).
  int32_t LocalIndex(size_t type, int32_t entry) const { return entry >= 0 ? entry : fresh_index_[type][-1 - entry]; }

  const GraphData& graph_;
  SamplingSpec spec_;
  uint64_t seed_;
  std::vector<absl::flat_hash_map<int64_t, int32_t>> local_;  // per type: NodeKey -> entry (LocalIndex), this batch
  std::vector<std::vector<int32_t>> fresh_index_;             // per type: the local index of its g-th new node
  std::vector<std::vector<int64_t>> reset_;                   // per type: the last batch's keys, to erase
  std::vector<int64_t> seed_times_;                           // a temporal batch's, per subgraph
  SamplingKey labor_key_{};                                   // a LABOR batch's r_t key: its epoch and attempt
  bool labor_overflowed_ = false;                             // this attempt outgrew a hop's bound
  int labor_overflow_relation_ = 0, labor_overflow_hop_ = 0;  // the first that did
  absl::Status status_;                                       // the last batch's (status())
  std::vector<const uint32_t*> time_orders_;                  // per relation: its time order, once fetched
  std::span<const EdgeExclusions> excluded_;                  // a link batch's, while it is sampled
  DrawScratch draw_;
  std::vector<std::span<const int64_t>> seeds_by_type_;  // a node batch's hop 0: its seeds, in their type
  struct Fresh {
    int64_t key;  // NodeKey
    int32_t g;    // the type's g-th new node this batch
  };
  std::vector<Fresh> fresh_;                   // a type's nodes first reached at this hop
  std::vector<std::vector<int64_t>> sampled_;  // per relation: the sources drawn at this hop (NodeKeys)
  std::vector<std::vector<int32_t>> entries_;  // ...and their entries in local_ (LocalIndex)
  std::vector<int64_t> num_nodes_, frontier_begin_, frontier_end_;  // per type, this batch
};

}  // namespace gnnd
