// Time-ordered neighborhoods (common/dataset/time_order.h) and the temporal draw over them (kernels/cpu/draw.h
// through TemporalRule::order): each list sorted by (time, id); "last" draws exactly the most recent allowed
// candidates and "uniform" the ordinary rule over them in time order (both checked against their definitions
// computed without the index), nothing newer than the seed, every pair of candidates equally likely.
#include "common/dataset/time_order.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/draw.h"

namespace gnnd {
namespace {

const SamplingKey kOrderKey = MakeSamplingKey(3, 2, RandomPurpose::kNeighbors);

// One node's in-edges: sources 100 + p, edge ids `ids` (empty: none stored), times `times`.
struct TimedList {
  std::vector<int64_t> times, ids, indices;
  std::vector<uint32_t> order;
  int64_t indptr[2] = {0, 0};

  TimedList(std::vector<int64_t> t, std::vector<int64_t> i) : times(std::move(t)), ids(std::move(i)) {
    indptr[1] = static_cast<int64_t>(times.size());
    for (int64_t p = 0; p < indptr[1]; ++p) indices.push_back(100 + p);
    order.resize(times.size());
    const absl::Status built = BuildTimeOrder(
        {.indptr = indptr, .num_nodes = 1, .edge_times = times.data(), .edge_ids = ids.empty() ? nullptr : ids.data()},
        order, 1);
    EXPECT_TRUE(built.ok()) << built;
  }
  int64_t IdOf(int64_t p) const { return ids.empty() ? p : ids[p]; }

  // The drawn positions, ascending.
  std::vector<int64_t> Draw(int64_t seed_time, int32_t fanout, uint64_t batch, TemporalStrategy strategy,
                            const std::vector<int64_t>& excluded_sources = {}) const {
    const TemporalRule temporal{times.data(), nullptr, ids.empty() ? nullptr : ids.data(), {strategy}, order.data()};
    NodeDraw<int64_t> n{.key = kOrderKey,
                        .batch_index = batch,
                        .hop = 1,
                        .indices = indices.data(),
                        .fanout = fanout,
                        .seed_time = seed_time};
    DrawScratch scratch;
    std::vector<int64_t> positions;
    DrawNode(temporal, n, indptr, excluded_sources, scratch, positions);
    EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end()));
    return positions;
  }

  // The allowed candidates (no newer than the seed, not excluded) sorted by (time, id), without the index.
  std::vector<int64_t> Allowed(int64_t seed_time, const std::vector<int64_t>& excluded_sources) const {
    std::vector<int64_t> allowed;
    for (int64_t p = 0; p < indptr[1]; ++p) {
      const bool out = std::count(excluded_sources.begin(), excluded_sources.end(), 100 + p) > 0;
      if (!out && times[p] <= seed_time) allowed.push_back(p);
    }
    std::sort(allowed.begin(), allowed.end(),
              [&](int64_t a, int64_t b) { return std::tuple(times[a], IdOf(a)) < std::tuple(times[b], IdOf(b)); });
    return allowed;
  }

  // "last" by its definition: the k most recent allowed candidates, ascending.
  std::vector<int64_t> Last(int64_t seed_time, int32_t fanout, const std::vector<int64_t>& excluded_sources) const {
    const std::vector<int64_t> allowed = Allowed(seed_time, excluded_sources);
    const int64_t k = SampleCount(static_cast<int64_t>(allowed.size()), fanout);
    std::vector<int64_t> out(allowed.end() - k, allowed.end());
    std::sort(out.begin(), out.end());
    return out;
  }

  // "uniform" by its definition: the ordinary rule's ranks over the allowed candidates in time order, their
  // positions ascending.
  std::vector<int64_t> Uniform(int64_t seed_time, int32_t fanout, uint64_t batch,
                               const std::vector<int64_t>& excluded_sources) const {
    const std::vector<int64_t> allowed = Allowed(seed_time, excluded_sources);
    const int64_t m = static_cast<int64_t>(allowed.size()), k = SampleCount(m, fanout);
    std::vector<int64_t> ranks(static_cast<size_t>(k));
    if (k < m) {
      ChoosePositions(kOrderKey, batch, 1, 0, 0, m, k, ranks.data());
    } else {
      for (int64_t i = 0; i < k; ++i) ranks[i] = i;
    }
    std::vector<int64_t> out;
    for (int64_t r : ranks) out.push_back(allowed[r]);
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST(TimeOrder, EachListIsSortedByTimeThenId) {
  std::mt19937_64 rng(4);
  const int64_t n = 300;
  std::vector<int64_t> indptr(n + 1, 0), times, ids, node_times(500);
  std::vector<int32_t> indices;
  for (int64_t& t : node_times) t = static_cast<int64_t>(rng() % 50);
  for (int64_t v = 0; v < n; ++v) {
    const int64_t d = static_cast<int64_t>(rng() % 40);
    for (int64_t j = 0; j < d; ++j) {
      times.push_back(static_cast<int64_t>(rng() % 20));  // many ties
      ids.push_back(static_cast<int64_t>(rng() % 1000000));
      indices.push_back(static_cast<int32_t>(rng() % 500));
    }
    indptr[v + 1] = indptr[v] + d;
  }
  for (bool node_level : {false, true}) {
    for (bool with_ids : {false, true}) {
      TimeOrderInput in{.indptr = indptr.data(), .num_nodes = n, .indices = indices.data()};
      (node_level ? in.node_times : in.edge_times) = node_level ? node_times.data() : times.data();
      if (with_ids) in.edge_ids = ids.data();
      std::vector<uint32_t> order(indices.size());
      const absl::Status built = BuildTimeOrder(in, order, 3);
      ASSERT_TRUE(built.ok()) << built;
      for (int64_t v = 0; v < n; ++v) {
        const int64_t first = indptr[v], d = indptr[v + 1] - first;
        std::vector<uint32_t> list(order.begin() + first, order.begin() + first + d);
        auto key = [&](uint32_t o) {
          const int64_t p = first + o;
          return std::tuple(node_level ? node_times[indices[p]] : times[p], with_ids ? ids[p] : int64_t{o});
        };
        EXPECT_TRUE(std::is_sorted(list.begin(), list.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); }));
        std::sort(list.begin(), list.end());
        for (int64_t j = 0; j < d; ++j) ASSERT_EQ(list[j], static_cast<uint32_t>(j)) << "not a permutation";
      }
    }
  }
}

TEST(TimeOrderDraw, LastAndUniformDrawWhatTheirDefinitionsSay) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t d = 1 + static_cast<int64_t>(rng() % 30);
    std::vector<int64_t> times(d), ids;
    for (int64_t& t : times) t = static_cast<int64_t>(rng() % 12);
    if (trial % 2 == 0) {
      for (int64_t p = 0; p < d; ++p) ids.push_back(static_cast<int64_t>(rng() % 100000) * 64 + p);  // distinct
    }
    const TimedList list(times, ids);
    std::vector<int64_t> excluded;
    for (int64_t p = 0; p < d; ++p) {
      if (rng() % 5 == 0) excluded.push_back(100 + p);
    }
    for (int64_t seed_time : {int64_t{-1}, int64_t{3}, int64_t{7}, int64_t{20}}) {
      for (int32_t fanout : {1, 3, 8, -1}) {
        const uint64_t batch = rng() % 1000;
        for (const std::vector<int64_t>& out : {std::vector<int64_t>{}, excluded}) {
          EXPECT_EQ(list.Draw(seed_time, fanout, batch, TemporalStrategy::kLast, out),
                    list.Last(seed_time, fanout, out))
              << "trial " << trial;
          const std::vector<int64_t> got = list.Draw(seed_time, fanout, batch, TemporalStrategy::kUniform, out);
          EXPECT_EQ(got, list.Uniform(seed_time, fanout, batch, out)) << "trial " << trial;
          for (int64_t p : got) EXPECT_LE(times[p], seed_time);
        }
      }
    }
  }
}

TEST(TimeOrderDraw, UniformDrawsEveryPairOfCandidatesEquallyOften) {
  // 5 candidates of 9: 10 pairs, each with probability 1/10.
  const TimedList list({3, 50, 1, 2, 60, 0, 70, 4, 80}, {});
  constexpr int kTrials = 30000;
  std::map<std::pair<int64_t, int64_t>, int> seen;
  for (int t = 0; t < kTrials; ++t) {
    const std::vector<int64_t> p = list.Draw(10, 2, t, TemporalStrategy::kUniform);
    ASSERT_EQ(p.size(), 2u);
    ++seen[{p[0], p[1]}];
  }
  ASSERT_EQ(seen.size(), 10u);
  const std::set<int64_t> candidates = {0, 2, 3, 5, 7};
  double x2 = 0;
  for (const auto& [pair, n] : seen) {
    EXPECT_TRUE(candidates.contains(pair.first) && candidates.contains(pair.second));
    const double e = kTrials / 10.0;
    x2 += (n - e) * (n - e) / e;
  }
  EXPECT_LT(x2, 33.7);  // df 9, p = 1e-4
}

}  // namespace
}  // namespace gnnd
