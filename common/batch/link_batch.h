// A link-prediction session's batch: what it asks for (LinkSamplingSpec, checked once against the dataset)
// and one slot's layout, the node batch's graph arrays (common/batch/batch.h, without labels) followed by
// the pair arrays PyG's LinkNeighborLoader yields:
//   edge_label_index  int32 (L, 2)   local (source, destination) rows: the positives, then their binary
//                                   negatives, `amount` each in positive order (a trainer views it transposed)
//   edge_label        (L,)           float32 1 / 0, or a labeled split's int64 classes + 1 with 0 for negatives
//   input_id          int64 (P,)     each positive's position in its edge split
//   triplets instead of the first two: src_index, dst_pos_index int32 (P,), dst_neg_index int32 (P, amount)
// Counts: the node batch's, then "pairs" (L), "positives" (P).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/limits.h"
#include "common/batch/batch.h"
#include "common/batch/batch_schema.h"
#include "common/batch/link_seeds.h"
#include "common/batch/typed_batch.h"
#include "common/dataset/graph.h"
#include "common/dataset/schema.h"

namespace gnnd {

struct LinkSamplingSpec {
  int relation = 0;    // the seed edges' relation (a position in the dataset schema's relations)
  int edge_split = 0;  // a position in kSplitNames: the relation's split the positives come from
  // Or given pairs: E sources, then E destinations (ids of the relation's source and destination types,
  // checked), no labels. Shared by the samplers.
  std::shared_ptr<const std::vector<int64_t>> seed_edges;
  std::vector<int32_t> fanouts;                        // homogeneous datasets
  std::vector<std::vector<int32_t>> relation_fanouts;  // typed datasets: [relation][hop]
  NegativeSpec negatives;
  ExcludeMode exclude = ExcludeMode::kNone;
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
absl::Status CheckLinkSamplingSpec(const LinkSamplingSpec& spec, const DatasetSchema& schema, absl::string_view prefix);

// The relations holding the reverses of `relation`'s edges (u -> v reversed is v -> u): the relation itself
// where its source and destination are one type, and (dst, rev_NAME, src) or, for a rev_NAME relation,
// (dst, NAME, src), as PyG's ToUndirected and `gnnctl import --add-reverse` name them.
std::vector<int> ReverseRelations(const DatasetSchema& schema, int relation);

// A link batch as the sampler sees it: hop 0 of every type the pairs' endpoints may take (no seed type, no
// labels), fanouts per relation (a homogeneous dataset's one relation: spec.fanouts).
TypedSamplingSpec TypedLinkSampling(const LinkSamplingSpec& spec, const DatasetSchema& schema, int64_t max_positives);

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
};
LinkSeedEdges SeedEdgesOf(const LinkSamplingSpec& spec, const GraphData& graph);
// The fixed negatives of the positives at `input_id` (MakeLinkSeeds' `fixed`), one row after another.
void FixedNegatives(const LinkSeedEdges& positives, std::span<const int64_t> input_id, std::vector<int64_t>& out);
// The seed relation as MakeLinkSeeds draws and checks negatives in it.
LinkRelation LinkRelationOf(const GraphData& graph, int relation);

// The hop-0 nodes a batch of `pairs` positives can have at most: every endpoint of every pair distinct.
int64_t MaxLinkSeeds(int64_t pairs, const NegativeSpec& negatives);

// Byte offsets of the pair arrays, after the graph arrays of `graph` (SIZE_MAX where the mode has none).
struct LinkBatchLayout {
  BatchLayout graph;  // sized for MaxLinkSeeds(max_positives) hop-0 nodes; its labels are unused
  int64_t max_positives = 0, max_pairs = 0, amount = 0;
  bool labeled = false;  // edge_label is int64
  size_t edge_label_index = SIZE_MAX, edge_label = SIZE_MAX, input_id = 0;
  size_t src_index = SIZE_MAX, dst_pos_index = SIZE_MAX, dst_neg_index = SIZE_MAX;
  size_t total_bytes = 0;

  static LinkBatchLayout Make(const BatchLayout& graph, int64_t max_positives, const LinkSamplingSpec& spec,
                              bool labeled);
  // After a typed batch's arrays (graph_bytes of them; `graph` is unused).
  static LinkBatchLayout Make(size_t graph_bytes, int64_t max_positives, const LinkSamplingSpec& spec, bool labeled);
  // The edge_label_index rows of a batch of `positives` (0 for triplets).
  int64_t pairs(int64_t positives) const { return max_positives > 0 ? positives * (max_pairs / max_positives) : 0; }
};

// A labeled split's edge_label for the positives at `input_id` and their binary negatives, as PyG gives it:
// the positives' classes, shifted up by one when binary negatives take 0. Writes `pairs` values to `out`
// (the positives, then pairs - positives zeros).
void LabeledEdgeLabels(const int64_t* split_labels, std::span<const int64_t> input_id, NegativeMode mode, int64_t pairs,
                       int64_t* out);

BatchSchema LinkBatchSchema(const LinkBatchLayout& layout, int64_t feature_dim, DType feature_dtype);
// A typed dataset's: the typed batch's arrays (TypedBatchSchema), then the pair arrays named after the seed
// relation as its other arrays are ("author___writes___paper.edge_label_index", ...).
BatchSchema TypedLinkBatchSchema(const LinkBatchLayout& layout, const TypedBatchLayout& typed,
                                 const DatasetSchema& schema, int relation);
// A batch's count values in that schema's order.
std::vector<int64_t> LinkBatchCounts(const BatchView& graph, int64_t pairs, int64_t positives);
std::vector<int64_t> TypedLinkBatchCounts(const TypedBatchView& graph, int64_t pairs, int64_t positives);

}  // namespace gnnd
