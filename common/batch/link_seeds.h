// The seed side of a link-prediction batch, as PyG's LinkNeighborLoader defines it: a batch's positive
// pairs (seed edges), the negatives drawn for them (link_rule.h), and the hop-0 nodes they give, the unique
// endpoints in ascending id order, with every pair in local indices. One implementation for every backend
// that fills a link batch; a pure function of (key, batch index, pairs).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/batch/link_rule.h"

namespace gnnd {

enum class NegativeMode : uint8_t {
  kNone,
  kBinary,   // `amount` pairs per positive, source and destination both uniform: label 0
  kTriplet,  // `amount` destinations per positive, its source kept
  kFixed,    // the edge split's fixed negative destinations of each positive (evaluation), laid out as triplets
};

// Whether a batch's pairs are triplets (src_index, dst_pos_index, dst_neg_index) rather than edge_label_index.
inline bool TripletLayout(NegativeMode mode) { return mode == NegativeMode::kTriplet || mode == NegativeMode::kFixed; }

struct NegativeSpec {
  NegativeMode mode = NegativeMode::kNone;
  int32_t amount = 1;   // per positive; with a ratio, ceil(ratio): the most any positive gets
  bool strict = false;  // a drawn pair that is an edge is redrawn
  // Binary negatives as a fraction of a batch's positives (PyG's fractional amount, e.g. 0.5): ceil(P x ratio) of
  // P positives (PyG's math.ceil, in double), by round (negative k is positive k % P's). 0: amount per positive.
  double ratio = 0;
  // Weighted endpoints (PyG's NegativeSampling src_weight / dst_weight): each endpoint type's cumulative integer
  // weights (link_rule.h, DrawEndpoint; CumulativeWeights), null: uniform. Triplets draw no source (src_weights
  // unused, as PyG's).
  std::shared_ptr<const std::vector<uint64_t>> src_weights, dst_weights;
  // The negatives of a batch of `positives`.
  int64_t Count(int64_t positives) const {
    if (mode == NegativeMode::kNone) return 0;
    return ratio > 0 ? NegativesAtRatio(positives, ratio) : positives * amount;
  }
};

// The relation the seed edges belong to: its CSC (for strict negatives) and its endpoint types' sizes.
// same_type: source and destination are one node type, so the endpoints share one list of hop-0 nodes.
struct LinkRelation {
  const int64_t* indptr = nullptr;
  const void* indices = nullptr;
  bool wide_indices = false;
  int64_t num_src = 0, num_dst = 0;
  bool same_type = true;
  std::string name;  // for errors
  // Temporal negatives (node-level times): each endpoint type's node times and its nodes sorted by (time, id)
  // (NodesByTime); null: negatives drawn among all nodes.
  const int64_t *src_times = nullptr, *dst_times = nullptr;
  const int64_t *src_by_time = nullptr, *dst_by_time = nullptr;
};

// The cumulative integer weights of `weights` (one float a node; link_rule.h, kWeightScale): INVALID_ARGUMENT
// naming `name` and the first bad element where one is negative or not finite, where none is positive, or where
// there are more than kMaxWeightedNodes.
absl::StatusOr<std::vector<uint64_t>> CumulativeWeights(std::span<const float> weights, absl::string_view name);

// The ids [0, times.size()) sorted by (times[id], id): what temporal negatives draw ranks in.
std::vector<int64_t> NodesByTime(std::span<const int64_t> times);

// A disjoint link batch (PyG's disjoint=True; every temporal one): each endpoint its own subgraph, in pair
// order, not deduplicated. `times`: the positives' times (a temporal batch's; empty otherwise): every pair and
// negative takes its positive's, and so do their endpoints' subgraphs.
struct LinkSubgraphs {
  bool disjoint = false;
  std::span<const int64_t> times;
};

struct LinkSeeds {
  // Hop-0 nodes, ascending: one list when the relation's endpoints are one type, else the source type's
  // in src_nodes and the destination type's in dst_nodes.
  std::vector<int64_t> src_nodes, dst_nodes;
  // edge_label_index in local indices: the positives, then (binary) their negatives, amount per positive
  // in positive order. Sources index src_nodes, destinations dst_nodes (the same list when same_type).
  std::vector<int32_t> pair_src, pair_dst;
  // Triplet: the positive's source and destination, and its `amount` negative destinations.
  std::vector<int32_t> src_index, dst_pos_index, dst_neg_index;
  // Every pair in global ids (positives, then negatives; triplets: destinations only past the positives'),
  // kept so that a batch allocates nothing once the vectors have grown.
  std::vector<int64_t> src_ids, dst_ids;
  // A temporal batch's: each pair's time (edge_label_time: the positives', then each negative its positive's;
  // triplets: the positives'), and each subgraph's (its seed's) time, as the sampler takes them.
  std::vector<int64_t> pair_time, subgraph_time;
};

// Seed-edge exclusion: which graph edges a link batch never samples (link_rule.h draws around them).
enum class ExcludeMode : uint8_t {
  kNone,
  kSelf,     // every graph edge u -> v where (u, v) is a positive pair of the batch
  kReverse,  // those and v -> u (a homogeneous graph's reverse edge)
};

// The excluded edges of one batch, as (destination, source) pairs sorted and distinct: the sources of a
// destination lie side by side, ascending. Kept per sampler and refilled per batch, so it allocates only
// while batches grow.
class EdgeExclusions {
 public:
  // Made from a batch's positive pairs (src[i], dst[i]).
  void Build(std::span<const int64_t> src, std::span<const int64_t> dst, ExcludeMode mode);
  bool empty() const { return dsts_.empty(); }
  // The excluded sources of `dst`, ascending (empty when it has none).
  std::span<const int64_t> Of(int64_t dst) const;
  // All of them: destinations ascending, each one's sources ascending (what a GPU sampler uploads).
  std::span<const int64_t> dsts() const { return dsts_; }
  std::span<const int64_t> srcs() const { return srcs_; }

 private:
  std::vector<std::pair<int64_t, int64_t>> pairs_;  // scratch of Build
  std::vector<int64_t> dsts_, srcs_;                // pairs_ sorted, as two columns
};

// Draws the negatives of positive pairs (src[i], dst[i]) under `key` (RandomPurpose::kNegatives) for global
// batch index `batch`, and lays the batch's seed side out in `out`. A strict negative still an edge after
// kMaxStrictDraws draws fails with FAILED_PRECONDITION naming the pair. kFixed takes positive i's negative
// destinations from fixed[i * amount, (i + 1) * amount) instead of drawing them. Negative k of a batch of P
// positives is positive i's m-th (i = k / amount, m = k % amount), or by round (i = k % P, m = k / P) in a disjoint
// batch or with a ratio; each is drawn by its index i * amount + m, wherever it is placed.
// Temporal negatives (relation.dst_by_time set) draw, with the same words, a rank among the nodes no newer
// than their positive (both endpoints of a binary pair; the earliest node where none is, as PyG falls back),
// so each is uniform over those nodes. A disjoint batch's hop 0 is every endpoint in pair order (one list:
// sources, then destinations, where both are one type; else src_nodes[i] and dst_nodes[i] share subgraph i),
// its negatives by round as PyG's (negative j of P positives is positive j % P's: the first negative of every
// positive, then the second), and its pairs index it as PyG's arange does.
absl::Status MakeLinkSeeds(SamplingKey key, uint64_t batch, std::span<const int64_t> src, std::span<const int64_t> dst,
                           const NegativeSpec& negatives, const LinkRelation& relation, LinkSeeds& out,
                           std::span<const int64_t> fixed = {}, const LinkSubgraphs& subgraphs = {});

}  // namespace gnnd
