// The shared sampling rule (common/batch/sampling.h) on its own: counts, distinctness, determinism, and
// uniformity by chi-square tests that a biased rule fails.
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "common/batch/sampling.h"
#include "gtest/gtest.h"

namespace gnnd {
namespace {

std::vector<int64_t> Choose(uint64_t seed, uint64_t epoch, uint64_t batch, uint32_t hop, uint64_t node, int64_t degree,
                            int32_t fanout) {
  const int64_t k = SampleCount(degree, fanout);
  std::vector<int64_t> positions(k);
  if (k == degree) {
    for (int64_t i = 0; i < k; ++i) positions[i] = i;
  } else {
    ChoosePositions(MakeSamplingKey(seed, epoch, RandomPurpose::kNeighbors), batch, hop, 0, node, degree, k,
                    positions.data());
  }
  return positions;
}

TEST(SamplingRule, CountIsMinOfFanoutAndDegree) {
  EXPECT_EQ(SampleCount(100, 10), 10);
  EXPECT_EQ(SampleCount(7, 10), 7);
  EXPECT_EQ(SampleCount(10, 10), 10);
  EXPECT_EQ(SampleCount(0, 5), 0);
  EXPECT_EQ(SampleCount(1000000, -1), 1000000);
}

TEST(SamplingRule, DistinctSortedInRange) {
  for (int64_t degree : {2, 11, 64, 1000, 5000000}) {
    for (int32_t fanout : {1, 5, 10, 25}) {
      if (fanout >= degree) continue;
      for (uint64_t node = 0; node < 50; ++node) {
        const std::vector<int64_t> p = Choose(3, 1, 7, 2, node, degree, fanout);
        ASSERT_EQ(static_cast<int32_t>(p.size()), fanout);
        for (size_t i = 0; i < p.size(); ++i) {
          ASSERT_GE(p[i], 0);
          ASSERT_LT(p[i], degree);
          if (i > 0) {
            ASSERT_LT(p[i - 1], p[i]) << "not sorted or repeated";
          }
        }
      }
    }
  }
}

TEST(SamplingRule, PureFunctionOfItsInputs) {
  const auto base = Choose(1, 2, 3, 1, 99, 500, 10);
  EXPECT_EQ(base, Choose(1, 2, 3, 1, 99, 500, 10));
  EXPECT_NE(base, Choose(2, 2, 3, 1, 99, 500, 10));  // seed
  EXPECT_NE(base, Choose(1, 3, 3, 1, 99, 500, 10));  // epoch
  EXPECT_NE(base, Choose(1, 2, 4, 1, 99, 500, 10));  // batch
  EXPECT_NE(base, Choose(1, 2, 3, 2, 99, 500, 10));  // hop
  EXPECT_NE(base, Choose(1, 2, 3, 1, 98, 500, 10));  // node
}

// Pearson's statistic of observed counts against a uniform expectation.
double ChiSquare(const std::vector<int64_t>& observed, double expected) {
  double chi2 = 0;
  for (int64_t o : observed) chi2 += (o - expected) * (o - expected) / expected;
  return chi2;
}

TEST(SamplingRule, EveryPositionEquallyLikely) {
  // degree 40, fanout 10, 20000 draws: each position expected 5000 times. The 0.9999 quantile of
  // chi-square with 39 degrees of freedom is 80.1; a rule that never takes the last position scores ~5000.
  constexpr int64_t kDegree = 40, kDraws = 20000;
  std::vector<int64_t> counts(kDegree, 0);
  for (uint64_t batch = 0; batch < kDraws; ++batch) {
    for (int64_t p : Choose(11, 0, batch, 1, 12345, kDegree, 10)) ++counts[p];
  }
  EXPECT_LT(ChiSquare(counts, kDraws * 10.0 / kDegree), 80.1);
}

TEST(SamplingRule, EverySubsetEquallyLikely) {
  // degree 6, fanout 3: 20 subsets, each expected 1/20. 0.9999 quantile of chi-square(19) is 48.4.
  constexpr int kDraws = 40000;
  std::map<std::vector<int64_t>, int64_t> subsets;
  for (uint64_t node = 0; node < kDraws; ++node) ++subsets[Choose(5, 9, 0, 3, node, 6, 3)];
  ASSERT_EQ(subsets.size(), 20u);
  std::vector<int64_t> counts;
  for (const auto& [subset, count] : subsets) counts.push_back(count);
  EXPECT_LT(ChiSquare(counts, kDraws / 20.0), 48.4);
}

TEST(SamplingRule, ChiSquareCatchesABiasedRule) {
  // The statistic above is strong enough: a rule that avoids the last position fails it.
  constexpr int64_t kDegree = 40, kDraws = 20000;
  std::vector<int64_t> counts(kDegree, 0);
  for (uint64_t batch = 0; batch < kDraws; ++batch) {
    for (int64_t p : Choose(11, 0, batch, 1, 12345, kDegree - 1, 10)) ++counts[p];  // never position 39
  }
  EXPECT_GT(ChiSquare(counts, kDraws * 10.0 / kDegree), 80.1);
}

TEST(SamplingRule, KeysDifferByPurposeAndEpoch) {
  std::set<std::pair<uint32_t, uint32_t>> keys;
  for (uint64_t epoch = 0; epoch < 100; ++epoch) {
    for (RandomPurpose p : {RandomPurpose::kNeighbors, RandomPurpose::kSeedPermutation}) {
      const SamplingKey k = MakeSamplingKey(42, epoch, p);
      keys.insert({k.key0, k.key1});
    }
  }
  EXPECT_EQ(keys.size(), 200u);
}

// Floyd's algorithm as written in its paper, with a set: the positions ChoosePositions must give.
std::vector<int64_t> FloydWithASet(SamplingKey key, uint64_t batch, uint32_t hop, uint64_t node, int64_t degree,
                                   int64_t k) {
  std::set<int64_t> chosen;
  Philox4x32 words{};
  for (int64_t i = 0; i < k; ++i) {
    const auto t = static_cast<int64_t>(FloydDraw(key, batch, hop, 0, node, degree, k, i, words));
    chosen.insert(chosen.count(t) > 0 ? degree - k + i : t);
  }
  return {chosen.begin(), chosen.end()};
}

// Large k takes the sorting route on the host (O(k log k)): the same positions as Floyd's set, on both sides
// of the switch, for k near the degree (most draws collide) and far below it.
TEST(SamplingRule, LargeFanoutsGiveFloydsPositions) {
  const SamplingKey key = MakeSamplingKey(5, 2, RandomPurpose::kNeighbors);
  for (int64_t degree : {int64_t{300}, int64_t{257}, int64_t{2000}, int64_t{100000}}) {
    for (int64_t k : {int64_t{1}, kFloydInsertionLimit, kFloydInsertionLimit + 1, degree / 2, degree - 1}) {
      if (k >= degree || k < 1) continue;
      for (uint64_t node = 0; node < 4; ++node) {
        std::vector<int64_t> p(k);
        ChoosePositions(key, 9, 1, 0, node, degree, k, p.data());
        ASSERT_EQ(p, FloydWithASet(key, 9, 1, node, degree, k)) << "degree " << degree << " k " << k;
      }
    }
  }
}

// What a GPU lane group does: every draw t_i first, into the positions themselves (in any order, Philox blocks
// side by side), then the insertions in order, each reading positions[i] before it writes there: the same
// positions as ChoosePositions' draw-then-insert loop.
TEST(SamplingRule, DrawingFirstAndInsertingInPlaceGivesTheSamePositions) {
  const SamplingKey key = MakeSamplingKey(3, 1, RandomPurpose::kNeighbors);
  for (int64_t degree : {int64_t{2}, int64_t{7}, int64_t{40}, int64_t{1000}}) {
    for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{15}, int64_t{32}, degree - 1}) {
      if (k >= degree || k < 1) continue;
      for (uint64_t node = 0; node < 50; ++node) {
        std::vector<uint32_t> expected(k), in_place(k);
        ChoosePositions(key, 4, 2, 1, node, degree, k, expected.data());
        for (int64_t i = k % 2 == 0 ? k - 2 : k - 1; i >= 0; i -= 2) {  // blocks from the last, as lanes finish
          Philox4x32 words{};
          in_place[i] = static_cast<uint32_t>(FloydDraw(key, 4, 2, 1, node, degree, k, i, words));
          if (i + 1 < k)
            in_place[i + 1] = static_cast<uint32_t>(FloydDraw(key, 4, 2, 1, node, degree, k, i + 1, words));
        }
        for (int64_t i = 0; i < k; ++i) FloydInsert(in_place.data(), degree, k, i, in_place[i]);
        ASSERT_EQ(in_place, expected) << "degree " << degree << " k " << k << " node " << node;
      }
    }
  }
}

// One node of in-degree 400 000 at fanout 399 999 (the insertion route took 12 s for it): distinct, ascending,
// in 32-bit positions as the CUDA kernel keeps them.
TEST(SamplingRule, AHubAtANearlyFullFanoutIsDrawnIntoNarrowPositions) {
  const int64_t degree = 400000, k = degree - 1;
  std::vector<uint32_t> p(k);
  ChoosePositions(MakeSamplingKey(1, 0, RandomPurpose::kNeighbors), 0, 1, 0, 7, degree, k, p.data());
  for (int64_t i = 1; i < k; ++i) ASSERT_LT(p[i - 1], p[i]);
  EXPECT_LT(p.back(), static_cast<uint32_t>(degree));
}

}  // namespace
}  // namespace gnnd
