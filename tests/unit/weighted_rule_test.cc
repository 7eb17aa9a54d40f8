// The weighted rule (common/batch/sampling.h, drawn by kernels/cpu/draw.h): its exponential variates, exact
// counts, weight 0 and excluded edges never drawn, and the successive-sampling distribution by chi-square
// tests that a rule drawing uniformly, or proportionally but with replacement, fails.
#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "common/batch/sampling.h"
#include "gtest/gtest.h"
#include "kernels/cpu/draw.h"

namespace gnnd {
namespace {

TEST(WeightedRule, ExponentialIsMinusTheLogOfTheUniform) {
  for (uint32_t word : {0u, 1u, 2u, 3u, 1000u, 65535u, 1u << 20, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu}) {
    const double u = (static_cast<double>(word) + 0.5) / 4294967296.0;
    EXPECT_NEAR(weighted::Exponential(word), -std::log(u), 1e-12 * -std::log(u) + 1e-15) << word;
  }
}

TEST(WeightedRule, DrawsOrderByKeyThenPosition) {
  const SamplingKey key = MakeSamplingKey(1, 0, RandomPurpose::kNeighbors);
  // A heavier edge's key is the lighter one's scaled down: same uniform, so same position, weight 2 vs 1.
  const uint64_t light = WeightedDraw(key, 3, 1, 0, 9, 5, 1.0f), heavy = WeightedDraw(key, 3, 1, 0, 9, 5, 2.0f);
  EXPECT_LT(heavy, light);
  EXPECT_EQ(DrawPosition(heavy), 5u);
  uint64_t draws[3];
  int64_t count = 0;
  for (uint64_t d : {50u, 10u, 40u, 20u, 30u}) KeepSmallest(d, 3, draws, &count);
  ASSERT_EQ(count, 3);
  EXPECT_EQ(std::vector<uint64_t>(draws, draws + 3), (std::vector<uint64_t>{10, 20, 30}));
}

// One node's in-edges (sources 100 + p) with these weights, drawn for batch `batch`.
std::vector<int64_t> Draw(const std::vector<float>& weights, int32_t fanout, uint64_t batch,
                          std::vector<int64_t> excluded_sources = {}) {
  const int64_t degree = static_cast<int64_t>(weights.size());
  const int64_t indptr[2] = {0, degree};
  std::vector<int64_t> indices(degree);
  for (int64_t p = 0; p < degree; ++p) indices[p] = 100 + p;
  NodeDraw<int64_t> n{.key = MakeSamplingKey(7, 1, RandomPurpose::kNeighbors),
                      .batch_index = batch,
                      .hop = 1,
                      .indices = indices.data(),
                      .fanout = fanout};
  DrawScratch scratch;
  std::vector<int64_t> positions;
  DrawNode(WeightedRule{weights.data()}, n, indptr, excluded_sources, scratch, positions);
  return positions;
}

TEST(WeightedRule, CountsAreExactAndZeroWeightsAreNeverDrawn) {
  const std::vector<float> w = {0.5f, 0.0f, 3.0f, 0.0f, 1.0f, 2.0f, 0.0f};  // 4 positive
  for (uint64_t batch = 0; batch < 200; ++batch) {
    for (int32_t fanout : {1, 2, 3, 4, 10, -1}) {
      const std::vector<int64_t> p = Draw(w, fanout, batch);
      ASSERT_EQ(static_cast<int64_t>(p.size()), SampleCount(4, fanout));
      std::map<int64_t, int> seen;
      for (int64_t q : p) {
        EXPECT_GT(w[q], 0.0f) << "weight-0 position " << q << " drawn";
        EXPECT_EQ(++seen[q], 1) << "position " << q << " drawn twice";
      }
    }
  }
  // Taking them all gives them in list order.
  EXPECT_EQ(Draw(w, -1, 3), (std::vector<int64_t>{0, 2, 4, 5}));
  EXPECT_TRUE(Draw({0.0f, 0.0f}, 2, 1).empty());
}

TEST(WeightedRule, ExcludedEdgesAreRemovedBeforeTheDraw) {
  const std::vector<float> w = {1.0f, 5.0f, 1.0f, 0.0f, 1.0f};
  for (uint64_t batch = 0; batch < 300; ++batch) {
    const std::vector<int64_t> p = Draw(w, 2, batch, /*excluded_sources=*/{101});  // position 1, the heaviest
    ASSERT_EQ(p.size(), 2u);
    for (int64_t q : p) EXPECT_TRUE(q == 0 || q == 2 || q == 4) << q;
  }
  EXPECT_EQ(Draw(w, -1, 0, {100, 104}), (std::vector<int64_t>{1, 2}));
}

// Pearson's statistic of observed counts against expected probabilities over n trials.
double ChiSquare(const std::vector<int>& observed, const std::vector<double>& p, int n) {
  double x2 = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * n;
    x2 += (observed[i] - e) * (observed[i] - e) / e;
  }
  return x2;
}

TEST(WeightedRule, FanoutOnePicksEachEdgeInProportionToItsWeight) {
  const std::vector<float> w = {1.0f, 0.0f, 2.0f, 3.0f, 4.0f, 0.5f};
  const double total = 10.5;
  constexpr int kTrials = 40000;
  std::vector<int> count(w.size(), 0);
  for (int t = 0; t < kTrials; ++t) ++count[Draw(w, 1, t)[0]];
  EXPECT_EQ(count[1], 0);
  std::vector<int> observed;
  std::vector<double> expected;
  for (size_t p = 0; p < w.size(); ++p) {
    if (w[p] == 0) continue;
    observed.push_back(count[p]);
    expected.push_back(w[p] / total);
  }
  EXPECT_LT(ChiSquare(observed, expected, kTrials), 23.5);  // df 4, p = 1e-4
  // A uniform draw would be far off: its counts fail the same test.
  std::vector<int> uniform(observed.size(), kTrials / static_cast<int>(observed.size()));
  EXPECT_GT(ChiSquare(uniform, expected, kTrials), 1000);
}

TEST(WeightedRule, FanoutTwoGivesEachPairItsSuccessiveSamplingProbability) {
  const std::vector<float> w = {1.0f, 2.0f, 5.0f};
  const double total = 8;
  // P(first i, then j) = w_i / W * w_j / (W - w_i): both draw orders of each pair, six outcomes.
  std::map<std::pair<int64_t, int64_t>, double> ordered;
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      if (i != j) ordered[{i, j}] = w[i] / total * w[j] / (total - w[i]);
    }
  }
  constexpr int kTrials = 60000;
  std::map<std::pair<int64_t, int64_t>, int> seen;
  for (int t = 0; t < kTrials; ++t) {
    const std::vector<int64_t> p = Draw(w, 2, t);
    ASSERT_EQ(p.size(), 2u);
    ++seen[{p[0], p[1]}];
  }
  std::vector<int> observed;
  std::vector<double> expected;
  for (const auto& [pair, probability] : ordered) {
    observed.push_back(seen[pair]);
    expected.push_back(probability);
  }
  EXPECT_LT(ChiSquare(observed, expected, kTrials), 25.7);  // df 5, p = 1e-4
  // Unordered pairs as {i, j}: a draw proportional to w_i w_j (the wrong rule) is rejected.
  std::vector<int> pairs;
  std::vector<double> exact, product;
  const double sum_products = 1 * 2 + 1 * 5 + 2 * 5;
  for (auto [i, j] : {std::pair<int64_t, int64_t>{0, 1}, {0, 2}, {1, 2}}) {
    pairs.push_back(seen[{i, j}] + seen[{j, i}]);
    exact.push_back(ordered[{i, j}] + ordered[{j, i}]);
    product.push_back(w[i] * w[j] / sum_products);
  }
  EXPECT_LT(ChiSquare(pairs, exact, kTrials), 18.4);   // df 2, p = 1e-4
  EXPECT_GT(ChiSquare(pairs, product, kTrials), 100);  // the product rule's pair odds differ
}

// A large fanout selects the k smallest draws at the end rather than keeping them sorted: the same draws, in
// draw order, as every draw sorted and cut at k.
TEST(WeightedRule, LargeFanoutsTakeTheSmallestDraws) {
  std::vector<float> w(3000);
  for (size_t p = 0; p < w.size(); ++p) w[p] = p % 7 == 0 ? 0.0f : 0.25f + static_cast<float>(p % 13);
  for (int32_t fanout : {static_cast<int32_t>(kFloydInsertionLimit) + 1, 1000, 2500}) {
    std::vector<uint64_t> all;
    for (size_t p = 0; p < w.size(); ++p) {
      if (w[p] > 0) {
        all.push_back(
            WeightedDraw(MakeSamplingKey(7, 1, RandomPurpose::kNeighbors), 5, 1, 0, 0, static_cast<uint32_t>(p), w[p]));
      }
    }
    std::sort(all.begin(), all.end());
    std::vector<int64_t> expected;
    for (int32_t i = 0; i < fanout; ++i) expected.push_back(DrawPosition(all[i]));
    EXPECT_EQ(Draw(w, fanout, 5), expected) << "fanout " << fanout;
  }
}

// The weights the rule orders exactly: every key E / w of a weight from kMinWeight to kMaxWeight is a normal float
// (the least and the largest exponential variate alike), so distinct draws cannot tie by overflow or underflow.
TEST(WeightedRule, KeysStayNormalFloatsAcrossTheDrawableWeights) {
  for (const float w : {weighted::kMinWeight, 1.0f, weighted::kMaxWeight}) {
    for (const uint32_t word : {0u, 1u, 0x80000000u, 0xfffffffeu, 0xffffffffu}) {
      const float key = static_cast<float>(weighted::Exponential(word) / static_cast<double>(w));
      EXPECT_TRUE(std::isnormal(key)) << "w " << w << " word " << word << " key " << key;
    }
  }
  EXPECT_TRUE(weighted::Drawable(0.0f));
  EXPECT_TRUE(weighted::Drawable(weighted::kMinWeight));
  EXPECT_TRUE(weighted::Drawable(weighted::kMaxWeight));
  for (const float w : {-1.0f, 1e-44f, weighted::kMinWeight / 2, weighted::kMaxWeight * 2, INFINITY, NAN}) {
    EXPECT_FALSE(weighted::Drawable(w)) << w;
  }
}

}  // namespace
}  // namespace gnnd
