#include "common/batch/link_seeds.h"

#include <algorithm>
#include <tuple>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace gnnd {
namespace {

bool IsRelationEdge(const LinkRelation& r, int64_t src, int64_t dst) {
  return r.wide_indices ? IsEdge(r.indptr, static_cast<const int64_t*>(r.indices), src, dst)
                        : IsEdge(r.indptr, static_cast<const int32_t*>(r.indices), src, dst);
}

// Negative `index` of the batch: a uniform pair, redrawn while strict and an edge. A triplet negative keeps
// `src` (>= 0) and uses the destination of each draw.
absl::StatusOr<NodePair> Negative(SamplingKey key, uint64_t batch, uint64_t index, int64_t src,
                                  const NegativeSpec& spec, const LinkRelation& r) {
  for (uint32_t attempt = 0; attempt < kMaxStrictDraws; ++attempt) {
    NodePair pair = DrawNegative(key, batch, index, attempt, r.num_src, r.num_dst);
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

}  // namespace

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
                           std::span<const int64_t> fixed) {
  const size_t num_positives = src.size();
  const size_t amount = negatives.mode == NegativeMode::kNone ? 0 : static_cast<size_t>(negatives.amount);
  // All pairs in global ids: positives, then binary negatives (or triplet destinations).
  std::vector<int64_t>& all_src = out.src_ids;
  std::vector<int64_t>& all_dst = out.dst_ids;
  all_src.assign(src.begin(), src.end());
  all_dst.assign(dst.begin(), dst.end());
  if (negatives.mode == NegativeMode::kFixed) {
    all_dst.insert(all_dst.end(), fixed.begin(), fixed.begin() + static_cast<ptrdiff_t>(num_positives * amount));
  }
  for (size_t i = 0; i < num_positives && negatives.mode != NegativeMode::kFixed; ++i) {
    for (size_t m = 0; m < amount; ++m) {
      const uint64_t index = i * amount + m;
      const int64_t keep_src = negatives.mode == NegativeMode::kTriplet ? src[i] : -1;
      absl::StatusOr<NodePair> pair = Negative(key, batch, index, keep_src, negatives, relation);
      if (!pair.ok()) return pair.status();
      if (negatives.mode == NegativeMode::kBinary) all_src.push_back(pair->src);
      all_dst.push_back(pair->dst);
    }
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
