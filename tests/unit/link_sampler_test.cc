// The CPU backend's link batches against the fixture checks on a generated graph: hop 0 is the
// pairs' unique endpoints, no excluded edge is ever sampled, every expanded node gets exactly
// min(fanout, in-degree - excluded in-edges) neighbors, and without exclusion it is the node sampler's batch.
#include <set>
#include <vector>

#include "common/batch/batch.h"
#include "common/batch/layout.h"
#include "common/batch/link_seeds.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd {
namespace {

using testing::ScratchDir;

class LinkSamplerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    auto spec = dataset::PresetSpec("tiny", 0.3);  // 3000 nodes, ~28 K edges, deduplicated
    ASSERT_TRUE(spec.ok());
    ASSERT_TRUE(dataset::Generate(*spec, {.seed = 3, .threads = 2}, *dir_ / "g").ok());
    auto d = DatasetDir::Open(*dir_ / "g");
    ASSERT_TRUE(d.ok()) << d.status();
    dataset_ = new DatasetDir(std::move(*d));
    graph_ = new GraphData{dataset_->manifest(), dataset_->arrays(), dataset_->schema()};
  }
  static void TearDownTestSuite() {
    delete graph_;
    delete dataset_;
    delete dir_;
  }

  static const int64_t* indptr() { return graph_->arrays.indptr(); }
  static const int32_t* indices() { return static_cast<const int32_t*>(graph_->arrays[ArrayId::kIndices]); }
  static LinkRelation Relation() {
    return {indptr(), indices(), false, graph_->num_nodes(), graph_->num_nodes(), true, "the graph"};
  }

  // `count` graph edges u -> v (v's first in-neighbor), v spread over the graph.
  static void Positives(int64_t count, std::vector<int64_t>& src, std::vector<int64_t>& dst) {
    for (int64_t v = 1; static_cast<int64_t>(src.size()) < count && v < graph_->num_nodes(); v += 37) {
      if (indptr()[v + 1] - indptr()[v] < 2) continue;
      src.push_back(indices()[indptr()[v]]);
      dst.push_back(v);
    }
  }

  static ScratchDir* dir_;
  static DatasetDir* dataset_;
  static GraphData* graph_;
};

ScratchDir* LinkSamplerTest::dir_ = nullptr;
DatasetDir* LinkSamplerTest::dataset_ = nullptr;
GraphData* LinkSamplerTest::graph_ = nullptr;

TEST_F(LinkSamplerTest, ExcludedEdgesAreNeverSampledAndFanoutsStayExact) {
  const std::vector<int32_t> fanouts = {-1, 3};  // hop 1 takes every allowed in-edge of the endpoints
  std::vector<int64_t> src, dst;
  Positives(48, src, dst);
  ASSERT_EQ(src.size(), 48u);
  const SamplingKey negatives_key = MakeSamplingKey(7, 0, RandomPurpose::kNegatives);
  LinkSeeds seeds;
  ASSERT_TRUE(MakeLinkSeeds(negatives_key, 2, src, dst, {NegativeMode::kBinary, 1, false}, Relation(), seeds).ok());
  const SamplingSpec spec = SamplingSpec::OneRelation(static_cast<int64_t>(seeds.src_nodes.size()), fanouts);
  auto capacity =
      ComputeHomogeneousCapacity(spec, graph_->num_nodes(), graph_->manifest.num_edges(), graph_->MaxInDegree());
  ASSERT_TRUE(capacity.ok()) << capacity.status();
  const HomogeneousLayout layout = HomogeneousLayout::Make(*capacity, 2, 0);
  HomogeneousBuffer buffer(layout), plain_buffer(layout);
  CpuSampler sampler(*graph_, spec, 7);

  int64_t positives_seen_without_exclusion = 0;
  for (ExcludeMode mode : {ExcludeMode::kNone, ExcludeMode::kSelf, ExcludeMode::kReverse}) {
    EdgeExclusions excluded;
    excluded.Build(src, dst, mode);
    for (size_t i = 0; i < src.size(); ++i) {  // what each mode excludes
      const std::span<const int64_t> into_dst = excluded.Of(dst[i]), into_src = excluded.Of(src[i]);
      ASSERT_EQ(std::binary_search(into_dst.begin(), into_dst.end(), src[i]), mode != ExcludeMode::kNone);
      if (mode == ExcludeMode::kReverse) {
        ASSERT_TRUE(std::binary_search(into_src.begin(), into_src.end(), dst[i]));
      }
    }
    const HomogeneousView b = buffer.view();
    const std::span<const int64_t> hop0[] = {seeds.src_nodes};
    sampler.SampleLinkGraph(0, 2, hop0, {&excluded, 1}, AsBatchView(b));
    ASSERT_EQ(b.num_seeds(), static_cast<int64_t>(seeds.src_nodes.size()));
    for (int64_t i = 0; i < b.num_seeds(); ++i) ASSERT_EQ(b.node_ids[i], seeds.src_nodes[i]);

    // Per hop, per expanded node: its sampled in-edges, each a graph edge and none excluded.
    int64_t edge = 0, frontier_begin = 0, frontier_end = b.num_nodes_per_hop[0];
    for (int hop = 0; hop < 2; ++hop) {
      std::vector<int64_t> got(frontier_end - frontier_begin, 0);
      for (int64_t e = edge; e < edge + b.num_edges_per_hop[hop]; ++e) {
        const int64_t u = b.node_ids[b.edge_src[e]], v = b.node_ids[b.edge_dst[e]];
        ASSERT_GE(b.edge_dst[e], frontier_begin);
        ASSERT_LT(b.edge_dst[e], frontier_end);
        ++got[b.edge_dst[e] - frontier_begin];
        ASSERT_TRUE(IsEdge(indptr(), indices(), u, v)) << u << " -> " << v;
        const std::span<const int64_t> sources = excluded.Of(v);
        ASSERT_FALSE(std::binary_search(sources.begin(), sources.end(), u))
            << "excluded edge " << u << " -> " << v << " sampled at hop " << hop + 1;
        if (mode == ExcludeMode::kNone && hop == 0) {
          for (size_t i = 0; i < src.size(); ++i) positives_seen_without_exclusion += u == src[i] && v == dst[i];
        }
      }
      for (int64_t at = frontier_begin; at < frontier_end; ++at) {
        const int64_t v = b.node_ids[at];
        const std::span<const int64_t> sources = excluded.Of(v);
        int64_t excluded_in_edges = 0;
        for (int64_t p = indptr()[v]; p < indptr()[v + 1]; ++p) {
          excluded_in_edges += std::binary_search(sources.begin(), sources.end(), indices()[p]);
        }
        const int64_t allowed = indptr()[v + 1] - indptr()[v] - excluded_in_edges;
        ASSERT_EQ(got[at - frontier_begin], SampleCount(allowed, fanouts[hop])) << "node " << v << " hop " << hop + 1;
      }
      edge += b.num_edges_per_hop[hop];
      frontier_begin = frontier_end;
      frontier_end += b.num_nodes_per_hop[hop + 1];
    }

    if (mode == ExcludeMode::kNone) {  // the node sampler's batch around the same hop-0 nodes
      const HomogeneousView plain = plain_buffer.view();
      sampler.SampleGraph(0, 2, seeds.src_nodes, plain);
      EXPECT_EQ(testing::BatchContents(b, 0), testing::BatchContents(plain, 0));
    }
  }
  EXPECT_EQ(positives_seen_without_exclusion, 48);  // so the checks above had edges to exclude
}

}  // namespace
}  // namespace gnnd
