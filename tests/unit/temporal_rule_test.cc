// The temporal rule (common/batch/sampling.h, drawn by kernels/cpu/draw.h) and disjoint batches
// (kernels/cpu/sampler.cc): one node's draw takes exactly min(fanout, candidates), never an edge newer than
// the seed, "uniform" uniformly over the candidates (chi-square) and exactly the uniform rule over the list in
// time order when every in-edge is a candidate, "last" exactly the most recent; whole batches of generated homogeneous
// and typed graphs with random times keep every rule, subgraph by subgraph.
#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "common/batch/layout.h"
#include "common/batch/sampling.h"
#include "common/dataset/time_order.h"
#include "gtest/gtest.h"
#include "kernels/cpu/draw.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"
#include "tools/dataset/synthetic_typed.h"

namespace gnnd {
namespace {

using testing::ScratchDir;
using testing::TypedBuffer;

const SamplingKey kKey = MakeSamplingKey(7, 1, RandomPurpose::kNeighbors);

// One node's in-edges (sources 100 + p, edge ids 1000 + p) with these edge times, drawn for a seed at
// `seed_time`; the drawn positions, ascending.
std::vector<int64_t> Draw(const std::vector<int64_t>& times, int64_t seed_time, int32_t fanout, uint64_t batch,
                          TemporalStrategy strategy = TemporalStrategy::kUniform,
                          std::vector<int64_t> excluded_sources = {}, int64_t window = -1) {
  const int64_t degree = static_cast<int64_t>(times.size());
  const int64_t indptr[2] = {0, degree};
  std::vector<int64_t> indices(degree), ids(degree);
  for (int64_t p = 0; p < degree; ++p) indices[p] = 100 + p, ids[p] = 1000 + p;
  std::vector<uint32_t> order(degree);
  EXPECT_TRUE(
      BuildTimeOrder({.indptr = indptr, .num_nodes = 1, .edge_times = times.data(), .edge_ids = ids.data()}, order, 1)
          .ok());
  const TemporalRule temporal{times.data(), nullptr, ids.data(), {strategy, window}, order.data()};
  NodeDraw<int64_t> n{
      .key = kKey, .batch_index = batch, .hop = 1, .indices = indices.data(), .fanout = fanout, .seed_time = seed_time};
  DrawScratch scratch;
  std::vector<int64_t> positions;
  DrawNode(temporal, n, indptr, excluded_sources, scratch, positions);
  EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end()));
  return positions;
}

TEST(TemporalRule, CountsAreExactAndNothingNewerThanTheSeedIsDrawn) {
  const std::vector<int64_t> times = {5, 9, 1, 7, 3, 12, 7, 0};
  for (TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    for (int64_t seed_time : {-1, 0, 3, 7, 20}) {
      const int64_t eligible = std::count_if(times.begin(), times.end(), [&](int64_t t) { return t <= seed_time; });
      for (int32_t fanout : {1, 2, 3, -1}) {
        for (uint64_t batch = 0; batch < 50; ++batch) {
          const std::vector<int64_t> p = Draw(times, seed_time, fanout, batch, strategy);
          ASSERT_EQ(static_cast<int64_t>(p.size()), SampleCount(eligible, fanout));
          EXPECT_EQ(std::set<int64_t>(p.begin(), p.end()).size(), p.size());
          for (int64_t q : p) EXPECT_LE(times[q], seed_time) << "position " << q;
        }
      }
    }
  }
}

TEST(TemporalRule, EveryEdgeEligibleIsTheUniformRuleInTimeOrder) {
  // By (time, id): positions 7, 2, 4, 8, 9, 0, 3, 6, 1, 5 (the two 4s and the two 7s by their ids).
  const std::vector<int64_t> times = {5, 9, 1, 7, 3, 12, 7, 0, 4, 4};
  const std::vector<int64_t> by_time = {7, 2, 4, 8, 9, 0, 3, 6, 1, 5};
  for (uint64_t batch = 0; batch < 100; ++batch) {
    for (int32_t fanout : {1, 3, 6}) {
      std::vector<int64_t> ranks(fanout), uniform;
      ChoosePositions(kKey, batch, 1, 0, 0, 10, fanout, ranks.data());
      for (int64_t r : ranks) uniform.push_back(by_time[r]);
      std::sort(uniform.begin(), uniform.end());
      EXPECT_EQ(Draw(times, 12, fanout, batch), uniform);
    }
  }
}

TEST(TemporalRule, LastTakesTheMostRecentTiesByTheLargerEdgeId) {
  const std::vector<int64_t> times = {5, 9, 1, 7, 3, 12, 7, 0};
  // At 8: eligible times 5, 1, 7, 3, 7, 0; the two 7s (positions 3, 6: ids 1003 < 1006) tie.
  EXPECT_EQ(Draw(times, 8, 1, 0, TemporalStrategy::kLast), (std::vector<int64_t>{6}));
  EXPECT_EQ(Draw(times, 8, 2, 0, TemporalStrategy::kLast), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(Draw(times, 8, 3, 0, TemporalStrategy::kLast), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(Draw(times, 100, 2, 0, TemporalStrategy::kLast), (std::vector<int64_t>{1, 5}));
  // The same for every batch: no randomness in it.
  for (uint64_t batch = 1; batch < 20; ++batch) {
    EXPECT_EQ(Draw(times, 8, 3, batch, TemporalStrategy::kLast), (std::vector<int64_t>{0, 3, 6}));
  }
  // Excluded edges are no candidates: without position 6 (source 106), the next most recent.
  EXPECT_EQ(Draw(times, 8, 2, 0, TemporalStrategy::kLast, {106}), (std::vector<int64_t>{0, 3}));
}

TEST(TemporalRule, ExcludedEdgesAreNoCandidates) {
  const std::vector<int64_t> times = {1, 2, 3, 4, 5, 6};
  for (uint64_t batch = 0; batch < 200; ++batch) {
    const std::vector<int64_t> p = Draw(times, 4, 2, batch, TemporalStrategy::kUniform, {101, 103});
    ASSERT_EQ(p.size(), 2u);  // candidates: positions 0, 2
    EXPECT_EQ(p, (std::vector<int64_t>{0, 2}));
  }
  EXPECT_EQ(Draw(times, 5, 2, 0, TemporalStrategy::kUniform, {100, 101, 102, 103}), (std::vector<int64_t>{4}));
}

TEST(TemporalRule, AWindowKeepsExactlyTheInEdgesFromSeedTimeLessItToSeedTime) {
  const std::vector<int64_t> times = {5, 9, 1, 7, 3, 12, 7, 0, 4, 4};
  for (TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
    for (int64_t window : {0, 1, 3, 100}) {
      for (int64_t seed_time : {-1, 0, 4, 7, 20}) {
        const auto in_window = [&](int64_t t) { return seed_time - window <= t && t <= seed_time; };
        const int64_t eligible = std::count_if(times.begin(), times.end(), in_window);
        for (int32_t fanout : {1, 2, 3, -1}) {
          for (uint64_t batch = 0; batch < 30; ++batch) {
            const std::vector<int64_t> p = Draw(times, seed_time, fanout, batch, strategy, {}, window);
            ASSERT_EQ(static_cast<int64_t>(p.size()), SampleCount(eligible, fanout))
                << "window " << window << " seed_time " << seed_time;
            for (int64_t q : p) EXPECT_TRUE(in_window(times[q])) << "position " << q << " window " << window;
          }
        }
      }
    }
  }
  // A window past the times' range, or reaching past the oldest int64 time, is no window.
  for (int64_t window : {int64_t{1000}, std::numeric_limits<int64_t>::max()}) {
    for (uint64_t batch = 0; batch < 20; ++batch) {
      EXPECT_EQ(Draw(times, 7, 3, batch, TemporalStrategy::kUniform, {}, window), Draw(times, 7, 3, batch));
    }
  }
  EXPECT_EQ(Draw(times, std::numeric_limits<int64_t>::min(), -1, 0, TemporalStrategy::kUniform, {}, 5).size(), 0u);
}

TEST(TemporalRule, AWindowsLastIsTheMostRecentInItAndExcludedEdgesStayOut) {
  const std::vector<int64_t> times = {5, 9, 1, 7, 3, 12, 7, 0, 4, 4};
  // At 7, window 3: times 4..7 are positions 0 (5), 3 (7), 6 (7), 8 (4), 9 (4).
  EXPECT_EQ(Draw(times, 7, 2, 0, TemporalStrategy::kLast, {}, 3), (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(Draw(times, 7, 9, 0, TemporalStrategy::kLast, {}, 3), (std::vector<int64_t>{0, 3, 6, 8, 9}));
  // Without 106 and 108 (positions 6, 8): 0, 3, 9 are left; the last two are 0 (5) and 3 (7).
  EXPECT_EQ(Draw(times, 7, 2, 0, TemporalStrategy::kLast, {106, 108}, 3), (std::vector<int64_t>{0, 3}));
  for (uint64_t batch = 0; batch < 100; ++batch) {
    EXPECT_EQ(Draw(times, 7, 3, batch, TemporalStrategy::kUniform, {106, 108, 102}, 3),
              (std::vector<int64_t>{0, 3, 9}));
  }
}

// How often each pair of `candidates` (5 of them: 10 pairs) is drawn by draw_pair(trial), checked against the
// uniform distribution by chi-square; returns the counts.
template <typename DrawPair>
std::map<std::pair<int64_t, int64_t>, int> ExpectUniformPairs(const std::vector<int64_t>& candidates, int trials,
                                                              DrawPair draw_pair) {
  std::map<std::pair<int64_t, int64_t>, int> seen;
  for (int t = 0; t < trials; ++t) {
    const std::vector<int64_t> p = draw_pair(t);
    EXPECT_EQ(p.size(), 2u);
    if (p.size() == 2) ++seen[{p[0], p[1]}];
  }
  EXPECT_EQ(seen.size(), 10u);
  double x2 = 0;
  for (const auto& [pair, n] : seen) {
    EXPECT_TRUE(std::count(candidates.begin(), candidates.end(), pair.first) == 1 &&
                std::count(candidates.begin(), candidates.end(), pair.second) == 1);
    const double e = trials / 10.0;
    x2 += (n - e) * (n - e) / e;
  }
  EXPECT_LT(x2, 33.7);  // df 9, p = 1e-4
  return seen;
}

TEST(TemporalRule, AWindowsUniformDrawsEveryPairInItEquallyOften) {
  // At 10 with window 6: times 4..10 are positions 0 (4), 2 (6), 3 (5), 7 (9), 8 (10): 10 pairs.
  const std::vector<int64_t> times = {4, 50, 6, 5, 60, 3, 70, 9, 10, 2};
  ExpectUniformPairs({0, 2, 3, 7, 8}, 30000,
                     [&](int t) { return Draw(times, 10, 2, t, TemporalStrategy::kUniform, {}, 6); });
}

TEST(TemporalRule, UniformDrawsEveryPairOfCandidatesEquallyOften) {
  // 5 candidates of 9: 10 pairs, each with probability 1/10.
  const std::vector<int64_t> times = {3, 50, 1, 2, 60, 0, 70, 4, 80};
  constexpr int kTrials = 30000;
  const auto seen = ExpectUniformPairs({0, 2, 3, 5, 7}, kTrials, [&](int t) { return Draw(times, 10, 2, t); });
  // A rule that favored the more recent would fail it: counts proportional to the pair's time sum.
  std::vector<double> skewed;
  double total = 0;
  for (const auto& [pair, n] : seen) total += static_cast<double>(times[pair.first] + times[pair.second] + 1);
  double x2_skewed = 0;
  for (const auto& [pair, n] : seen) {
    const double observed = kTrials * (times[pair.first] + times[pair.second] + 1) / total, e = kTrials / 10.0;
    x2_skewed += (observed - e) * (observed - e) / e;
  }
  EXPECT_GT(x2_skewed, 100);
}

// A generated dataset (homogeneous "tiny" or typed "mag") with random node times and edge times in place of
// the generator's, for whole-batch checks.
class TimedGraph {
 public:
  explicit TimedGraph(bool typed) : generated_(typed, {.seed = 3, .threads = 2, .temporal = true}) {
    GraphData& graph = generated_.graph();
    std::mt19937_64 rng(17);
    std::uniform_int_distribution<int64_t> time(0, 999);
    for (const NodeTypeSchema& type : graph.schema.node_types) {
      auto& t = times_.emplace_back(static_cast<size_t>(type.num_nodes));
      for (int64_t& x : t) x = time(rng);
      graph.arrays.data[type.node_time] = t.data();
    }
    for (const RelationSchema& rel : graph.schema.relations) {
      auto& t = times_.emplace_back(static_cast<size_t>(rel.num_edges));
      for (int64_t& x : t) x = time(rng);
      graph.arrays.data[rel.edge_attrs[TimeAttr(rel)].array] = t.data();
    }
  }
  const GraphData& graph() const { return generated_.graph(); }
  static int TimeAttr(const RelationSchema& rel) {
    for (size_t a = 0; a < rel.edge_attrs.size(); ++a) {
      if (rel.edge_attrs[a].name == "time") return static_cast<int>(a);
    }
    ADD_FAILURE() << rel.key() << " has no time";
    return 0;
  }

 private:
  testing::GeneratedGraph generated_;
  std::vector<std::vector<int64_t>> times_;
};

// Checks one disjoint batch against the graph, the spec and its seeds (and their times, where given).
void CheckBatch(const GraphData& graph, const SamplingSpec& spec, const BatchView& b, std::span<const int64_t> seeds,
                std::span<const int64_t> given_times) {
  const DatasetSchema& schema = graph.schema;
  const int hops = spec.num_hops();
  auto array = [&](int i) { return static_cast<const int64_t*>(graph.arrays.data[i]); };
  const BatchView::Type& seed_view = b.types[spec.seed_type];
  ASSERT_EQ(seed_view.num_nodes_per_hop[0], static_cast<int32_t>(seeds.size()));
  std::vector<int64_t> seed_time(seeds.size());
  for (size_t i = 0; i < seeds.size(); ++i) {
    EXPECT_EQ(seed_view.node_ids[i], seeds[i]);
    EXPECT_EQ(seed_view.batch[i], static_cast<int64_t>(i));
    seed_time[i] = given_times.empty() ? array(schema.node_types[spec.seed_type].node_time)[seeds[i]] : given_times[i];
    EXPECT_EQ(seed_view.seed_time[i], seed_time[i]);
  }
  // Per type: (subgraph, id) distinct; each hop's new nodes sorted by them.
  std::vector<std::vector<int64_t>> hop_begin(schema.node_types.size());
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const BatchView::Type& v = b.types[t];
    std::set<std::pair<int64_t, int64_t>> seen;
    int64_t at = 0;
    for (int h = 0; h <= hops; ++h) {
      hop_begin[t].push_back(at);
      for (int64_t i = at; i < at + v.num_nodes_per_hop[h]; ++i) {
        EXPECT_TRUE(seen.insert({v.batch[i], v.node_ids[i]}).second) << "node repeated in its subgraph";
        EXPECT_GE(v.batch[i], 0);
        EXPECT_LT(v.batch[i], static_cast<int64_t>(seeds.size()));
        if (h > 0 && i > at) {
          EXPECT_LT(std::make_pair(v.batch[i - 1], v.node_ids[i - 1]), std::make_pair(v.batch[i], v.node_ids[i]));
        }
      }
      at += v.num_nodes_per_hop[h];
    }
    hop_begin[t].push_back(at);
  }
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const RelationSchema& rel = schema.relations[r];
    const BatchView::Relation& e = b.relations[r];
    const BatchView::Type &src = b.types[rel.src_type], &dst = b.types[rel.dst_type];
    const int64_t* indptr = array(rel.indptr);
    const auto in_neighbor = [&](int64_t v, int64_t p) -> int64_t {
      return rel.index_dtype == DType::kInt32 ? static_cast<const int32_t*>(graph.arrays.data[rel.indices])[p]
                                              : array(rel.indices)[p];
    };
    const int64_t* edge_time = array(rel.edge_attrs[TimedGraph::TimeAttr(rel)].array);
    const int64_t* node_time = array(schema.node_types[rel.src_type].node_time);
    const int64_t* edge_ids = array(rel.edge_ids);
    const int a = spec.EdgeTimeOf(static_cast<int>(r));
    auto time_at = [&](int64_t p) { return a >= 0 ? edge_time[p] : node_time[in_neighbor(0, p)]; };
    int64_t begin = 0;
    for (int h = 0; h < hops; ++h) {
      // The hop's edges, per destination: their stored edge ids.
      std::map<int32_t, std::set<int64_t>> drawn;
      for (int64_t k = begin; k < begin + e.num_edges_per_hop[h]; ++k) {
        const int32_t u = e.edge_src[k], v = e.edge_dst[k];
        EXPECT_EQ(src.batch[u], dst.batch[v]) << "an edge between subgraphs";
        EXPECT_GE(v, hop_begin[rel.dst_type][h]);
        EXPECT_LT(v, hop_begin[rel.dst_type][h + 1]);
        drawn[v].insert(e.e_id[k]);
      }
      // Every frontier node: exactly min(fanout, candidates), each a candidate, "last" the most recent.
      for (int64_t v = hop_begin[rel.dst_type][h]; v < hop_begin[rel.dst_type][h + 1]; ++v) {
        const int64_t node = dst.node_ids[v], t = seed_time[dst.batch[v]];
        const int64_t window = spec.time.rule.window;  // candidates: t - window <= time <= t (no window: <= t)
        const auto candidate = [&](int64_t time) { return time <= t && (window < 0 || time >= t - window); };
        std::vector<std::pair<int64_t, int64_t>> candidates;  // (time, edge id)
        std::map<int64_t, std::pair<int64_t, int64_t>> by_id;
        for (int64_t p = indptr[node]; p < indptr[node + 1]; ++p) {
          by_id[edge_ids[p]] = {time_at(p), in_neighbor(node, p)};
          if (candidate(time_at(p))) candidates.push_back({time_at(p), edge_ids[p]});
        }
        const std::set<int64_t>& got = drawn[static_cast<int32_t>(v)];
        ASSERT_EQ(static_cast<int64_t>(got.size()),
                  SampleCount(static_cast<int64_t>(candidates.size()), spec.fanouts[r][h]));
        for (int64_t id : got) {
          ASSERT_TRUE(by_id.contains(id)) << "edge " << id << " is not an in-edge of " << node;
          EXPECT_TRUE(candidate(by_id[id].first))
              << "edge " << id << " at " << by_id[id].first << " for seed time " << t;
        }
        if (spec.time.rule.strategy == TemporalStrategy::kLast) {
          std::sort(candidates.rbegin(), candidates.rend());
          std::set<int64_t> recent;
          for (size_t i = 0; i < got.size(); ++i) recent.insert(candidates[i].second);
          EXPECT_EQ(got, recent);
        }
      }
      // Sources are the sampled in-neighbors, in the batch's nodes of their subgraph.
      for (int64_t k = begin; k < begin + e.num_edges_per_hop[h]; ++k) {
        const int64_t node = dst.node_ids[e.edge_dst[k]];
        bool found = false;
        for (int64_t p = indptr[node]; p < indptr[node + 1]; ++p) {
          found |= edge_ids[p] == e.e_id[k] && in_neighbor(node, p) == src.node_ids[e.edge_src[k]];
        }
        EXPECT_TRUE(found) << "edge " << e.e_id[k] << "'s source";
      }
      begin += e.num_edges_per_hop[h];
    }
  }
}

void CheckSessions(bool typed) {
  const TimedGraph g(typed);
  const GraphData& graph = g.graph();
  const DatasetSchema& schema = graph.schema;
  const int seed_type = typed ? schema.NodeTypeNamed("paper") : 0;
  ASSERT_GE(seed_type, 0);
  const int64_t num_seeds = std::min<int64_t>(schema.node_types[seed_type].num_nodes, 40);
  std::vector<int64_t> seeds, times;
  for (int64_t i = 0; i < num_seeds; ++i) seeds.push_back((i * 37) % schema.node_types[seed_type].num_nodes);
  seeds.push_back(seeds[3]);  // a repeated seed: its own subgraph
  for (size_t i = 0; i < seeds.size(); ++i) times.push_back(static_cast<int64_t>(i * 25));
  for (bool edge_level : {false, true}) {
    for (TemporalStrategy strategy : {TemporalStrategy::kUniform, TemporalStrategy::kLast}) {
      for (auto [given, window] : {std::pair{false, int64_t{-1}},
                                   {true, int64_t{-1}},
                                   {false, int64_t{60}},
                                   {true, int64_t{0}},
                                   {true, int64_t{60}}}) {
        SamplingSpec spec;
        spec.batch_size = static_cast<int64_t>(seeds.size());
        spec.seed_type = seed_type;
        spec.seeds_may_repeat = true;
        spec.fanouts.assign(schema.relations.size(), {4, 3});
        spec.edge_ids = true;
        spec.edge_attrs.resize(schema.relations.size());
        for (size_t r = 0; r < schema.relations.size(); ++r) {
          spec.edge_attrs[r] = {TimedGraph::TimeAttr(schema.relations[r])};
          if (edge_level) spec.time.edge_times.push_back(TimedGraph::TimeAttr(schema.relations[r]));
        }
        spec.time.node_level = !edge_level;
        spec.time.rule = {.strategy = strategy, .window = window};
        spec.time.seed_times_given = given;
        spec.disjoint = true;
        ASSERT_TRUE(CheckSamplingSpec(spec, schema).ok()) << CheckSamplingSpec(spec, schema);
        TypedBuffer buffer(graph, spec);
        CpuSampler sampler(graph, spec, 5);
        for (uint64_t batch = 0; batch < 3; ++batch) {
          SCOPED_TRACE(::testing::Message()
                       << "edge_level " << edge_level << " last " << (strategy == TemporalStrategy::kLast) << " given "
                       << given << " window " << window);
          sampler.SampleGraph(1, batch, seeds, buffer.view,
                              given ? std::span<const int64_t>(times) : std::span<const int64_t>());
          CheckBatch(graph, spec, buffer.view, seeds,
                     given ? std::span<const int64_t>(times) : std::span<const int64_t>());
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(TemporalSampler, HomogeneousBatchesKeepTheRuleSubgraphBySubgraph) { CheckSessions(false); }
TEST(TemporalSampler, TypedBatchesKeepTheRuleSubgraphBySubgraph) { CheckSessions(true); }

TEST(DisjointSampler, EachSubgraphIsTheOneSeedBatchUpToItsKey) {
  // Without times, a disjoint batch's subgraph s holds what a one-seed batch holds: the same node set per
  // hop is not required (its key differs), but every count rule and the subgraph structure are.
  const TimedGraph g(false);
  const GraphData& graph = g.graph();
  SamplingSpec spec = SamplingSpec::OneRelation(8, {3, 2});
  spec.disjoint = true;
  ASSERT_TRUE(CheckSamplingSpec(spec, graph.schema).ok());
  TypedBuffer buffer(graph, spec);
  const std::vector<int64_t> seeds = {5, 9, 5, 200, 31, 77, 5, 1};
  CpuSampler(graph, spec, 2).SampleGraph(0, 4, seeds, buffer.view);
  const BatchView::Type& v = buffer.view.types[0];
  const BatchView::Relation& e = buffer.view.relations[0];
  const int64_t* indptr = static_cast<const int64_t*>(graph.arrays.data[graph.schema.relations[0].indptr]);
  // Three subgraphs of seed 5, drawn under their own keys: not all the same.
  std::vector<std::vector<int64_t>> of_five(3);
  for (int64_t k = 0; k < e.num_edges_per_hop[0]; ++k) {
    const int64_t s = v.batch[e.edge_dst[k]];
    if (s == 0) of_five[0].push_back(v.node_ids[e.edge_src[k]]);
    if (s == 2) of_five[1].push_back(v.node_ids[e.edge_src[k]]);
    if (s == 6) of_five[2].push_back(v.node_ids[e.edge_src[k]]);
  }
  const int64_t expected = SampleCount(indptr[6] - indptr[5], 3);
  for (const auto& sources : of_five) EXPECT_EQ(static_cast<int64_t>(sources.size()), expected);
  if (indptr[6] - indptr[5] > 4) EXPECT_FALSE(of_five[0] == of_five[1] && of_five[1] == of_five[2]);
  for (int64_t k = 0; k < buffer.view.num_edges(0); ++k) EXPECT_EQ(v.batch[e.edge_src[k]], v.batch[e.edge_dst[k]]);
}

TEST(TemporalSpec, BadTimesAreRefusedNamingWhatIsWrong) {
  const TimedGraph g(false);
  const DatasetSchema& schema = g.graph().schema;
  SamplingSpec spec = SamplingSpec::OneRelation(8, {3, 2});
  spec.time.node_level = true;
  EXPECT_NE(CheckSamplingSpec(spec, schema).message().find("disjoint"), std::string::npos);
  spec.disjoint = true;
  EXPECT_TRUE(CheckSamplingSpec(spec, schema).ok());
  spec.time.node_level = false;
  spec.time.edge_times = {TimedGraph::TimeAttr(schema.relations[0])};
  EXPECT_TRUE(CheckSamplingSpec(spec, schema).ok());
  int not_time = -1;
  for (size_t a = 0; a < schema.relations[0].edge_attrs.size(); ++a) {
    if (schema.relations[0].edge_attrs[a].name != "time") not_time = static_cast<int>(a);
  }
  if (not_time >= 0) {
    spec.time.edge_times = {not_time};
    EXPECT_NE(CheckSamplingSpec(spec, schema).message().find("int64"), std::string::npos);
  }
  spec.time.edge_times.clear();
  spec.time.seed_times_given = false;
  DatasetSchema no_seed_times = schema;  // seeds without times of their own, none given
  no_seed_times.node_types[0].node_time = -1;
  spec.time.edge_times = {TimedGraph::TimeAttr(schema.relations[0])};
  EXPECT_NE(CheckSamplingSpec(spec, no_seed_times).message().find("has no node times"), std::string::npos);
  spec.time.seed_times_given = true;
  EXPECT_TRUE(CheckSamplingSpec(spec, no_seed_times).ok());
}

TEST(TemporalSpec, AnUntimedSourceTypeIsDrawnFromUnfiltered) {
  const TimedGraph g(true);
  DatasetSchema schema = g.graph().schema;
  SamplingSpec spec;
  spec.batch_size = 8;
  spec.seed_type = schema.NodeTypeNamed("paper");
  spec.fanouts.assign(schema.relations.size(), {2, 2});
  spec.disjoint = true;
  spec.time.node_level = true;
  ASSERT_TRUE(CheckSamplingSpec(spec, schema).ok()) << CheckSamplingSpec(spec, schema);
  const int author = schema.NodeTypeNamed("author");
  schema.node_types[author].node_time = -1;  // PyG's rule: authors' in-edges are drawn as without times
  EXPECT_TRUE(CheckSamplingSpec(spec, schema).ok()) << CheckSamplingSpec(spec, schema);
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const bool untimed = schema.relations[r].src_type == author;
    EXPECT_EQ(spec.TimeArrayOf(static_cast<int>(r), schema) < 0, untimed) << schema.relations[r].key();
  }
  // Such a batch samples, its untimed type's relations reading no times (ASan sees any such read), with every
  // in-edge from an author kept at fanout -1 (none filtered).
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    if (schema.relations[r].src_type == author) spec.fanouts[r] = {-1, 0};
  }
  GraphData partial = g.graph();
  partial.schema = schema;
  TypedBuffer buffer(partial, spec);
  const std::vector<int64_t> seeds = {1, 2, 3};
  CpuSampler(partial, spec, 4).SampleGraph(0, 0, seeds, buffer.view);
  int64_t edges = 0;
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const RelationSchema& rel = schema.relations[r];
    const int64_t n = buffer.view.num_edges(static_cast<int>(r));
    if (rel.src_type == author && rel.dst_type == spec.seed_type) {
      const auto* indptr = static_cast<const int64_t*>(partial.arrays.data[rel.indptr]);
      int64_t in_edges = 0;
      for (int64_t seed : seeds) in_edges += indptr[seed + 1] - indptr[seed];
      EXPECT_EQ(buffer.view.relations[r].num_edges_per_hop[0], in_edges) << rel.key();
    }
    edges += n;
  }
  EXPECT_GT(edges, 0);
  // A temporal link batch's subgraphs take their pairs' times: a spec without them is refused saying so.
  spec.seed_type = -1;
  spec.max_hop0.assign(schema.node_types.size(), 8);
  const absl::Status link = CheckSamplingSpec(spec, schema);
  EXPECT_NE(link.message().find("pairs' times"), std::string::npos) << link;
  spec.time.seed_times_given = true;
  EXPECT_TRUE(CheckSamplingSpec(spec, schema).ok()) << CheckSamplingSpec(spec, schema);
}

}  // namespace
}  // namespace gnnd
