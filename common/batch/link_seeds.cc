#include "common/batch/link_seeds.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace gnnd {
namespace {

bool IsRelationEdge(const LinkRelation& r, int64_t src, int64_t dst) {
  return r.wide_indices ? IsEdge(r.indptr, static_cast<const int64_t*>(r.indices), src, dst)
                        : IsEdge(r.indptr, static_cast<const int32_t*>(r.indices), src, dst);
}

// How many of `by_time` (ids sorted by their times) are no newer than `time`; at least 1, the earliest node
// standing in where none is.
int64_t EligibleNodes(const int64_t* times, const int64_t* by_time, int64_t num_nodes, int64_t time) {
  const int64_t* end =
      std::upper_bound(by_time, by_time + num_nodes, time, [times](int64_t t, int64_t id) { return t < times[id]; });
  return std::max<int64_t>(end - by_time, 1);
}

// Negative `index` of the batch: a uniform pair, redrawn while strict and an edge. A triplet negative keeps
// `src` (>= 0) and uses the destination of each draw. Temporal negatives draw ranks among the nodes no newer
// than `time`.
absl::StatusOr<NodePair> Negative(SamplingKey key, uint64_t batch, uint64_t index, int64_t src,
                                  const NegativeSpec& spec, const LinkRelation& r, int64_t time) {
  const bool src_timed = r.src_by_time != nullptr, dst_timed = r.dst_by_time != nullptr;
  const int64_t num_src = src_timed ? EligibleNodes(r.src_times, r.src_by_time, r.num_src, time) : r.num_src;
  const int64_t num_dst = dst_timed ? EligibleNodes(r.dst_times, r.dst_by_time, r.num_dst, time) : r.num_dst;
  for (uint32_t attempt = 0; attempt < kMaxStrictDraws; ++attempt) {
    NodePair pair = DrawNegative(key, batch, index, attempt, num_src, num_dst,
                                 spec.src_weights ? spec.src_weights->data() : nullptr,
                                 spec.dst_weights ? spec.dst_weights->data() : nullptr);
    if (src_timed) pair.src = r.src_by_time[pair.src];
    if (dst_timed) pair.dst = r.dst_by_time[pair.dst];
    if (src >= 0) pair.src = src;
    if (!spec.strict || !IsRelationEdge(r, pair.src, pair.dst)) return pair;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("strict negatives: ", kMaxStrictDraws, " draws for negative ", index, " of batch ", batch,
                   src >= 0 ? absl::StrCat(" (source ", src, ")") : "", " were all edges of ", r.name,
                   ": the graph is too dense for strict negatives (turn strict off)"));
}

// The position of each id in `sorted` (which holds it).
void Localize(const std::vector<int64_t>& sorted, std::span<const int64_t> ids, std::vector<int32_t>& out) {
  out.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    out[i] = static_cast<int32_t>(std::lower_bound(sorted.begin(), sorted.end(), ids[i]) - sorted.begin());
  }
}

void SortUnique(std::vector<int64_t>& ids) {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
}

void Iota(std::vector<int32_t>& out, size_t count, int32_t first) {
  out.resize(count);
  std::iota(out.begin(), out.end(), first);
}

// A disjoint batch's hop 0 and pairs: every endpoint in pair order (negatives by round, MakeLinkSeeds), the
// pairs indexing them in turn; a triplet's negatives of positive i at rows i of dst_neg_index, as PyG's
// arange(...).view(-1, positives).t().
void LayOutDisjoint(const NegativeSpec& negatives, const LinkRelation& relation, size_t num_positives, LinkSeeds& out) {
  const std::vector<int64_t>& all_src = out.src_ids;
  const std::vector<int64_t>& all_dst = out.dst_ids;
  out.src_nodes.assign(all_src.begin(), all_src.end());
  out.dst_nodes.clear();
  if (relation.same_type) {
    out.src_nodes.insert(out.src_nodes.end(), all_dst.begin(), all_dst.end());
  } else {
    out.dst_nodes.assign(all_dst.begin(), all_dst.end());
  }
  const auto dst_first = static_cast<int32_t>(relation.same_type ? all_src.size() : 0);
  out.src_index.clear();
  out.dst_pos_index.clear();
  out.dst_neg_index.clear();
  out.pair_src.clear();
  out.pair_dst.clear();
  if (TripletLayout(negatives.mode)) {
    Iota(out.src_index, num_positives, 0);
    Iota(out.dst_pos_index, num_positives, dst_first);
    const size_t negative_count = all_dst.size() - num_positives;
    const size_t amount = num_positives == 0 ? 0 : negative_count / num_positives;
    out.dst_neg_index.resize(negative_count);
    for (size_t i = 0; i < num_positives; ++i) {
      for (size_t m = 0; m < amount; ++m) {
        out.dst_neg_index[i * amount + m] = dst_first + static_cast<int32_t>(num_positives + m * num_positives + i);
      }
    }
  } else {
    Iota(out.pair_src, all_src.size(), 0);
    Iota(out.pair_dst, all_dst.size(), dst_first);
  }
}

// A temporal batch's times: each pair's and each subgraph's, every one its positive's.
void SetTimes(std::span<const int64_t> times, const NegativeSpec& negatives, const LinkRelation& relation,
              LinkSeeds& out) {
  const size_t p = times.size();
  // The positive of endpoint entry j (negatives by round: negative j - p is positive (j - p) % p's).
  auto positive_time = [&](size_t j) { return j < p ? times[j] : times[(j - p) % p]; };
  out.pair_time.resize(TripletLayout(negatives.mode) ? p : out.src_ids.size());
  for (size_t j = 0; j < out.pair_time.size(); ++j) out.pair_time[j] = positive_time(j);
  out.subgraph_time.clear();
  if (relation.same_type) {  // the sources' subgraphs, then the destinations'
    for (size_t j = 0; j < out.src_ids.size(); ++j) out.subgraph_time.push_back(positive_time(j));
  }
  for (size_t j = 0; j < out.dst_ids.size(); ++j) out.subgraph_time.push_back(positive_time(j));
}

}  // namespace

absl::StatusOr<std::vector<uint64_t>> CumulativeWeights(std::span<const float> weights, absl::string_view name) {
  if (static_cast<int64_t>(weights.size()) > kMaxWeightedNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", weights.size(), " weights (at most ", kMaxWeightedNodes, " nodes are weighted)"));
  }
  float largest = 0;
  for (size_t v = 0; v < weights.size(); ++v) {
    if (!std::isfinite(weights[v]) || weights[v] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", v, "] = ", weights[v], " (weights are finite and at least 0)"));
    }
    largest = std::max(largest, weights[v]);
  }
  if (largest == 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no weight is positive (nothing to draw)"));
  }
  std::vector<uint64_t> cumulative(weights.size());
  uint64_t sum = 0;
  for (size_t v = 0; v < weights.size(); ++v) {
    sum += static_cast<uint64_t>(static_cast<double>(weights[v]) / largest * kWeightScale);
    cumulative[v] = sum;
  }
  return cumulative;
}

std::vector<int64_t> NodesByTime(std::span<const int64_t> times) {
  std::vector<int64_t> ids(times.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::sort(ids.begin(), ids.end(),
            [&](int64_t a, int64_t b) { return std::tie(times[a], a) < std::tie(times[b], b); });
  return ids;
}

void EdgeExclusions::Build(std::span<const int64_t> src, std::span<const int64_t> dst, ExcludeMode mode) {
  pairs_.clear();
  if (mode != ExcludeMode::kNone) {
    for (size_t i = 0; i < src.size(); ++i) {
      pairs_.emplace_back(dst[i], src[i]);
      if (mode == ExcludeMode::kReverse) pairs_.emplace_back(src[i], dst[i]);
    }
  }
  std::sort(pairs_.begin(), pairs_.end());
  pairs_.erase(std::unique(pairs_.begin(), pairs_.end()), pairs_.end());
  dsts_.resize(pairs_.size());
  srcs_.resize(pairs_.size());
  for (size_t i = 0; i < pairs_.size(); ++i) std::tie(dsts_[i], srcs_[i]) = pairs_[i];
}

std::span<const int64_t> EdgeExclusions::Of(int64_t dst) const {
  const auto [first, last] = std::equal_range(dsts_.begin(), dsts_.end(), dst);
  return {srcs_.data() + (first - dsts_.begin()), static_cast<size_t>(last - first)};
}

absl::Status MakeLinkSeeds(SamplingKey key, uint64_t batch, std::span<const int64_t> src, std::span<const int64_t> dst,
                           const NegativeSpec& negatives, const LinkRelation& relation, LinkSeeds& out,
                           std::span<const int64_t> fixed, const LinkSubgraphs& subgraphs) {
  const size_t num_positives = src.size();
  const bool timed = !subgraphs.times.empty();
  const size_t amount = negatives.mode == NegativeMode::kNone ? 0 : static_cast<size_t>(negatives.amount);
  const bool by_round = subgraphs.disjoint || negatives.ratio > 0;
  // All pairs in global ids: positives, then binary negatives (or triplet destinations).
  std::vector<int64_t>& all_src = out.src_ids;
  std::vector<int64_t>& all_dst = out.dst_ids;
  all_src.assign(src.begin(), src.end());
  all_dst.assign(dst.begin(), dst.end());
  // Negative k: positive i's m-th, amount per positive in positive order, or by round (PyG's order: negative k is
  // positive k % P's). Each is drawn by its index i * amount + m, wherever it is placed.
  const auto count = static_cast<size_t>(negatives.Count(static_cast<int64_t>(num_positives)));
  for (size_t k = 0; k < count; ++k) {
    const size_t i = by_round ? k % num_positives : k / amount;
    const size_t m = by_round ? k / num_positives : k % amount;
    if (negatives.mode == NegativeMode::kFixed) {
      all_dst.push_back(fixed[i * amount + m]);
      continue;
    }
    const int64_t keep_src = negatives.mode == NegativeMode::kTriplet ? src[i] : -1;
    const int64_t time = timed ? subgraphs.times[i] : INT64_MAX;
    absl::StatusOr<NodePair> pair = Negative(key, batch, i * amount + m, keep_src, negatives, relation, time);
    if (!pair.ok()) return pair.status();
    if (negatives.mode == NegativeMode::kBinary) all_src.push_back(pair->src);
    all_dst.push_back(pair->dst);
  }
  out.pair_time.clear();
  out.subgraph_time.clear();
  if (timed) SetTimes(subgraphs.times, negatives, relation, out);
  if (subgraphs.disjoint) {
    LayOutDisjoint(negatives, relation, num_positives, out);
    return absl::OkStatus();
  }
  out.src_nodes.assign(all_src.begin(), all_src.end());
  if (relation.same_type) {
    out.src_nodes.insert(out.src_nodes.end(), all_dst.begin(), all_dst.end());
    SortUnique(out.src_nodes);
    out.dst_nodes.clear();
  } else {
    SortUnique(out.src_nodes);
    out.dst_nodes.assign(all_dst.begin(), all_dst.end());
    SortUnique(out.dst_nodes);
  }
  const std::vector<int64_t>& dst_nodes = relation.same_type ? out.src_nodes : out.dst_nodes;
  out.src_index.clear();
  out.dst_pos_index.clear();
  out.dst_neg_index.clear();
  if (TripletLayout(negatives.mode)) {
    Localize(out.src_nodes, src, out.src_index);
    Localize(dst_nodes, dst, out.dst_pos_index);
    Localize(dst_nodes, std::span(all_dst).subspan(num_positives), out.dst_neg_index);
    out.pair_src.clear();
    out.pair_dst.clear();
    return absl::OkStatus();
  }
  Localize(out.src_nodes, all_src, out.pair_src);
  Localize(dst_nodes, all_dst, out.pair_dst);
  return absl::OkStatus();
}

}  // namespace gnnd
