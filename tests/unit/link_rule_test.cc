// The link-prediction draws of common/batch/link_rule.h: exclusion inside the neighbor draw (exact
// counts, never an excluded position, uniform over the rest, the plain rule when nothing is excluded),
// uniform and independent negative pairs, and the edge lookups strict negatives and exclusion use.
#include "common/batch/link_rule.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/batch/link_seeds.h"
#include "gtest/gtest.h"

namespace gnnd {
namespace {

constexpr SamplingKey kKey = {0x1234567u, 0x89abcdefu};

// Pearson's statistic of `counts` against equal expected counts.
double ChiSquare(const std::vector<int64_t>& counts) {
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  const double expected = static_cast<double>(total) / counts.size();
  double chi = 0;
  for (int64_t c : counts) chi += (c - expected) * (c - expected) / expected;
  return chi;
}

TEST(LinkRule, NothingExcludedIsTheNeighborRule) {
  for (int64_t degree : {1, 2, 7, 40, 1000}) {
    for (int64_t k : {int64_t{1}, degree / 2, degree - 1}) {
      if (k < 1 || k >= degree) continue;
      for (uint64_t node : {0ull, 5ull, (1ull << 40) + 3}) {
        std::vector<int64_t> plain(k), allowed(k);
        ChoosePositions(kKey, 9, 2, 1, node, degree, k, plain.data());
        ChooseAllowedPositions<int64_t>(kKey, 9, 2, 1, node, degree, nullptr, 0, k, allowed.data());
        EXPECT_EQ(plain, allowed) << degree << " " << k << " " << node;
      }
    }
  }
}

TEST(LinkRule, ExcludedPositionsAreNeverChosenAndTheCountStaysExact) {
  const std::vector<int32_t> excluded = {0, 3, 4, 9, 15, 16, 17};
  const int64_t degree = 18, allowed = degree - static_cast<int64_t>(excluded.size());
  for (int64_t k = 1; k <= allowed; ++k) {
    for (uint64_t batch = 0; batch < 50; ++batch) {
      std::vector<int32_t> positions(k);
      ChooseAllowedPositions(kKey, batch, 1, 0, 77, degree, excluded.data(), static_cast<int64_t>(excluded.size()), k,
                             positions.data());
      EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end()));
      EXPECT_EQ(std::adjacent_find(positions.begin(), positions.end()), positions.end()) << "repeated";
      for (int32_t p : positions) {
        EXPECT_GE(p, 0);
        EXPECT_LT(p, degree);
        EXPECT_FALSE(std::binary_search(excluded.begin(), excluded.end(), p)) << p << " is excluded";
      }
      if (k == allowed) {  // all of them
        EXPECT_EQ(positions, (std::vector<int32_t>{1, 2, 5, 6, 7, 8, 10, 11, 12, 13, 14}));
      }
    }
  }
}

TEST(LinkRule, AllowedPositionsAreChosenUniformly) {
  const std::vector<int64_t> excluded = {2, 5, 6};
  const int64_t degree = 10, k = 3, trials = 70000;
  std::vector<int64_t> counts(degree, 0);
  for (uint64_t batch = 0; batch < trials; ++batch) {
    int64_t positions[3];
    ChooseAllowedPositions(kKey, batch, 1, 0, 4, degree, excluded.data(), 3, k, positions);
    for (int64_t p : positions) ++counts[p];
  }
  std::vector<int64_t> allowed_counts;
  for (int64_t p = 0; p < degree; ++p) {
    if (std::binary_search(excluded.begin(), excluded.end(), p)) {
      EXPECT_EQ(counts[p], 0);
    } else {
      allowed_counts.push_back(counts[p]);
    }
  }
  // 6 degrees of freedom: 22.46 is the 0.999 quantile.
  EXPECT_LT(ChiSquare(allowed_counts), 22.46) << ::testing::PrintToString(allowed_counts);
}

TEST(LinkRule, NegativePairsAreUniformIndependentAndDeterministic) {
  const int64_t num_src = 13, num_dst = 7, pairs = 91000;
  std::vector<int64_t> joint(num_src * num_dst, 0);
  for (uint64_t i = 0; i < pairs; ++i) {
    const NodePair p = DrawNegative(kKey, 3, i, 0, num_src, num_dst);
    ASSERT_GE(p.src, 0);
    ASSERT_LT(p.src, num_src);
    ASSERT_GE(p.dst, 0);
    ASSERT_LT(p.dst, num_dst);
    ++joint[p.src * num_dst + p.dst];
  }
  // 90 degrees of freedom: 137.2 is the 0.999 quantile.
  EXPECT_LT(ChiSquare(joint), 137.2);

  const NodePair a = DrawNegative(kKey, 3, 17, 0, 1 << 30, 1 << 30);
  const NodePair again = DrawNegative(kKey, 3, 17, 0, 1 << 30, 1 << 30);
  EXPECT_EQ(a.src, again.src);
  EXPECT_EQ(a.dst, again.dst);
  // Another attempt, pair, batch or key draws anew.
  for (const NodePair other :
       {DrawNegative(kKey, 3, 17, 1, 1 << 30, 1 << 30), DrawNegative(kKey, 3, 18, 0, 1 << 30, 1 << 30),
        DrawNegative(kKey, 4, 17, 0, 1 << 30, 1 << 30), DrawNegative({1, 2}, 3, 17, 0, 1 << 30, 1 << 30)}) {
    EXPECT_FALSE(other.src == a.src && other.dst == a.dst);
  }
}

// Weighted endpoints (PyG's src_weight / dst_weight): each node drawn in proportion to its weight (chi-square against
// the weights), weight 0 never; the same word draws the same node; uniform endpoints are untouched.
TEST(LinkRule, WeightedEndpointsAreDrawnInProportionToTheirWeights) {
  const std::vector<float> weights = {0.5f, 0.f, 2.f, 1.f, 0.25f, 4.f, 0.f, 1.25f};
  auto cumulative = CumulativeWeights(weights, "w");
  ASSERT_TRUE(cumulative.ok()) << cumulative.status();
  EXPECT_EQ(cumulative->back(), static_cast<uint64_t>(9.0 / 4.0 * kWeightScale));  // the largest is 2^32
  const int64_t draws = 90000;
  std::vector<int64_t> counts(weights.size(), 0);
  for (uint64_t i = 0; i < draws; ++i) {
    const NodePair p = DrawNegative(kKey, 3, i, 0, 13, 8, nullptr, cumulative->data());
    ASSERT_LT(p.src, 13);
    ++counts[p.dst];
    EXPECT_EQ(p.src, DrawNegative(kKey, 3, i, 0, 13, 8).src);  // the source stays uniform, the same word
  }
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[6], 0);
  double chi = 0;  // over the 6 drawable nodes: 5 degrees of freedom, 20.52 the 0.999 quantile
  for (size_t v = 0; v < weights.size(); ++v) {
    if (weights[v] == 0) continue;
    const double expected = draws * weights[v] / 9.0;
    chi += (counts[v] - expected) * (counts[v] - expected) / expected;
  }
  EXPECT_LT(chi, 20.52) << ::testing::PrintToString(counts);
  for (const auto& [bad, says] : std::vector<std::pair<std::vector<float>, std::string>>{
           {{1.f, -1.f}, "w[1] = -1 (weights are finite and at least 0)"},
           {{1.f, std::numeric_limits<float>::infinity()}, "w[1] = inf"},
           {{0.f, 0.f}, "w: no weight is positive"}}) {
    auto refused = CumulativeWeights(bad, "w");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find(says), std::string::npos) << refused.status();
  }
}

TEST(LinkRule, SourceRangeFindsEveryParallelEdgeAndNothingElse) {
  // In-neighbor lists, sorted by source: node 0 {1, 1, 4}, node 1 {}, node 2 {0, 2, 3, 3, 3}.
  const std::vector<int64_t> indptr = {0, 3, 3, 8};
  const std::vector<int32_t> narrow = {1, 1, 4, 0, 2, 3, 3, 3};
  const std::vector<int64_t> wide(narrow.begin(), narrow.end());
  std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> want = {
      {{1, 0}, {0, 2}}, {{4, 0}, {2, 3}}, {{0, 0}, {0, 0}}, {{5, 0}, {3, 3}}, {{2, 1}, {0, 0}},
      {{0, 2}, {0, 1}}, {{3, 2}, {2, 5}}, {{1, 2}, {1, 1}}, {{4, 2}, {5, 5}}};
  for (const auto& [edge, range] : want) {
    const auto [src, dst] = edge;
    int64_t first = -1, last = -1;
    SourceRange(indptr.data(), narrow.data(), src, dst, &first, &last);
    EXPECT_EQ(std::make_pair(first, last), range) << src << " -> " << dst;
    SourceRange(indptr.data(), wide.data(), src, dst, &first, &last);
    EXPECT_EQ(std::make_pair(first, last), range) << src << " -> " << dst;
    EXPECT_EQ(IsEdge(indptr.data(), narrow.data(), src, dst), range.first < range.second) << src << " -> " << dst;
  }
}

}  // namespace
}  // namespace gnnd
