// LABOR-0 (common/batch/sampling.h, namespace labor; drawn by kernels/cpu/draw.h and kernels/cpu/sampler.cc):
// each in-edge kept with probability min(1, k / d) (chi-square over batches), one r_t per source shared by every
// destination of a hop (a destination of larger degree keeps a subset of the shared sources a smaller one
// keeps), layer_dependency's one r_t a batch, batch_dependency's smooth and still uniform r_t, the weights
// d / k, exclusions removed first; whole batches of generated homogeneous and typed graphs keep the rule and
// hold fewer nodes than the uniform rule's.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/batch/layout.h"
#include "common/batch/sampling.h"
#include "gtest/gtest.h"
#include "kernels/cpu/draw.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"
#include "tools/dataset/synthetic_typed.h"

namespace gnnd {
namespace {

using testing::TypedBuffer;

const SamplingKey kLaborKey = MakeSamplingKey(7, 1, RandomPurpose::kLabor);

// One destination whose in-edges come from `sources`, drawn by LABOR-0 at `hop` of `batch`: the positions kept
// (ascending) and their weights.
struct LaborPick {
  std::vector<int64_t> positions;
  std::vector<float> weights;
};
LaborPick Pick(const std::vector<int64_t>& sources, int32_t fanout, uint64_t batch, uint32_t hop = 1,
               labor::Dependency dependency = {}, std::vector<int64_t> excluded_sources = {}, int64_t node = 0) {
  const int64_t degree = static_cast<int64_t>(sources.size());
  std::vector<int64_t> indptr(node + 2, 0);  // node `node` holds the list
  indptr[node + 1] = degree;
  const LaborRule labor{kLaborKey, dependency, 0};
  NodeDraw<int64_t> n{.key = MakeSamplingKey(7, 1, RandomPurpose::kNeighbors),
                      .batch_index = batch,
                      .hop = hop,
                      .node = node,
                      .indices = sources.data(),
                      .fanout = fanout};
  DrawScratch scratch;
  std::vector<int64_t> positions;
  DrawNode(labor, n, indptr.data(), excluded_sources, scratch, positions);
  EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end()));
  return {positions, std::vector<float>(positions.size(), labor.EdgeWeight(n))};
}

std::vector<int64_t> Range(int64_t first, int64_t count) {
  std::vector<int64_t> v(count);
  for (int64_t i = 0; i < count; ++i) v[i] = first + i;
  return v;
}

TEST(LaborRule, EachInEdgeIsKeptWithProbabilityFanoutOverDegree) {
  // d = 40, k = 10: every edge kept in a quarter of the batches; the counts over 40 edges x 4000 batches pass a
  // chi-square test (39 degrees of freedom, p = 0.001: 72.05) that a rule keeping k of them at random but
  // always the same or never does not.
  const std::vector<int64_t> sources = Range(100, 40);
  const int batches = 4000;
  std::vector<int64_t> kept(sources.size(), 0);
  double total = 0;
  for (int b = 0; b < batches; ++b) {
    const LaborPick pick = Pick(sources, 10, b);
    for (int64_t p : pick.positions) ++kept[p];
    for (float w : pick.weights) EXPECT_EQ(w, 4.0f);
    total += static_cast<double>(pick.positions.size());
  }
  const double expected = batches * 0.25, variance = expected * 0.75;
  double chi = 0;
  for (int64_t c : kept) chi += (c - expected) * (c - expected) / variance;
  EXPECT_LT(chi, 72.05) << ::testing::PrintToString(kept);
  EXPECT_NEAR(total / batches, 10.0, 0.3);  // k in expectation
}

TEST(LaborRule, ANodeOfAtMostFanoutInEdgesKeepsThemAllAtWeightOne) {
  for (int32_t fanout : {5, 8, -1}) {
    const LaborPick pick = Pick(Range(3, 5), fanout, 11);
    EXPECT_EQ(pick.positions, Range(0, 5));
    for (float w : pick.weights) EXPECT_EQ(w, 1.0f);
  }
}

TEST(LaborRule, DestinationsShareTheirSourcesRandomNumbers) {
  // Two destinations (nodes 3 and 8) over overlapping sources: with r_t shared, the one of larger degree keeps, among
  // the common sources, a subset of what the smaller keeps (r_t < k / d_big implies r_t < k / d_small); with
  // independent draws per destination that fails within a few batches.
  const std::vector<int64_t> small = Range(1000, 20), big = Range(1000, 60);
  int64_t common_kept = 0;
  for (uint64_t b = 0; b < 300; ++b) {
    const LaborPick s = Pick(small, 6, b, 1, {}, {}, 3), g = Pick(big, 6, b, 1, {}, {}, 8);
    const std::set<int64_t> kept_small(s.positions.begin(), s.positions.end());
    for (int64_t p : g.positions) {
      if (p < 20) {
        EXPECT_TRUE(kept_small.count(p)) << "batch " << b << ": source " << big[p];
        ++common_kept;
      }
    }
  }
  EXPECT_GT(common_kept, 300 * 20 * 0.1 * 0.5);  // about 6/60 of 20 sources a batch
}

TEST(LaborRule, ExcludedEdgesAreRemovedBeforeTheDraw) {
  // 12 in-edges, 4 of them excluded: the rule is over the 8 allowed (fanout 8: all of them, weight 1).
  const std::vector<int64_t> sources = Range(50, 12);
  const std::vector<int64_t> excluded = {51, 53, 57, 60};
  for (uint64_t b = 0; b < 20; ++b) {
    const LaborPick all = Pick(sources, 8, b, 1, {}, excluded);
    EXPECT_EQ(all.positions, (std::vector<int64_t>{0, 2, 4, 5, 6, 8, 9, 11}));
    const LaborPick some = Pick(sources, 2, b, 1, {}, excluded);
    for (int64_t p : some.positions) EXPECT_FALSE(std::count(excluded.begin(), excluded.end(), sources[p]));
    for (float w : some.weights) EXPECT_EQ(w, 4.0f);  // 8 allowed / 2
  }
}

TEST(LaborRule, LayerDependencyDrawsOneNumberPerSourceABatch) {
  int same_without = 0;
  for (uint64_t node = 0; node < 1000; ++node) {
    EXPECT_EQ(labor::Variate(kLaborKey, {.layer = true}, 5, 1, 0, node),
              labor::Variate(kLaborKey, {.layer = true}, 5, 3, 0, node));
    same_without += labor::Variate(kLaborKey, {}, 5, 1, 0, node) == labor::Variate(kLaborKey, {}, 5, 3, 0, node);
  }
  EXPECT_EQ(same_without, 0);
  // Node types draw apart (ids of two types are different nodes).
  EXPECT_NE(labor::Variate(kLaborKey, {}, 5, 1, 0, 42), labor::Variate(kLaborKey, {}, 5, 1, 1, 42));
}

// The variates come from SplitMix64 under a seed per (key, batch group, hop, type): pairs of them that a
// draw uses together (neighboring sources, one source at two hops, in two batches, of two types) fall into
// 8 x 8 bins as independent uniform pairs do (chi-square, 63 degrees of freedom, p = 0.001: 103.4), which a
// seed shared by two streams or an id mixed in too weakly would not.
TEST(LaborRule, VariatesOfNeighboringSourcesHopsBatchesAndTypesAreIndependent) {
  auto chi_square = [](auto pair) {
    std::vector<int64_t> bins(64, 0);
    const int64_t n = 64000;
    for (uint64_t t = 0; t < n; ++t) {
      const auto [x, y] = pair(t);
      ++bins[(x >> 29) * 8 + (y >> 29)];
    }
    double chi = 0;
    for (int64_t c : bins) chi += (c - n / 64.0) * (c - n / 64.0) / (n / 64.0);
    return chi;
  };
  const labor::Dependency fresh{};
  auto x = [&](uint64_t batch, uint32_t hop, uint32_t type, uint64_t node) {
    return labor::Variate(kLaborKey, fresh, batch, hop, type, node);
  };
  EXPECT_LT(chi_square([&](uint64_t t) { return std::pair(x(3, 1, 0, t), x(3, 1, 0, t + 1)); }), 103.4);
  EXPECT_LT(chi_square([&](uint64_t t) { return std::pair(x(3, 1, 0, t), x(3, 2, 0, t)); }), 103.4);
  EXPECT_LT(chi_square([&](uint64_t t) { return std::pair(x(3, 1, 0, t), x(4, 1, 0, t)); }), 103.4);
  EXPECT_LT(chi_square([&](uint64_t t) { return std::pair(x(3, 1, 0, t), x(3, 1, 1, t)); }), 103.4);
  EXPECT_LT(chi_square([&](uint64_t t) { return std::pair(x(3, 1, 0, 2 * t), x(3, 1, 0, 2 * t + 1)); }), 103.4);
  // A stream computed once gives each source's variate as the one-source form does.
  const labor::Stream stream = labor::StreamOf(kLaborKey, {.batches = 5}, 12, 2, 1);
  for (uint64_t node = 0; node < 100; ++node) {
    EXPECT_EQ(labor::Variate(stream, node), labor::Variate(kLaborKey, {.batches = 5}, 12, 2, 1, node));
  }
}

TEST(LaborRule, BatchDependencyMovesEachNumberSmoothlyAndKeepsItUniform) {
  const labor::Dependency fresh{}, smooth{.batches = 8};
  for (uint64_t node = 0; node < 200; ++node) {
    // At multiples of K the number is batch g's own draw; between them it moves by (U(g+1) - U(g)) / K a step
    // (rounded down), the shorter way round, monotonically.
    for (uint64_t g = 0; g < 4; ++g) {
      EXPECT_EQ(labor::Variate(kLaborKey, smooth, 8 * g, 2, 0, node), labor::Variate(kLaborKey, fresh, g, 2, 0, node));
      const uint32_t from = labor::Variate(kLaborKey, fresh, g, 2, 0, node);
      const auto span = static_cast<int32_t>(labor::Variate(kLaborKey, fresh, g + 1, 2, 0, node) - from);
      int64_t last = 0;
      for (uint64_t j = 0; j < 8; ++j) {
        const auto moved = static_cast<int32_t>(labor::Variate(kLaborKey, smooth, 8 * g + j, 2, 0, node) - from);
        EXPECT_EQ(moved, static_cast<int64_t>(std::floor(static_cast<double>(span) * static_cast<double>(j) / 8)));
        EXPECT_LE(std::abs(static_cast<int64_t>(moved)), std::abs(static_cast<int64_t>(span)));
        EXPECT_GE(span >= 0 ? moved - last : last - moved, 0);
        last = moved;
      }
    }
  }
  // Uniform at every step between the draws: 16 bins of the top 4 bits over 16000 nodes (chi-square, 15
  // degrees of freedom, p = 0.001: 37.70).
  for (uint64_t batch : {8u, 11u, 13u}) {
    std::vector<int64_t> bins(16, 0);
    for (uint64_t node = 0; node < 16000; ++node) ++bins[labor::Variate(kLaborKey, smooth, batch, 1, 0, node) >> 28];
    double chi = 0;
    for (int64_t c : bins) chi += (c - 1000.0) * (c - 1000.0) / 1000.0;
    EXPECT_LT(chi, 37.70) << "batch " << batch << ": " << ::testing::PrintToString(bins);
  }
  // Consecutive batches share most of a node's kept sources with K = 8, few without.
  const std::vector<int64_t> sources = Range(0, 200);
  auto shared = [&](labor::Dependency dependency) {
    int64_t both = 0, kept = 0;
    for (uint64_t b = 0; b < 64; ++b) {
      const LaborPick now = Pick(sources, 20, b, 1, dependency), next = Pick(sources, 20, b + 1, 1, dependency);
      std::vector<int64_t> common;
      std::set_intersection(now.positions.begin(), now.positions.end(), next.positions.begin(), next.positions.end(),
                            std::back_inserter(common));
      both += static_cast<int64_t>(common.size());
      kept += static_cast<int64_t>(now.positions.size());
    }
    return static_cast<double>(both) / static_cast<double>(kept);
  };
  EXPECT_LT(shared(fresh), 0.2);   // independent batches: about k / d = 0.1
  EXPECT_GT(shared(smooth), 0.6);  // about 1 - E|step| / (k / d) = 1 - (1 / 32) / 0.1
}

TEST(LaborRule, ThresholdIsTheCeilingOfFanoutOverDegreeIn32Bits) {
  EXPECT_EQ(labor::Threshold(40, 10), uint64_t{1} << 30);
  EXPECT_EQ(labor::Threshold(3, 1), (uint64_t{1} << 32) / 3 + 1);
  EXPECT_EQ(labor::Threshold(10, 10), uint64_t{1} << 32);
  EXPECT_EQ(labor::Threshold(10, -1), uint64_t{1} << 32);
  EXPECT_TRUE(labor::Keeps(0, labor::Threshold(int64_t{1} << 40, 1)));
  EXPECT_FALSE(labor::Keeps(1, labor::Threshold(int64_t{1} << 40, 1)));
  EXPECT_EQ(labor::Weight(3, 2), 1.5f);
  EXPECT_EQ(labor::Weight(2, 2), 1.0f);
}

// Every edge of a LABOR batch is an in-edge of its destination whose source r_t passes the destination's
// threshold, every such in-edge is there once, and its weight is d / k; the batch holds no more nodes than the
// uniform rule's of the same seeds (fewer, summed over batches).
void CheckLaborBatches(bool typed) {
  const testing::GeneratedGraph g(typed, {.seed = 4, .threads = 2});
  const GraphData& graph = g.graph();
  const DatasetSchema& schema = graph.schema;
  const int seed_type = typed ? schema.NodeTypeNamed("paper") : 0;
  SamplingSpec spec;
  spec.batch_size = 64;
  spec.seed_type = seed_type;
  spec.fanouts.assign(schema.relations.size(), {5, 3});
  SamplingSpec uniform = spec;
  spec.labor = {.active = true, .dependency = {.layer = typed}};
  ASSERT_TRUE(CheckSamplingSpec(spec, schema).ok()) << CheckSamplingSpec(spec, schema);
  TypedBuffer labor_buffer(graph, spec), uniform_buffer(graph, uniform);
  CpuSampler sampler(graph, spec, 9), uniform_sampler(graph, uniform, 9);
  const SamplingKey key = MakeSamplingKey(9, 2, RandomPurpose::kLabor);
  const int64_t seed_nodes = schema.node_types[seed_type].num_nodes;
  int64_t labor_nodes = 0, uniform_nodes = 0;
  for (uint64_t batch = 0; batch < 6; ++batch) {
    std::vector<int64_t> seeds;
    for (int64_t i = 0; i < 64; ++i) seeds.push_back((i * 7919 + static_cast<int64_t>(batch) * 131) % seed_nodes);
    std::sort(seeds.begin(), seeds.end());
    seeds.erase(std::unique(seeds.begin(), seeds.end()), seeds.end());
    sampler.SampleGraph(2, batch, seeds, labor_buffer.view);
    uniform_sampler.SampleGraph(2, batch, seeds, uniform_buffer.view);
    const BatchView& b = labor_buffer.view;
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      labor_nodes += b.num_nodes(static_cast<int>(t));
      uniform_nodes += uniform_buffer.view.num_nodes(static_cast<int>(t));
    }
    for (size_t r = 0; r < schema.relations.size(); ++r) {
      const RelationSchema& rel = schema.relations[r];
      const BatchView::Relation& e = b.relations[r];
      const auto* indptr = static_cast<const int64_t*>(graph.arrays.data[rel.indptr]);
      const void* indices = graph.arrays.data[rel.indices];
      auto source_at = [&](int64_t p) {
        return rel.index_dtype == DType::kInt32 ? int64_t{static_cast<const int32_t*>(indices)[p]}
                                                : static_cast<const int64_t*>(indices)[p];
      };
      const BatchView::Type& dst = b.types[rel.dst_type];
      const BatchView::Type& src = b.types[rel.src_type];
      int64_t edge = 0, frontier_begin = 0;
      for (int hop = 0; hop < 2; ++hop) {
        const int64_t frontier_end = frontier_begin + dst.num_nodes_per_hop[hop];
        // The expected edges of this hop, destination by destination in frontier order.
        std::vector<std::pair<int32_t, int64_t>> expected;
        std::vector<float> expected_weight;
        for (int64_t v = frontier_begin; v < frontier_end; ++v) {
          const int64_t node = dst.node_ids[v], d = indptr[node + 1] - indptr[node];
          const uint64_t threshold = labor::Threshold(d, 5 - 2 * hop);
          for (int64_t p = indptr[node]; p < indptr[node + 1]; ++p) {
            const uint32_t x = labor::Variate(key, spec.labor.dependency, batch, static_cast<uint32_t>(hop + 1),
                                              static_cast<uint32_t>(rel.src_type), static_cast<uint64_t>(source_at(p)));
            if (labor::Keeps(x, threshold)) {
              expected.push_back({static_cast<int32_t>(v), source_at(p)});
              expected_weight.push_back(labor::Weight(d, 5 - 2 * hop));
            }
          }
        }
        ASSERT_EQ(e.num_edges_per_hop[hop], static_cast<int32_t>(expected.size())) << rel.key() << " hop " << hop;
        for (size_t i = 0; i < expected.size(); ++i, ++edge) {
          EXPECT_EQ(e.edge_dst[edge], expected[i].first);
          EXPECT_EQ(src.node_ids[e.edge_src[edge]], expected[i].second);
          EXPECT_EQ(e.edge_weight[edge], expected_weight[i]);
        }
        frontier_begin = frontier_end;
      }
    }
  }
  EXPECT_LT(labor_nodes, uniform_nodes);
}

TEST(LaborSampler, HomogeneousBatchesKeepTheRule) { CheckLaborBatches(false); }
TEST(LaborSampler, TypedBatchesKeepTheRule) { CheckLaborBatches(true); }

TEST(LaborSpec, BadCombinationsAreRefusedNamingThem) {
  const DatasetSchema schema = HomogeneousSchema(100, 1000);
  SamplingSpec spec = SamplingSpec::OneRelation(8, {3, 2});
  spec.labor.active = true;
  EXPECT_TRUE(CheckSamplingSpec(spec, schema).ok());
  spec.labor.dependency.batches = 0;
  EXPECT_NE(CheckSamplingSpec(spec, schema).message().find("batch_dependency = 0"), std::string::npos);
  spec.labor.dependency.batches = 1;
  spec.disjoint = true;
  EXPECT_NE(CheckSamplingSpec(spec, schema).message().find("disjoint"), std::string::npos);
}

TEST(LaborSpec, AHopIsBoundedByOneAndAHalfItsExpectedEdgesAndAMargin) {
  // LABOR keeps any number of a node's in-edges, k on average: the bound is on the hop, not the node.
  EXPECT_EQ(LaborHopEdges(8, 3, 50), 24 + 12 + static_cast<int64_t>(8 * std::sqrt(24.0)) + 256);
  EXPECT_EQ(LaborHopEdges(8, 3, 20), 8 * 20);  // never more than every in-edge
  EXPECT_EQ(LaborHopEdges(1000000, 15, 5000), 22500000 + static_cast<int64_t>(8 * std::sqrt(15e6)) + 256);
  const DatasetSchema schema = HomogeneousSchema(1000, 100000);
  SamplingSpec spec = SamplingSpec::OneRelation(8, {3});
  spec.labor.active = true;
  const auto labor = ComputeBatchCapacity(spec, schema, {50});
  ASSERT_TRUE(labor.ok());
  EXPECT_EQ(labor->max_edges[0], LaborHopEdges(8, 3, 50));
  const BatchLayout layout = BatchLayout::Make(*labor, spec, schema);
  EXPECT_NE(layout.relations[0].edge_weight, SIZE_MAX);
  const BatchSchema batch = BatchSchemaOf(layout, schema);
  const int weight = batch.ArrayNamed("edge_weight");
  ASSERT_GE(weight, 0);
  EXPECT_EQ(batch.arrays[weight].dtype, DType::kFloat32);
  EXPECT_EQ(batch.arrays[weight].count, batch.CountNamed("edges"));
  // A papers-sized graph's batch of 1024, [15,10,5]: within the int32 layout (the in-degree bound was not).
  const DatasetSchema papers = HomogeneousSchema(111059956, 1615685872);
  SamplingSpec big = SamplingSpec::OneRelation(1024, {15, 10, 5});
  big.labor.active = true;
  const auto bound = ComputeBatchCapacity(big, papers, {13155});
  ASSERT_TRUE(bound.ok()) << bound.status();
  EXPECT_LT(bound->max_edges[0], 4 * (1024 * 15 + 1024 * 15 * 10 + 1024 * 15 * 10 * 5));
}

TEST(LaborSampler, ABatchThatOutgrowsItsHopBoundIsDrawnAgain) {
  // One hop of 64 seeds: each attempt's edges by the rule; with the hop's bound set one below attempt 0's count,
  // the batch is the first attempt that fits, edge for edge.
  const testing::GeneratedGraph g(false, {.seed = 4, .threads = 2});
  const GraphData& graph = g.graph();
  const RelationSchema& rel = graph.schema.relations[0];
  const auto* indptr = static_cast<const int64_t*>(graph.arrays.data[rel.indptr]);
  const void* indices = graph.arrays.data[rel.indices];
  auto source_at = [&](int64_t p) {
    return rel.index_dtype == DType::kInt32 ? int64_t{static_cast<const int32_t*>(indices)[p]}
                                            : static_cast<const int64_t*>(indices)[p];
  };
  SamplingSpec spec = SamplingSpec::OneRelation(64, {3});
  spec.labor.active = true;
  auto kept = [&](const std::vector<int64_t>& seeds, uint32_t attempt) {
    const SamplingKey key = labor::Key(9, 2, attempt);
    std::vector<int64_t> sources;
    for (int64_t s : seeds) {
      const uint64_t threshold = labor::Threshold(indptr[s + 1] - indptr[s], 3);
      for (int64_t p = indptr[s]; p < indptr[s + 1]; ++p) {
        if (labor::Keeps(labor::Variate(key, {}, 0, 1, 0, static_cast<uint64_t>(source_at(p))), threshold)) {
          sources.push_back(source_at(p));
        }
      }
    }
    return sources;
  };
  int retried = 0;
  for (int64_t offset = 0; offset < 8; ++offset) {
    std::vector<int64_t> seeds;
    for (int64_t i = 0; i < 64; ++i) seeds.push_back(offset * 64 + i);
    const int64_t bound = static_cast<int64_t>(kept(seeds, 0).size()) - 1;
    uint32_t fits = 0;
    while (fits < 16 && static_cast<int64_t>(kept(seeds, fits).size()) > bound) ++fits;
    if (fits == 16) continue;  // no attempt fits this bound: another seed set
    absl::StatusOr<BatchCapacity> capacity = ComputeBatchCapacity(spec, graph.schema, graph.MaxInDegrees());
    ASSERT_TRUE(capacity.ok());
    ASSERT_GE(capacity->hops[0].edges[0], bound);
    capacity->hops[0].edges[0] = bound;
    const BatchLayout layout = BatchLayout::Make(*capacity, spec, graph.schema);
    std::vector<std::byte> bytes(layout.total_bytes);
    const BatchView view = BatchView::At(bytes.data(), layout);
    CpuSampler(graph, spec, 9).SampleGraph(2, 0, seeds, view);
    const std::vector<int64_t> want = kept(seeds, fits);
    ASSERT_EQ(view.relations[0].num_edges_per_hop[0], static_cast<int32_t>(want.size())) << "attempt " << fits;
    for (size_t e = 0; e < want.size(); ++e) {
      EXPECT_EQ(view.types[0].node_ids[view.relations[0].edge_src[e]], want[e]) << e;
    }
    ++retried;
  }
  EXPECT_GT(retried, 4);
}

}  // namespace
}  // namespace gnnd

namespace gnnd {
namespace {

// A batch whose hop outgrows its bound in every attempt is no batch: the sampler says so, naming the relation,
// the hop and the bound (it was handed out with that hop's edges left out, biased and unsaid).
TEST(LaborSampler, ABatchThatOutgrowsItsBoundInEveryAttemptFailsNamingIt) {
  const testing::GeneratedGraph g(false, {.seed = 4, .threads = 2});
  const GraphData& graph = g.graph();
  SamplingSpec spec = SamplingSpec::OneRelation(64, {3});
  spec.labor.active = true;
  absl::StatusOr<BatchCapacity> capacity = ComputeBatchCapacity(spec, graph.schema, graph.MaxInDegrees());
  ASSERT_TRUE(capacity.ok());
  capacity->hops[0].edges[0] = 0;  // no attempt keeps no edge
  const BatchLayout layout = BatchLayout::Make(*capacity, spec, graph.schema);
  std::vector<std::byte> bytes(layout.total_bytes);
  const BatchView view = BatchView::At(bytes.data(), layout);
  std::vector<int64_t> seeds(64);
  std::iota(seeds.begin(), seeds.end(), 0);
  CpuSampler sampler(graph, spec, 9);
  sampler.SampleGraph(2, 0, seeds, view);
  EXPECT_EQ(sampler.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(sampler.status().message(),
            absl::StrCat("LABOR: ", graph.schema.relations[0].key(),
                         " kept more edges at hop 1 than the batch holds (0) in each of 64 draws: its destinations "
                         "share sources, which LABOR keeps or drops together; sample it with a lower fanout or "
                         "without labor"));
  // The next batch that fits is made, and says so.
  capacity->hops[0].edges[0] = 1 << 20;
  const BatchLayout roomy = BatchLayout::Make(*capacity, spec, graph.schema);
  std::vector<std::byte> more(roomy.total_bytes);
  sampler.SampleGraph(2, 1, seeds, BatchView::At(more.data(), roomy));
  EXPECT_TRUE(sampler.status().ok()) << sampler.status();
}

}  // namespace
}  // namespace gnnd
