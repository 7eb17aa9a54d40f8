// A link-prediction session's seed stage: which pairs it asks for (LinkSeedSpec, checked once against the
// dataset), their negatives and excluded edges, and the pair arrays PyG's LinkNeighborLoader yields after
// the batch's graph arrays (PairArrays, common/batch/layout.h).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/limits.h"
#include "common/batch/batch.h"
#include "common/batch/batch_schema.h"
#include "common/batch/layout.h"
#include "common/batch/link_seeds.h"
#include "common/dataset/graph.h"
#include "common/dataset/schema.h"

namespace gnnd {

// Temporal negatives' index: the seed relation's endpoint types' nodes sorted by (time, id) (NodesByTime;
// empty for a type without node times, whose negatives are drawn among all its nodes; dst empty where both
// ends are one type).
struct NodesByTimeIndex {
  std::vector<int64_t> src, dst;
};

struct LinkSeedSpec {
  int relation = 0;    // the seed edges' relation (a position in the dataset schema's relations)
  int edge_split = 0;  // a position in kSplitNames: the relation's split the positives come from
  // Or given pairs: E sources, then E destinations (ids of the relation's source and destination types,
  // checked), no labels. Shared by the samplers.
  std::shared_ptr<const std::vector<int64_t>> seed_edges;
  NegativeSpec negatives;
  ExcludeMode exclude = ExcludeMode::kNone;
  // A temporal session's given pairs' times (PyG's edge_label_time), one per pair; an edge split's are its
  // SPLIT_edge_time array.
  std::shared_ptr<const std::vector<int64_t>> seed_edge_times;
  // Temporal negatives' index (NodesByTimeOf), made once per session and shared by its stages; a stage
  // without it makes its own.
  std::shared_ptr<const NodesByTimeIndex> negatives_by_time;
};

// "binary" -> kBinary, ...; anything else INVALID_ARGUMENT naming `field`.
absl::StatusOr<NegativeMode> ParseNegativeMode(absl::string_view mode, absl::string_view field);
absl::StatusOr<ExcludeMode> ParseExcludeMode(absl::string_view mode, absl::string_view field);
// The position in kSplitNames of an edge split's name.
absl::StatusOr<int> ParseEdgeSplit(absl::string_view split, absl::string_view field);

// Pairs given to a link session at most (their ids fill a 64 MiB request).
inline constexpr int64_t kMaxSeedEdges = int64_t{4} << 20;
// Given seed pairs (E sources, then E destinations): 1 to kMaxSeedEdges pairs, sources below num_src and
// destinations below num_dst (errors call them `src_what` / `dst_what` ids).
absl::Status CheckSeedEdges(std::span<const int64_t> seed_edges, int64_t num_src, int64_t num_dst,
                            absl::string_view prefix, absl::string_view src_what = "node",
                            absl::string_view dst_what = "node");
// Checks the spec against the dataset: the relation exists and has the edge split, an amount of 1 to
// kMaxNegativeAmount, no triplets of a labeled split (as PyG), a reverse relation for exclude = reverse on a
// typed relation between two types. Errors name the request's fields with `prefix` ("open."). Fanouts are
// checked with the sampling spec they give.
absl::Status CheckLinkSeedSpec(const LinkSeedSpec& spec, const DatasetSchema& schema, absl::string_view prefix);

// The relations holding the reverses of `relation`'s edges (u -> v reversed is v -> u): the relation itself
// where its source and destination are one type, and (dst, rev_NAME, src) or, for a rev_NAME relation,
// (dst, NAME, src), as PyG's ToUndirected and `gnnctl import --add-reverse` name them.
std::vector<int> ReverseRelations(const DatasetSchema& schema, int relation);

// A link session's sampling spec: hop 0 of every type the endpoints of up to `max_positives` pairs (and their
// negatives) may take (seed type -1, no labels), then `fanouts` ([relation][hop]).
SamplingSpec LinkSampling(const LinkSeedSpec& spec, std::vector<std::vector<int32_t>> fanouts,
                          const DatasetSchema& schema, int64_t max_positives);

// The batch's excluded edges per relation (one EdgeExclusions each; all empty for ExcludeMode::kNone), made
// from its positive pairs (src[i], dst[i]) of spec.relation: that relation's u -> v (and its reverse
// relations' v -> u for kReverse, ReverseRelations).
void BuildRelationExclusions(const DatasetSchema& schema, int relation, ExcludeMode mode, std::span<const int64_t> src,
                             std::span<const int64_t> dst, std::vector<EdgeExclusions>& out);

// A link session's positives: its seed edges, (2, size) (the split's, or the given pairs), and a labeled
// split's classes (null otherwise).
struct LinkSeedEdges {
  const int64_t* edges = nullptr;
  const int64_t* labels = nullptr;
  int64_t size = 0;
  const int64_t* negatives = nullptr;  // the split's fixed negative destinations, (size, negatives_per_edge)
  int64_t negatives_per_edge = 0;
  const int64_t* times = nullptr;  // each positive's time (the split's, or the given pairs'), where there are
  int64_t label_shift = 0;         // added to the split's classes in edge_label (LabelShift)
};
LinkSeedEdges SeedEdgesOf(const LinkSeedSpec& spec, const GraphData& graph);
// The fixed negatives of the positives at `input_id` (MakeLinkSeeds' `fixed`), one row after another.
void FixedNegatives(const LinkSeedEdges& positives, std::span<const int64_t> input_id, std::vector<int64_t>& out);
// The times of the positives at `input_id` (MakeLinkSeeds' LinkSubgraphs::times); none where they have none.
void PositiveTimes(const LinkSeedEdges& positives, std::span<const int64_t> input_id, std::vector<int64_t>& out);
// The seed relation as MakeLinkSeeds draws and checks negatives in it.
LinkRelation LinkRelationOf(const GraphData& graph, int relation);
// The index a session of `spec` sampling by `sampling` draws its negatives with: the spec's, else made now, where
// it reads node times (PyG draws negatives among the nodes no newer than their pair then); null otherwise.
std::shared_ptr<const NodesByTimeIndex> NodesByTimeOf(const GraphData& graph, const LinkSeedSpec& spec,
                                                      const SamplingSpec& sampling);
// Its bytes (0 where a session draws no temporal negatives): what a session holds for it.
uint64_t NodesByTimeBytes(const DatasetSchema& schema, int relation, const SamplingSpec& sampling);
// The seed relation with temporal negatives drawn by `by_time` (null: none), which it points into: keep it
// while the relation is used.
LinkRelation LinkRelationOf(const GraphData& graph, int relation, const NodesByTimeIndex* by_time);

// The hop-0 nodes a batch of `pairs` positives can have at most: every endpoint of every pair distinct.
int64_t MaxLinkSeeds(int64_t pairs, const NegativeSpec& negatives);

// Places the pair arrays of batches of up to `max_positives` positives of `relation` after `layout`'s graph
// arrays (layout.pairs, total_bytes); `timed`: with edge_label_time.
void AddPairArrays(BatchLayout& layout, int relation, int64_t max_positives, const NegativeSpec& negatives,
                   bool labeled, bool timed = false);

// What a labeled split's classes are shifted by in edge_label, as PyG's loaders do: up by one beside binary
// negatives (which take 0) when the split's classes start at 0; else not at all.
int64_t LabelShift(NegativeMode mode, const int64_t* labels, int64_t count);
// A labeled split's edge_label for the positives at `input_id` and their binary negatives: the positives'
// classes plus `shift` (LabelShift), then pairs - positives zeros, `pairs` values to `out`.
void LabeledEdgeLabels(const int64_t* split_labels, std::span<const int64_t> input_id, int64_t shift, int64_t pairs,
                       int64_t* out);

}  // namespace gnnd
