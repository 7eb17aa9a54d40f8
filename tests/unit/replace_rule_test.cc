// Draws with replacement (PyG's replace=True; common/batch/sampling.h, namespace replacement, drawn by
// kernels/cpu/draw.h): exactly fanout draws a node with any allowed in-edge (all once for -1), each over every
// allowed in-edge independently: uniformly, or in proportion to weight (weight 0 and excluded edges never), checked
// by chi-square against rules that draw without replacement or uniformly; and whole batches keep the counts.
#include <algorithm>
#include <map>
#include <vector>

#include "common/batch/layout.h"
#include "common/batch/sampling.h"
#include "gtest/gtest.h"
#include "kernels/cpu/draw.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd {
namespace {

constexpr neighbors::Rule kWithReplacement{.replace = true};

// One node's in-edges (sources 100 + p; weights, or none for the uniform rule), drawn with replacement.
std::vector<int64_t> DrawWithReplacement(int64_t degree, int32_t fanout, uint64_t batch,
                                         const std::vector<float>& weights = {},
                                         std::vector<int64_t> excluded_sources = {}) {
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
  if (weights.empty()) {
    DrawNode(UniformRule{.rule = kWithReplacement}, n, indptr, excluded_sources, scratch, positions);
  } else {
    DrawNode(WeightedRule{.weights = weights.data(), .rule = kWithReplacement}, n, indptr, excluded_sources, scratch,
             positions);
  }
  EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end()));
  return positions;
}

// Chi-square of how often each position was drawn against `expected` shares (summing to 1).
double ChiSquare(const std::map<int64_t, int>& seen, const std::map<int64_t, double>& expected, int draws) {
  double x2 = 0;
  for (const auto& [p, share] : expected) {
    const double e = share * draws, n = seen.contains(p) ? seen.at(p) : 0;
    x2 += (n - e) * (n - e) / e;
  }
  return x2;
}

TEST(ReplaceRule, ExactlyFanoutDrawsANodeWithAnyInEdge) {
  EXPECT_EQ(DrawCount(5, 3, kWithReplacement), 3);
  EXPECT_EQ(DrawCount(2, 7, kWithReplacement), 7);
  EXPECT_EQ(DrawCount(0, 7, kWithReplacement), 0);
  EXPECT_EQ(DrawCount(5, -1, kWithReplacement), 5);
  EXPECT_EQ(DrawCount(2, 7, neighbors::Rule{}), 2);
  // A fanout of -1 takes each in-edge once: the hop's rule draws without replacement then.
  EXPECT_FALSE(kWithReplacement.ForFanout(-1).replace);
  EXPECT_TRUE(kWithReplacement.ForFanout(0).replace);
  EXPECT_FALSE(kWithReplacement.Distinct());
  EXPECT_TRUE(neighbors::Rule{}.Distinct());
  for (uint64_t batch = 0; batch < 100; ++batch) {
    EXPECT_EQ(DrawWithReplacement(2, 7, batch).size(), 7u);
    EXPECT_EQ(DrawWithReplacement(4, -1, batch), (std::vector<int64_t>{0, 1, 2, 3}));  // -1: each once
    EXPECT_EQ(DrawWithReplacement(3, 4, batch, {0.0f, 2.0f, 0.0f}), (std::vector<int64_t>(4, 1)));
    EXPECT_TRUE(DrawWithReplacement(3, 4, batch, {0.0f, 0.0f, 0.0f}).empty());
    for (int64_t p : DrawWithReplacement(6, 5, batch, {}, {101, 104})) EXPECT_TRUE(p != 1 && p != 4) << p;
  }
}

TEST(ReplaceRule, UniformDrawsAreIndependentAndUniform) {
  constexpr int kTrials = 20000;
  std::map<int64_t, int> seen;
  int repeats = 0;  // trials with a position drawn twice: 1 - 5 4 3 / 5^3 = 52 % of them with replacement
  for (int t = 0; t < kTrials; ++t) {
    const std::vector<int64_t> p = DrawWithReplacement(5, 3, t);
    ASSERT_EQ(p.size(), 3u);
    for (int64_t q : p) ++seen[q];
    repeats += std::adjacent_find(p.begin(), p.end()) != p.end();
  }
  EXPECT_LT(ChiSquare(seen, {{0, 0.2}, {1, 0.2}, {2, 0.2}, {3, 0.2}, {4, 0.2}}, 3 * kTrials), 18.5);  // df 4, 1e-3
  EXPECT_NEAR(repeats / static_cast<double>(kTrials), 0.52, 0.02);  // without replacement: 0
}

TEST(ReplaceRule, WeightedDrawsAreInProportionToWeight) {
  const std::vector<float> w = {0.5f, 0.0f, 3.0f, 1.0f, 0.0f, 1.5f};  // total 6
  constexpr int kTrials = 20000;
  std::map<int64_t, int> seen;
  for (int t = 0; t < kTrials; ++t) {
    for (int64_t q : DrawWithReplacement(6, 2, t, w)) ++seen[q];
  }
  EXPECT_FALSE(seen.contains(1) || seen.contains(4)) << "a weight-0 edge drawn";
  const std::map<int64_t, double> proportional = {{0, 0.5 / 6}, {2, 3.0 / 6}, {3, 1.0 / 6}, {5, 1.5 / 6}};
  EXPECT_LT(ChiSquare(seen, proportional, 2 * kTrials), 16.3);  // df 3, p = 1e-3
  // A uniform rule over the positive weights fails it.
  EXPECT_GT(ChiSquare(seen, {{0, 0.25}, {2, 0.25}, {3, 0.25}, {5, 0.25}}, 2 * kTrials), 1000);
  // Excluded edges are out of the total: without position 2 the others share it.
  std::map<int64_t, int> rest;
  for (int t = 0; t < kTrials; ++t) {
    for (int64_t q : DrawWithReplacement(6, 2, t, w, {102})) ++rest[q];
  }
  EXPECT_FALSE(rest.contains(2));
  EXPECT_LT(ChiSquare(rest, {{0, 0.5 / 3}, {3, 1.0 / 3}, {5, 1.5 / 3}}, 2 * kTrials), 13.8);  // df 2, p = 1e-3
}

// Whole batches, homogeneous and typed (relations with fewer edges than a hop draws: a slot's bound must not take
// distinct destinations' edges to be distinct), uniform and weighted: every relation's every frontier node of its
// destination type gets exactly fanout edges if it has an in-edge it may draw, else none; some edge comes twice.
TEST(ReplaceRule, WholeBatchesGiveEveryFrontierNodeExactlyFanoutEdges) {
  for (bool typed : {false, true}) {
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "typed " << typed << " weighted " << weighted);
      const testing::GeneratedGraph g(typed, {.seed = 4, .threads = 2, .edge_attrs = true});
      const GraphData& graph = g.graph();
      const DatasetSchema& schema = graph.schema;
      const int seed_type = typed ? schema.NodeTypeNamed("paper") : 0;
      SamplingSpec spec;
      spec.batch_size = 64;
      spec.seed_type = seed_type;
      spec.fanouts.assign(schema.relations.size(), {6, 4});
      spec.neighbors.replace = true;
      for (const RelationSchema& rel : schema.relations) {
        for (size_t a = 0; a < rel.edge_attrs.size() && weighted; ++a) {
          if (rel.edge_attrs[a].name == "edge_weight") spec.edge_weights.push_back(static_cast<int>(a));
        }
      }
      ASSERT_EQ(spec.edge_weights.size(), weighted ? schema.relations.size() : 0u);
      ASSERT_TRUE(CheckSamplingSpec(spec, schema).ok()) << CheckSamplingSpec(spec, schema);
      testing::TypedBuffer buffer(graph, spec);
      CpuSampler sampler(graph, spec, 3);
      std::vector<int64_t> seeds(64);
      for (int64_t i = 0; i < 64; ++i) seeds[i] = (i * 7) % schema.node_types[seed_type].num_nodes;
      sampler.SampleGraph(0, 0, seeds, buffer.view);
      ASSERT_TRUE(sampler.status().ok());
      int64_t repeated = 0;
      for (size_t r = 0; r < schema.relations.size(); ++r) {
        const RelationSchema& rel = schema.relations[r];
        const BatchView::Type& dst = buffer.view.types[rel.dst_type];
        const BatchView::Relation& edges = buffer.view.relations[r];
        const auto* indptr = static_cast<const int64_t*>(graph.arrays.data[rel.indptr]);
        const auto* w = weighted
                            ? static_cast<const float*>(graph.arrays.data[rel.edge_attrs[spec.edge_weights[r]].array])
                            : nullptr;
        int64_t at = 0, first = 0;
        for (int hop = 0; hop < 2; ++hop) {
          std::map<int32_t, int> per_node;
          std::map<std::pair<int32_t, int32_t>, int> per_edge;
          for (int64_t k = at; k < at + edges.num_edges_per_hop[hop]; ++k) {
            ++per_node[edges.edge_dst[k]];
            repeated += ++per_edge[{edges.edge_src[k], edges.edge_dst[k]}] == 2;
          }
          for (int64_t v = first; v < first + dst.num_nodes_per_hop[hop]; ++v) {
            const int64_t node = dst.node_ids[v];
            bool any = false;  // an in-edge it may draw (of positive weight)
            for (int64_t p = indptr[node]; p < indptr[node + 1]; ++p) any |= w == nullptr || w[p] > 0;
            ASSERT_EQ(per_node[static_cast<int32_t>(v)], any ? spec.fanouts[r][hop] : 0)
                << rel.key() << " hop " << hop << " node " << node;
          }
          at += edges.num_edges_per_hop[hop];
          first += dst.num_nodes_per_hop[hop];
        }
      }
      EXPECT_GT(repeated, 0) << "no edge drawn twice in a batch";
    }
  }
}

}  // namespace
}  // namespace gnnd
