// The draws of link prediction, written once for the CPU and CUDA backends (host and device code include
// it), like the neighbor rule in sampling.h:
//  - seed-edge exclusion inside the draw: a node's excluded in-neighbor positions are never chosen and it
//    still gets min(fanout, in-degree - excluded) neighbors (a filter after sampling would leave fewer);
//  - negatives: pair i of a batch, attempt a, is a pure function of (seed, epoch, batch, i, a), each endpoint
//    uniform over its type's nodes or in proportion to per-node weights (PyG's NegativeSampling src_weight /
//    dst_weight, torch.multinomial with replacement).
#pragma once

#include <cmath>
#include <cstdint>

#include "common/base/philox.h"
#include "common/batch/sampling.h"

namespace gnnd {

// The draws a strict negative may take before the session fails, saying the graph is too dense for them: a
// pair that is an edge is redrawn. Where half of all destinations are linked, 64 edges in a row happen with
// probability 2^-64.
inline constexpr uint32_t kMaxStrictDraws = 64;

// ChoosePositions over the positions of [0, degree) that are not excluded: `excluded` lists them ascending
// and distinct (num_excluded of them), and k <= degree - num_excluded distinct allowed positions are
// chosen, ascending. The draws are ChoosePositions' over [0, degree - num_excluded), each rank r then the
// allowed position of rank r, so with nothing excluded it is exactly the neighbor rule. k equal to the
// allowed count takes them all. Under another `rule` (for the hop's fanout): neighbors::ChooseRanks' k ranks,
// mapped the same way.
template <typename Position>
GNND_HOST_DEVICE void ChooseAllowedPositions(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation,
                                             uint64_t node, int64_t degree, const Position* excluded,
                                             int64_t num_excluded, int64_t k, Position* positions, int64_t origin = 0,
                                             neighbors::Rule rule = {}) {
  neighbors::ChooseRanks(rule, key, batch, hop, relation, node, degree - num_excluded, k, positions);
  // The allowed position of rank r is r + (the excluded positions at or below it); ranks ascend, so one
  // merge pass over `excluded` maps them all.
  int64_t skipped = 0;
  for (int64_t i = 0; i < k; ++i) {
    while (skipped < num_excluded && excluded[skipped] - origin <= positions[i] + skipped) ++skipped;
    positions[i] = static_cast<Position>(positions[i] + skipped + origin);
  }
}

// The temporal rule's choice (sampling.h, namespace temporal) among a node's candidates, the ranks [first, end)
// of its time order, less the `excluded` ranks (a link batch's excluded in-edges, ascending and distinct; those
// outside [first, end) are no candidates and are skipped): k of the allowed ranks, uniformly
// (ChooseAllowedPositions over the candidates; also "last" when k takes them all), or with `last` the k highest.
// Returns how many excluded ranks were candidates. Both backends' temporal draws are this, then each rank's order
// entry.
template <typename Position>
GNND_HOST_DEVICE int64_t ChooseTemporalRanks(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation,
                                             uint64_t node, bool last, temporal::Candidates candidates,
                                             const Position* excluded, int64_t num_excluded, int64_t k,
                                             Position* ranks) {
  const auto [first, end] = candidates;
  int64_t before = 0;  // excluded ranks older than the first candidate
  while (before < num_excluded && excluded[before] < first) ++before;
  excluded += before;
  num_excluded -= before;
  int64_t skipped = 0;
  while (skipped < num_excluded && excluded[skipped] < end) ++skipped;
  const int64_t count = end - first;
  if (!last || k == count - skipped) {
    ChooseAllowedPositions(key, batch, hop, relation, node, count, excluded, skipped, k, ranks, first);
    return skipped;
  }
  int64_t rank = end - 1, x = skipped - 1;  // "last": the k highest allowed ranks
  for (int64_t i = 0; i < k; ++i, --rank) {
    for (; x >= 0 && excluded[x] == rank; --x) --rank;
    ranks[i] = static_cast<Position>(rank);
  }
  return skipped;
}

struct NodePair {
  int64_t src, dst;
};

// Binary negatives of a batch of `positives` at a fractional ratio of them (PyG's amount 0.5): PyG's
// math.ceil(P x ratio), in double.
inline int64_t NegativesAtRatio(int64_t positives, double ratio) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(positives) * ratio));
}

// Weighted endpoints: each node's float weight w becomes the integer floor(w / the largest x 2^32) (kWeightScale; a
// node below 2^-32 of the largest is then never drawn), and `cumulative[v]` sums them over nodes 0..v (at most
// 2^30 nodes: sums stay below 2^62). Integers, so that both backends draw the same node from the same word.
inline constexpr double kWeightScale = 4294967296.0;  // 2^32
inline constexpr int64_t kMaxWeightedNodes = int64_t{1} << 30;

// The endpoint a 64-bit random word draws among `nodes`: uniformly, or with `cumulative` (null: uniform) the
// node whose share of the total holds Below64(word, total).
GNND_HOST_DEVICE int64_t DrawEndpoint(uint64_t word, int64_t nodes, const uint64_t* cumulative) {
  if (cumulative == nullptr) return static_cast<int64_t>(Below64(word, static_cast<uint64_t>(nodes)));
  const uint64_t point = Below64(word, cumulative[nodes - 1]);
  int64_t lo = 0, hi = nodes - 1;  // the first node whose cumulative weight exceeds point
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (cumulative[mid] > point) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Negative pair `index` of a batch, draw `attempt` (0, then 1, ... while strict redraws): a source over
// [0, num_src) and a destination over [0, num_dst), each uniform or weighted (DrawEndpoint; src_weights,
// dst_weights: cumulative, null for uniform), both from one Philox block under `key` (RandomPurpose::kNegatives)
// with counter (index, attempt, batch). Triplet negatives keep their positive's source and use the destination
// alone.
GNND_HOST_DEVICE NodePair DrawNegative(SamplingKey key, uint64_t batch, uint64_t index, uint32_t attempt,
                                       int64_t num_src, int64_t num_dst, const uint64_t* src_weights = nullptr,
                                       const uint64_t* dst_weights = nullptr) {
  const Philox4x32 counter = {
      {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(batch), attempt}};
  const Philox4x32 words = Philox4x32_10(counter, key.key0, key.key1);
  const uint64_t first = (static_cast<uint64_t>(words.v[0]) << 32) | words.v[1];
  const uint64_t second = (static_cast<uint64_t>(words.v[2]) << 32) | words.v[3];
  return {DrawEndpoint(first, num_src, src_weights), DrawEndpoint(second, num_dst, dst_weights)};
}

// The positions in dst's in-neighbor list whose source is `src` (parallel edges repeat it), [*first, *last):
// a binary search, CSC lists being sorted by source.
template <typename Index>
GNND_HOST_DEVICE void SourceRange(const int64_t* indptr, const Index* indices, int64_t src, int64_t dst, int64_t* first,
                                  int64_t* last) {
  int64_t lo = indptr[dst], hi = indptr[dst + 1];
  while (lo < hi) {  // the first position with a source >= src
    const int64_t mid = lo + (hi - lo) / 2;
    if (static_cast<int64_t>(indices[mid]) < src) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  int64_t end = lo;
  while (end < indptr[dst + 1] && static_cast<int64_t>(indices[end]) == src) ++end;
  *first = lo - indptr[dst];
  *last = end - indptr[dst];
}

// Whether src -> dst is an edge (what a strict negative must not be).
template <typename Index>
GNND_HOST_DEVICE bool IsEdge(const int64_t* indptr, const Index* indices, int64_t src, int64_t dst) {
  int64_t first = 0, last = 0;
  SourceRange(indptr, indices, src, dst, &first, &last);
  return first < last;
}

}  // namespace gnnd
