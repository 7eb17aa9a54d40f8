// Typed link batches on the CPU (kernels/cpu/link_stage.h with a typed dataset) against the issue's
// fixture checks on the mag preset with author-writes-paper edge splits and rev_ relations: hop 0 is each
// endpoint type's unique ids, every label-1 pair is its split edge, strict negatives are no edges, no
// excluded edge (writes' u -> v, and rev_writes' v -> u for reverse) is sampled in any relation, and every
// expanded node gets exactly min(fanout, in-degree - excluded) in-edges per relation. On a one-type,
// one-relation dataset the typed link batch is the homogeneous one.
#include <algorithm>
#include <set>
#include <vector>

#include "common/batch/link_batch.h"
#include "common/batch/link_rule.h"
#include "gtest/gtest.h"
#include "kernels/cpu/link_stage.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"
#include "tools/dataset/synthetic_typed.h"

namespace gnnd {
namespace {

using testing::ScratchDir;

constexpr int64_t kBatch = 48;

struct Slot {
  std::vector<std::byte> bytes;
  LinkBatch batch;
};

// A slot for a typed link batch of `typed` (LinkSampling).
Slot TypedSlot(const GraphData& graph, const SamplingSpec& typed) {
  auto capacity = ComputeBatchCapacity(typed, graph.schema, graph.MaxInDegrees());
  EXPECT_TRUE(capacity.ok()) << capacity.status();
  const BatchLayout layout = BatchLayout::Make(*capacity, typed, graph.schema);
  Slot s;
  s.bytes.assign(layout.total_bytes, std::byte{0x5a});
  s.batch.graph = BatchView::At(s.bytes.data(), layout);
  return s;
}

template <typename Index>
int64_t ExcludedInEdges(const int64_t* indptr, const Index* indices, int64_t v, std::span<const int64_t> sources) {
  int64_t n = 0;
  for (int64_t p = indptr[v]; p < indptr[v + 1]; ++p)
    n += std::binary_search(sources.begin(), sources.end(), indices[p]);
  return n;
}

TEST(TypedLinkSampler, EveryBatchKeepsTheFixtureChecks) {
  ScratchDir dir;
  auto preset = dataset::TypedPresetSpec("mag", 0.002);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(dataset::GenerateTyped(
                  *preset, {.seed = 3, .threads = 2, .add_reverse = true, .link_relation = "author___writes___paper"},
                  dir / "mag")
                  .ok());
  auto d = DatasetDir::Open(dir / "mag");
  ASSERT_TRUE(d.ok()) << d.status();
  const GraphData graph{d->manifest(), d->arrays(), d->schema()};
  const DatasetSchema& schema = graph.schema;
  int writes = -1, rev_writes = -1;
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    if (schema.relations[r].key() == "author___writes___paper") writes = static_cast<int>(r);
    if (schema.relations[r].key() == "paper___rev_writes___author") rev_writes = static_cast<int>(r);
  }
  ASSERT_GE(writes, 0);
  ASSERT_GE(rev_writes, 0);
  EXPECT_EQ(ReverseRelations(schema, writes), std::vector<int>{rev_writes});
  const int author = schema.relations[writes].src_type, paper = schema.relations[writes].dst_type;
  const std::vector<int32_t> fanouts = {-1, 2};  // hop 1 takes every allowed in-edge
  const EdgeSplitSchema& split = schema.relations[writes].edge_splits[0];
  const auto* split_edges = static_cast<const int64_t*>(graph.arrays.data[split.edges]);

  struct Case {
    NegativeSpec negatives;
    ExcludeMode exclude;
  };
  int64_t excluded_seen = 0;
  for (const Case& c : {Case{{NegativeMode::kBinary, 2, true}, ExcludeMode::kReverse},
                        Case{{NegativeMode::kTriplet, 3, false}, ExcludeMode::kSelf},
                        Case{{NegativeMode::kNone, 1, false}, ExcludeMode::kNone}}) {
    LinkSeedSpec spec;
    spec.relation = writes;
    spec.negatives = c.negatives;
    spec.exclude = c.exclude;
    const SamplingSpec sampling =
        LinkSampling(spec, std::vector<std::vector<int32_t>>(schema.relations.size(), fanouts), schema, kBatch);
    auto stage = LinkStage::Create(graph, sampling, spec, 7);
    ASSERT_TRUE(stage.ok()) << stage.status();
    CpuSampler sampler(graph, sampling, 7);
    Slot slot = TypedSlot(graph, sampling);
    std::vector<int64_t> input_id;
    for (int64_t i = 0; i < kBatch; ++i) input_id.push_back((i * 97 + 5) % stage->split_size());
    ASSERT_TRUE(stage->Sample(sampler, 1, 4, input_id, slot.batch).ok());
    const BatchView& b = slot.batch.graph;
    const LinkSeeds& s = slot.batch.seeds;

    // Hop 0: each endpoint type's unique ids, ascending; no other type has any.
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      const std::vector<int64_t>* expected = static_cast<int>(t) == author  ? &s.src_nodes
                                             : static_cast<int>(t) == paper ? &s.dst_nodes
                                                                            : nullptr;
      const int64_t hop0 = b.types[t].num_nodes_per_hop[0];
      ASSERT_EQ(hop0, expected == nullptr ? 0 : static_cast<int64_t>(expected->size())) << schema.node_types[t].name;
      for (int64_t i = 0; i < hop0; ++i) ASSERT_EQ(b.types[t].node_ids[i], (*expected)[i]);
      if (expected != nullptr) {
        ASSERT_TRUE(std::is_sorted(expected->begin(), expected->end()));
      }
    }
    // The positives are the split's edges at input_id, through the local indices.
    std::vector<int64_t> src(kBatch), dst(kBatch);
    for (int64_t i = 0; i < kBatch; ++i) {
      src[i] = split_edges[input_id[i]], dst[i] = split_edges[split.num_edges + input_id[i]];
      const int32_t ls = c.negatives.mode == NegativeMode::kTriplet ? s.src_index[i] : s.pair_src[i];
      const int32_t ld = c.negatives.mode == NegativeMode::kTriplet ? s.dst_pos_index[i] : s.pair_dst[i];
      ASSERT_EQ(b.types[author].node_ids[ls], src[i]);
      ASSERT_EQ(b.types[paper].node_ids[ld], dst[i]);
    }
    const RelationSchema& w = schema.relations[writes];
    const auto* w_indptr = static_cast<const int64_t*>(graph.arrays.data[w.indptr]);
    const auto* w_indices = static_cast<const int32_t*>(graph.arrays.data[w.indices]);
    if (c.negatives.strict) {
      for (size_t i = kBatch; i < s.pair_src.size(); ++i) {
        ASSERT_FALSE(IsEdge(w_indptr, w_indices, b.types[author].node_ids[s.pair_src[i]],
                            b.types[paper].node_ids[s.pair_dst[i]]));
      }
    }

    std::vector<EdgeExclusions> excluded;
    BuildRelationExclusions(schema, writes, c.exclude, src, dst, excluded);
    // Every relation, every hop: sampled edges are relation edges, none excluded, exact counts.
    for (size_t r = 0; r < schema.relations.size(); ++r) {
      const RelationSchema& rel = schema.relations[r];
      const auto* indptr = static_cast<const int64_t*>(graph.arrays.data[rel.indptr]);
      const auto* indices = static_cast<const int32_t*>(graph.arrays.data[rel.indices]);
      ASSERT_EQ(rel.index_dtype, DType::kInt32);
      const BatchView::Relation& e = b.relations[r];
      const BatchView::Type &from = b.types[rel.src_type], &to = b.types[rel.dst_type];
      int64_t edge = 0, frontier_begin = 0, frontier_end = to.num_nodes_per_hop[0];
      for (int hop = 0; hop < 2; ++hop) {
        std::vector<int64_t> got(frontier_end - frontier_begin, 0);
        for (int64_t k = edge; k < edge + e.num_edges_per_hop[hop]; ++k) {
          const int64_t u = from.node_ids[e.edge_src[k]], v = to.node_ids[e.edge_dst[k]];
          ASSERT_GE(e.edge_dst[k], frontier_begin);
          ASSERT_LT(e.edge_dst[k], frontier_end);
          ++got[e.edge_dst[k] - frontier_begin];
          ASSERT_TRUE(IsEdge(indptr, indices, u, v)) << rel.key();
          const std::span<const int64_t> sources = excluded[r].Of(v);
          ASSERT_FALSE(std::binary_search(sources.begin(), sources.end(), u))
              << "excluded edge " << u << " -> " << v << " of " << rel.key() << " sampled at hop " << hop + 1;
        }
        for (int64_t at = frontier_begin; at < frontier_end; ++at) {
          const int64_t v = to.node_ids[at];
          const int64_t excluded_in = ExcludedInEdges(indptr, indices, v, excluded[r].Of(v));
          excluded_seen += excluded_in;
          ASSERT_EQ(got[at - frontier_begin], SampleCount(indptr[v + 1] - indptr[v] - excluded_in, fanouts[hop]))
              << rel.key() << " node " << v << " hop " << hop + 1;
        }
        edge += e.num_edges_per_hop[hop];
        frontier_begin = frontier_end;
        frontier_end += to.num_nodes_per_hop[hop + 1];
      }
    }
    if (c.exclude == ExcludeMode::kReverse) {
      ASSERT_FALSE(excluded[rev_writes].empty());  // the reverse relation's v -> u edges were excluded
    }
  }
  EXPECT_GT(excluded_seen, kBatch);  // the train edges are graph edges: exclusion had edges to skip
}

TEST(TypedLinkSampler, OneTypeAndOneRelationIsTheHomogeneousLinkBatch) {
  ScratchDir dir;
  auto preset = dataset::PresetSpec("tiny", 0.3);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(dataset::Generate(*preset, {.seed = 5, .threads = 2}, dir / "g").ok());
  auto d = DatasetDir::Open(dir / "g");
  ASSERT_TRUE(d.ok()) << d.status();
  const GraphData graph{d->manifest(), d->arrays(), d->schema()};
  GraphData typed_graph = graph;
  typed_graph.schema.format_version = 2;  // the same arrays, read as a one-type, one-relation typed dataset
  const auto* indptr = graph.arrays.indptr();
  const auto* indices = static_cast<const int32_t*>(graph.arrays[ArrayId::kIndices]);
  auto pairs = std::make_shared<std::vector<int64_t>>();
  std::vector<int64_t> dsts;
  for (int64_t v = 1; static_cast<int64_t>(dsts.size()) < 2 * kBatch && v < graph.num_nodes(); v += 11) {
    if (indptr[v + 1] == indptr[v]) continue;
    pairs->push_back(indices[indptr[v]]);
    dsts.push_back(v);
  }
  pairs->insert(pairs->end(), dsts.begin(), dsts.end());
  std::vector<int64_t> input_id(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) input_id[i] = (i * 7) % static_cast<int64_t>(dsts.size());
  const std::vector<int32_t> fanouts = {5, 3};
  for (NegativeMode mode : {NegativeMode::kBinary, NegativeMode::kTriplet}) {
    for (ExcludeMode exclude : {ExcludeMode::kNone, ExcludeMode::kReverse}) {
      LinkSeedSpec spec;
      spec.seed_edges = pairs;
      spec.negatives = {mode, 2, true};
      spec.exclude = exclude;
      const SamplingSpec sampling = LinkSampling(spec, {fanouts}, graph.schema, kBatch);
      auto homogeneous = LinkStage::Create(graph, sampling, spec, 9);
      ASSERT_TRUE(homogeneous.ok()) << homogeneous.status();
      CpuSampler homogeneous_sampler(graph, sampling, 9);
      auto capacity =
          ComputeHomogeneousCapacity(SamplingSpec::OneRelation(MaxLinkSeeds(kBatch, spec.negatives), fanouts),
                                     graph.num_nodes(), graph.manifest.num_edges(), graph.MaxInDegree());
      ASSERT_TRUE(capacity.ok());
      HomogeneousBuffer buffer(HomogeneousLayout::Make(*capacity, 2, FeatureRowBytes(graph.manifest)));
      LinkBatch h;
      h.graph = AsBatchView(buffer.view());
      ASSERT_TRUE(homogeneous->Sample(homogeneous_sampler, 3, 2, input_id, h).ok());

      const SamplingSpec typed_sampling = LinkSampling(spec, {fanouts}, typed_graph.schema, kBatch);
      auto typed = LinkStage::Create(typed_graph, typed_sampling, spec, 9);
      ASSERT_TRUE(typed.ok()) << typed.status();
      CpuSampler typed_sampler(typed_graph, typed_sampling, 9);
      Slot slot = TypedSlot(typed_graph, typed_sampling);
      ASSERT_TRUE(typed->Sample(typed_sampler, 3, 2, input_id, slot.batch).ok());
      const BatchView& t = slot.batch.graph;
      const HomogeneousView g = buffer.view();  // what h.graph sees as typed
      ASSERT_EQ(t.num_nodes(0), g.num_nodes());
      ASSERT_EQ(t.num_edges(0), g.num_edges());
      EXPECT_TRUE(std::equal(g.node_ids, g.node_ids + g.num_nodes(), t.types[0].node_ids));
      EXPECT_TRUE(std::equal(g.num_nodes_per_hop, g.num_nodes_per_hop + 3, t.types[0].num_nodes_per_hop));
      EXPECT_TRUE(std::equal(g.edge_src, g.edge_src + g.num_edges(), t.relations[0].edge_src));
      EXPECT_TRUE(std::equal(g.edge_dst, g.edge_dst + g.num_edges(), t.relations[0].edge_dst));
      const size_t row = FeatureRowBytes(graph.manifest);
      EXPECT_EQ(std::memcmp(g.features, t.types[0].features, row * g.num_nodes()), 0);
      EXPECT_EQ(h.seeds.pair_src, slot.batch.seeds.pair_src);
      EXPECT_EQ(h.seeds.pair_dst, slot.batch.seeds.pair_dst);
      EXPECT_EQ(h.seeds.dst_neg_index, slot.batch.seeds.dst_neg_index);
      EXPECT_EQ(h.edge_label, slot.batch.edge_label);
    }
  }
}

}  // namespace
}  // namespace gnnd
