// Induced batches (SamplingSpec::induced, PyG's subgraph_type="induced"): the directional batch's nodes, and
// every edge of each relation between them, per destination node in local order and then in CSC order, each
// source at its first local index; e_id the stored ids and edge attributes their rows; slots sized for them.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/batch/layout.h"
#include "common/batch/spec.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"

namespace gnnd {
namespace {

using testing::TypedBuffer;

int64_t SourceAt(const GraphData& graph, const RelationSchema& rel, int64_t p) {
  const void* indices = graph.arrays.data[rel.indices];
  return rel.index_dtype == DType::kInt32 ? int64_t{static_cast<const int32_t*>(indices)[p]}
                                          : static_cast<const int64_t*>(indices)[p];
}

void CheckInducedBatches(bool typed) {
  const testing::GeneratedGraph g(typed, {.seed = 4, .threads = 2, .edge_attrs = true});
  const GraphData& graph = g.graph();
  const DatasetSchema& schema = graph.schema;
  const int seed_type = typed ? schema.NodeTypeNamed("paper") : 0;
  SamplingSpec directional;
  directional.batch_size = 40;
  directional.seed_type = seed_type;
  directional.seeds_may_repeat = true;
  directional.fanouts.assign(schema.relations.size(), {3, 2});
  directional.edge_ids = true;
  for (const RelationSchema& rel : schema.relations) {
    std::vector<int>& attrs = directional.edge_attrs.emplace_back(rel.edge_attrs.size());
    std::iota(attrs.begin(), attrs.end(), 0);
  }
  SamplingSpec spec = directional;
  spec.induced = true;
  ASSERT_TRUE(CheckSamplingSpec(spec, schema).ok()) << CheckSamplingSpec(spec, schema);
  TypedBuffer induced_buffer(graph, spec), directional_buffer(graph, directional);
  CpuSampler sampler(graph, spec, 9), directional_sampler(graph, directional, 9);
  const int64_t seed_nodes = schema.node_types[seed_type].num_nodes;
  int64_t more = 0;  // edges an induced batch has beyond the drawn ones, over every batch
  for (uint64_t batch = 0; batch < 4; ++batch) {
    std::vector<int64_t> seeds;
    for (int64_t i = 0; i < 39; ++i) seeds.push_back((i * 7919 + static_cast<int64_t>(batch) * 131) % seed_nodes);
    seeds.push_back(seeds[3]);  // a repeated seed: its in-edges twice, its own index the first one
    sampler.Sample(2, batch, seeds, induced_buffer.view);
    directional_sampler.Sample(2, batch, seeds, directional_buffer.view);
    const BatchView& b = induced_buffer.view;
    const BatchView& d = directional_buffer.view;
    std::vector<absl::flat_hash_map<int64_t, int32_t>> local(schema.node_types.size());
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      const int64_t n = b.num_nodes(static_cast<int>(t));
      ASSERT_EQ(n, d.num_nodes(static_cast<int>(t)));
      ASSERT_EQ(std::vector<int64_t>(b.types[t].node_ids, b.types[t].node_ids + n),
                std::vector<int64_t>(d.types[t].node_ids, d.types[t].node_ids + n));
      for (int64_t i = 0; i < n; ++i) local[t].try_emplace(b.types[t].node_ids[i], static_cast<int32_t>(i));
    }
    for (size_t r = 0; r < schema.relations.size(); ++r) {
      const RelationSchema& rel = schema.relations[r];
      const BatchView::Relation& e = b.relations[r];
      const auto* indptr = static_cast<const int64_t*>(graph.arrays.data[rel.indptr]);
      const auto* ids = static_cast<const int64_t*>(graph.arrays.data[rel.edge_ids]);
      std::vector<std::tuple<int32_t, int32_t, int64_t>> expected;  // (src, dst, CSC position)
      for (int64_t v = 0; v < b.num_nodes(rel.dst_type); ++v) {
        const int64_t node = b.types[rel.dst_type].node_ids[v];
        for (int64_t p = indptr[node]; p < indptr[node + 1]; ++p) {
          const auto source = local[rel.src_type].find(SourceAt(graph, rel, p));
          if (source != local[rel.src_type].end()) expected.emplace_back(source->second, static_cast<int32_t>(v), p);
        }
      }
      ASSERT_EQ(e.num_edges_per_hop[0], static_cast<int32_t>(expected.size())) << rel.key();
      ASSERT_EQ(e.num_edges_per_hop[1], 0) << rel.key();
      ASSERT_FALSE(e.attrs.empty()) << rel.key();
      for (size_t k = 0; k < expected.size(); ++k) {
        const auto [src, dst, p] = expected[k];
        ASSERT_EQ(e.edge_src[k], src) << rel.key() << " edge " << k;
        ASSERT_EQ(e.edge_dst[k], dst) << rel.key() << " edge " << k;
        ASSERT_EQ(e.e_id[k], ids[p]) << rel.key() << " edge " << k;
        for (const BatchView::EdgeRows& rows : e.attrs) {
          const auto* table = static_cast<const std::byte*>(graph.arrays.data[rows.array]);
          ASSERT_EQ(std::memcmp(static_cast<const std::byte*>(rows.data) + k * rows.row_bytes,
                                table + p * rows.row_bytes, rows.row_bytes),
                    0);
        }
      }
      more += static_cast<int64_t>(expected.size()) - d.num_edges(static_cast<int>(r));
    }
  }
  EXPECT_GT(more, 0);  // the last hop's nodes' in-edges among the batch, at least
}

TEST(InducedSampler, HomogeneousBatchesHoldEveryEdgeBetweenTheirNodes) { CheckInducedBatches(false); }
TEST(InducedSampler, TypedBatchesHoldEveryEdgeOfEachRelationBetweenTheirNodes) { CheckInducedBatches(true); }

TEST(InducedSpec, SlotsHoldEveryInEdgeOfTheirNodesAtMostTheGraphs) {
  const DatasetSchema schema = HomogeneousSchema(1000, 5000);
  SamplingSpec spec = SamplingSpec::OneRelation(8, {3, 2});
  auto directional = ComputeBatchCapacity(spec, schema, {40});
  spec.induced = true;
  auto induced = ComputeBatchCapacity(spec, schema, {40});
  ASSERT_TRUE(directional.ok() && induced.ok());
  EXPECT_EQ(induced->max_nodes, directional->max_nodes);
  EXPECT_EQ(induced->max_edges[0], induced->max_nodes[0] * 40);  // 8 + 24 + 48 nodes, 40 in-edges each
  auto whole = ComputeBatchCapacity(spec, schema, {4000});
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->max_edges[0], 5000);  // never more than the graph's edges
}

TEST(InducedSpec, DisjointTemporalAndLaborBatchesAreRefusedNamingThem) {
  const DatasetSchema schema = HomogeneousSchema(100, 1000);
  SamplingSpec spec = SamplingSpec::OneRelation(8, {3, 2});
  spec.induced = true;
  EXPECT_TRUE(CheckSamplingSpec(spec, schema).ok());
  SamplingSpec disjoint = spec;
  disjoint.disjoint = true;
  EXPECT_NE(CheckSamplingSpec(disjoint, schema).message().find("induced subgraphs with disjoint"), std::string::npos);
  SamplingSpec labor = spec;
  labor.labor.active = true;
  EXPECT_NE(CheckSamplingSpec(labor, schema).message().find("induced subgraphs with LABOR"), std::string::npos);
}

}  // namespace
}  // namespace gnnd
