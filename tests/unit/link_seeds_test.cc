// The seed side of a link batch (common/batch/link_seeds.h): hop-0 nodes are the unique endpoints in
// ascending order, every pair maps back to its global ids, strict negatives are never edges, triplets keep
// their source, typed endpoints get a list per type, and a graph too dense for strict negatives is refused;
// disjoint batches keep every endpoint in pair order with its positive's time, and temporal negatives are
// uniform among the nodes no newer than their pair.
#include "common/batch/link_seeds.h"

#include <algorithm>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace gnnd {
namespace {

constexpr SamplingKey kSeedsKey = {77, 99};

// A CSC over `n` nodes from (src, dst) edges, each in-neighbor list sorted by source.
struct Csc {
  std::vector<int64_t> indptr;
  std::vector<int32_t> indices;
  Csc(int64_t n, std::vector<std::pair<int64_t, int64_t>> edges) : indptr(n + 1, 0) {
    std::sort(edges.begin(), edges.end(),
              [](auto a, auto b) { return std::tie(a.second, a.first) < std::tie(b.second, b.first); });
    for (auto [s, d] : edges) ++indptr[d + 1], indices.push_back(static_cast<int32_t>(s));
    for (int64_t v = 0; v < n; ++v) indptr[v + 1] += indptr[v];
  }
  LinkRelation relation(int64_t n) const { return {indptr.data(), indices.data(), false, n, n, true, "'_N___E___N'"}; }
  bool has(int64_t s, int64_t d) const { return IsEdge(indptr.data(), indices.data(), s, d); }
};

// Every node v of 12 has edges from v+1 .. v+5 (mod 12): 5 of 12 pairs per destination are edges.
Csc DenseRing() {
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t v = 0; v < 12; ++v) {
    for (int64_t d = 1; d <= 5; ++d) edges.push_back({(v + d) % 12, v});
  }
  return Csc(12, edges);
}

TEST(LinkSeeds, BinaryPairsMapBackAndHopZeroIsTheUniqueEndpointsAscending) {
  const Csc g = DenseRing();
  const std::vector<int64_t> src = {1, 4, 1, 9}, dst = {0, 3, 0, 8};
  LinkSeeds out;
  ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 5, src, dst, {NegativeMode::kBinary, 3, false}, g.relation(12), out).ok());
  ASSERT_EQ(out.pair_src.size(), 4u + 12u);
  EXPECT_TRUE(out.dst_nodes.empty());
  EXPECT_TRUE(std::is_sorted(out.src_nodes.begin(), out.src_nodes.end()));
  EXPECT_EQ(std::adjacent_find(out.src_nodes.begin(), out.src_nodes.end()), out.src_nodes.end());
  std::set<int64_t> endpoints;
  for (size_t i = 0; i < out.pair_src.size(); ++i) {
    const int64_t s = out.src_nodes[out.pair_src[i]], d = out.src_nodes[out.pair_dst[i]];
    if (i < src.size()) {
      EXPECT_EQ(s, src[i]);
      EXPECT_EQ(d, dst[i]);
    }
    endpoints.insert(s);
    endpoints.insert(d);
  }
  EXPECT_EQ(std::vector<int64_t>(endpoints.begin(), endpoints.end()), out.src_nodes);  // nothing else

  LinkSeeds again;
  ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 5, src, dst, {NegativeMode::kBinary, 3, false}, g.relation(12), again).ok());
  EXPECT_EQ(again.src_nodes, out.src_nodes);
  EXPECT_EQ(again.pair_src, out.pair_src);
  EXPECT_EQ(again.pair_dst, out.pair_dst);
  LinkSeeds other_batch;
  ASSERT_TRUE(
      MakeLinkSeeds(kSeedsKey, 6, src, dst, {NegativeMode::kBinary, 3, false}, g.relation(12), other_batch).ok());
  EXPECT_TRUE(other_batch.pair_src != out.pair_src || other_batch.pair_dst != out.pair_dst);  // new negatives
}

TEST(LinkSeeds, StrictNegativesAreNeverEdges) {
  const Csc g = DenseRing();
  std::vector<int64_t> src(64), dst(64);
  for (int64_t i = 0; i < 64; ++i) src[i] = (i % 12 + 1) % 12, dst[i] = i % 12;  // ring edges
  int64_t loose_edges = 0;
  for (bool strict : {false, true}) {
    for (NegativeMode mode : {NegativeMode::kBinary, NegativeMode::kTriplet}) {
      LinkSeeds out;
      ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 1, src, dst, {mode, 4, strict}, g.relation(12), out).ok());
      const bool triplet = mode == NegativeMode::kTriplet;
      ASSERT_EQ((triplet ? out.dst_neg_index : out.pair_dst).size(), triplet ? 256u : 64u + 256u);
      for (size_t j = 0; j < 256; ++j) {
        const int64_t s = triplet ? src[j / 4] : out.src_nodes[out.pair_src[64 + j]];
        const int64_t d = out.src_nodes[triplet ? out.dst_neg_index[j] : out.pair_dst[64 + j]];
        if (strict) {
          EXPECT_FALSE(g.has(s, d)) << s << " -> " << d;
        } else {
          loose_edges += g.has(s, d);
        }
      }
      if (triplet) {
        for (size_t i = 0; i < 64; ++i) {
          EXPECT_EQ(out.src_nodes[out.src_index[i]], src[i]);
          EXPECT_EQ(out.src_nodes[out.dst_pos_index[i]], dst[i]);
        }
        EXPECT_TRUE(out.pair_src.empty());
      }
    }
  }
  EXPECT_GT(loose_edges, 50);  // 5 in 12 of uniform pairs are edges: strictness did the work above
}

TEST(LinkSeeds, TypedEndpointsGetAListPerType) {
  // user -> item: users 0..2, items 0..3.
  std::vector<int64_t> indptr = {0, 1, 1, 2, 2};
  std::vector<int64_t> indices = {2, 0};  // 2 -> item 0, 0 -> item 2
  const LinkRelation rates{indptr.data(), indices.data(), true, 3, 4, false, "'user___rates___item'"};
  const std::vector<int64_t> src = {2, 0}, dst = {0, 2};
  LinkSeeds out;
  ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 0, src, dst, {NegativeMode::kBinary, 2, true}, rates, out).ok());
  for (int64_t u : out.src_nodes) EXPECT_LT(u, 3);
  for (int64_t i : out.dst_nodes) EXPECT_LT(i, 4);
  for (size_t j = 0; j < out.pair_src.size(); ++j) {
    const int64_t u = out.src_nodes[out.pair_src[j]], i = out.dst_nodes[out.pair_dst[j]];
    if (j < 2) {
      EXPECT_EQ(u, src[j]);
      EXPECT_EQ(i, dst[j]);
    } else {
      EXPECT_FALSE((u == 2 && i == 0) || (u == 0 && i == 2)) << u << " -> " << i;
    }
  }
}

TEST(LinkSeeds, FixedNegativesAreTheGivenRowsAsTriplets) {
  const Csc g = DenseRing();
  const std::vector<int64_t> src = {1, 4, 9}, dst = {0, 3, 8};
  const std::vector<int64_t> fixed = {2, 5, 11, 7, 7, 0};  // two per positive; a repeat and a positive's own node
  LinkSeeds out;
  ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 2, src, dst, {NegativeMode::kFixed, 2, false}, g.relation(12), out, fixed).ok());
  EXPECT_TRUE(out.pair_src.empty());
  ASSERT_EQ(out.dst_neg_index.size(), fixed.size());
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(out.src_nodes[out.src_index[i]], src[i]);
    EXPECT_EQ(out.src_nodes[out.dst_pos_index[i]], dst[i]);
  }
  for (size_t k = 0; k < fixed.size(); ++k) EXPECT_EQ(out.src_nodes[out.dst_neg_index[k]], fixed[k]);
  const std::vector<int64_t> hop0 = {0, 1, 2, 3, 4, 5, 7, 8, 9, 11};  // every endpoint once, ascending
  EXPECT_EQ(out.src_nodes, hop0);
  EXPECT_TRUE(TripletLayout(NegativeMode::kFixed) && TripletLayout(NegativeMode::kTriplet));
  EXPECT_FALSE(TripletLayout(NegativeMode::kBinary));
}

TEST(LinkSeeds, AGraphTooDenseForStrictNegativesIsRefusedNamingIt) {
  std::vector<std::pair<int64_t, int64_t>> all;
  for (int64_t s = 0; s < 3; ++s) {
    for (int64_t d = 0; d < 3; ++d) all.push_back({s, d});
  }
  const Csc complete(3, all);
  const std::vector<int64_t> src = {0}, dst = {1};
  LinkSeeds out;
  const absl::Status status =
      MakeLinkSeeds(kSeedsKey, 4, src, dst, {NegativeMode::kTriplet, 1, true}, complete.relation(3), out);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(),
            "strict negatives: 64 draws for negative 0 of batch 4 (source 0) were all edges of '_N___E___N': the graph "
            "is too dense for strict negatives (turn strict off)");
  EXPECT_TRUE(
      MakeLinkSeeds(kSeedsKey, 4, src, dst, {NegativeMode::kTriplet, 1, false}, complete.relation(3), out).ok());
}

// A disjoint batch (PyG's disjoint=True): hop 0 is every endpoint in pair order, sources then destinations,
// the pairs index them as arange does, and each pair and subgraph takes its positive's time.
TEST(LinkSeeds, DisjointHopZeroIsEveryEndpointInPairOrderWithItsPositivesTime) {
  const Csc g = DenseRing();
  const std::vector<int64_t> src = {1, 4, 1}, dst = {0, 3, 0}, times = {50, 7, 9};
  LinkSeeds out;
  ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 5, src, dst, {NegativeMode::kBinary, 2, false}, g.relation(12), out, {},
                            {.disjoint = true, .times = times})
                  .ok());
  const size_t pairs = 3 * (1 + 2);
  ASSERT_EQ(out.src_nodes.size(), 2 * pairs);  // repeats kept: pair 0 and 2 are one edge, two subgraphs each
  EXPECT_TRUE(out.dst_nodes.empty());
  for (size_t q = 0; q < pairs; ++q) {
    EXPECT_EQ(out.pair_src[q], static_cast<int32_t>(q));
    EXPECT_EQ(out.pair_dst[q], static_cast<int32_t>(pairs + q));
    EXPECT_EQ(out.src_nodes[q], out.src_ids[q]);
    EXPECT_EQ(out.src_nodes[pairs + q], out.dst_ids[q]);
    const int64_t time = q < 3 ? times[q] : times[(q - 3) % 3];  // negatives by round, as PyG's
    EXPECT_EQ(out.pair_time[q], time) << q;
    EXPECT_EQ(out.subgraph_time[q], time) << q;
    EXPECT_EQ(out.subgraph_time[pairs + q], time) << q;
  }
  // Triplets between two types: the positives' sources, then every destination; subgraph i of both types.
  LinkRelation typed = g.relation(12);
  typed.same_type = false;
  ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 5, src, dst, {NegativeMode::kTriplet, 2, false}, typed, out, {},
                            {.disjoint = true, .times = times})
                  .ok());
  EXPECT_EQ(out.src_nodes, src);
  ASSERT_EQ(out.dst_nodes.size(), 3u * 3u);
  EXPECT_EQ(std::vector<int64_t>(out.dst_nodes.begin(), out.dst_nodes.begin() + 3), dst);
  EXPECT_EQ(out.src_index, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(out.dst_pos_index, (std::vector<int32_t>{0, 1, 2}));
  // Positive i's negatives at row i, by round (PyG's arange(3, 9).view(-1, 3).t()).
  EXPECT_EQ(out.dst_neg_index, (std::vector<int32_t>{3, 6, 4, 7, 5, 8}));
  EXPECT_EQ(out.pair_time, times);
  EXPECT_EQ(out.subgraph_time, (std::vector<int64_t>{50, 7, 9, 50, 7, 9, 50, 7, 9}));
}

// Binary negatives as a fraction of the positives (NegativeSpec::ratio, PyG's fractional amount): ceil(P x ratio) of
// them, by round, each the one an amount of ceil(ratio) draws for its (positive, round); disjoint batches alike.
TEST(LinkSeeds, AFractionalRatioDrawsTheCeilingOfItsShareByRound) {
  const Csc g = DenseRing();
  const std::vector<int64_t> src = {1, 4, 7, 9}, dst = {0, 3, 6, 8};
  const NegativeSpec whole{NegativeMode::kBinary, 2, false}, fraction{NegativeMode::kBinary, 2, false, 1.5};
  EXPECT_EQ(fraction.Count(4), 6);
  EXPECT_EQ((NegativeSpec{NegativeMode::kBinary, 1, false, 0.5}.Count(5)), 3);  // PyG's math.ceil(5 * 0.5)
  for (const bool disjoint : {false, true}) {
    LinkSeeds two, some;
    ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 5, src, dst, whole, g.relation(12), two, {}, {.disjoint = disjoint}).ok());
    ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 5, src, dst, fraction, g.relation(12), some, {}, {.disjoint = disjoint}).ok());
    ASSERT_EQ(some.src_ids.size(), 4u + 6u);
    ASSERT_EQ(some.pair_src.size(), 4u + 6u);
    for (size_t k = 0; k < 6; ++k) {  // negative k: positive k % 4's round k / 4
      const size_t i = k % 4, m = k / 4, in_two = disjoint ? m * 4 + i : i * 2 + m;
      EXPECT_EQ(some.src_ids[4 + k], two.src_ids[4 + in_two]) << disjoint << " " << k;
      EXPECT_EQ(some.dst_ids[4 + k], two.dst_ids[4 + in_two]) << disjoint << " " << k;
    }
  }
}

// Temporal negatives: each drawn uniformly among the nodes no newer than its pair (chi-square over many
// batches), the earliest node where none is; strictness still applies on top.
TEST(LinkSeeds, TemporalNegativesAreUniformAmongTheNodesNoNewerThanTheirPair) {
  const Csc g = DenseRing();
  // Node times: 3 nodes at 10, then others later; node 7 the earliest (5).
  const std::vector<int64_t> node_time = {10, 40, 10, 90, 60, 10, 30, 5, 70, 80, 20, 100};
  const std::vector<int64_t> by_time = NodesByTime(node_time);
  EXPECT_EQ(by_time[0], 7);
  EXPECT_EQ(std::vector<int64_t>(by_time.begin() + 1, by_time.begin() + 4), (std::vector<int64_t>{0, 2, 5}));
  LinkRelation r = g.relation(12);
  r.src_times = r.dst_times = node_time.data();
  r.src_by_time = r.dst_by_time = by_time.data();
  const std::vector<int64_t> src = {1}, dst = {0}, times = {30};  // eligible: 7, 0, 2, 5, 10, 6
  const std::vector<int64_t> eligible = {0, 2, 5, 6, 7, 10};
  std::vector<int> counts(12, 0);
  LinkSeeds out;
  const int batches = 3000;
  for (int b = 0; b < batches; ++b) {
    ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, b, src, dst, {NegativeMode::kBinary, 2, false}, r, out, {},
                              {.disjoint = true, .times = times})
                    .ok());
    for (size_t q = 1; q < out.src_ids.size(); ++q) ++counts[out.src_ids[q]], ++counts[out.dst_ids[q]];
  }
  double chi2 = 0;
  const double expected = batches * 4.0 / eligible.size();
  for (int64_t v = 0; v < 12; ++v) {
    if (std::find(eligible.begin(), eligible.end(), v) == eligible.end()) {
      EXPECT_EQ(counts[v], 0) << "node " << v << " is newer than the pair";
    } else {
      chi2 += (counts[v] - expected) * (counts[v] - expected) / expected;
    }
  }
  EXPECT_LT(chi2, 20.5);  // 5 degrees of freedom: p = 0.001
  // A pair older than every node: the earliest node stands in (PyG's fallback).
  const std::vector<int64_t> ancient = {1};
  ASSERT_TRUE(MakeLinkSeeds(kSeedsKey, 1, src, dst, {NegativeMode::kTriplet, 3, false}, r, out, {},
                            {.disjoint = true, .times = ancient})
                  .ok());
  EXPECT_EQ(std::vector<int64_t>(out.dst_ids.begin() + 1, out.dst_ids.end()), (std::vector<int64_t>{7, 7, 7}));
  // Strict on top: 8 -> 7 is an edge and node 7 all there is, so source 8's strict draws all fail.
  const std::vector<int64_t> from8 = {8}, to9 = {9};
  EXPECT_EQ(MakeLinkSeeds(kSeedsKey, 1, from8, to9, {NegativeMode::kTriplet, 1, true}, r, out, {},
                          {.disjoint = true, .times = ancient})
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace gnnd
