// The batch schema: the homogeneous layout described as data agrees with the layout's own arrays, it
// survives the wire, and a schema or counts from the wire that could reach past a slot are refused. Slots
// sized by the batches: fewer feature rows shrink the features alone, travel as `rows`, and a batch with
// more nodes than they hold is found.
#include "common/batch/batch_schema.h"

#include <functional>

#include "common/batch/layout.h"
#include "common/wire/batch_proto.h"
#include "gtest/gtest.h"

namespace gnnd {
namespace {

HomogeneousLayout SomeLayout() {
  const SamplingSpec spec = SamplingSpec::OneRelation(10, {3, 2});
  const absl::StatusOr<HomogeneousCapacity> capacity = ComputeHomogeneousCapacity(spec, 1000, 5000, 50);
  EXPECT_TRUE(capacity.ok());
  return HomogeneousLayout::Make(*capacity, 2, 3 * 2);
}

TEST(BatchSchema, HomogeneousSchemaIsTheLayoutsArrays) {
  const HomogeneousLayout layout = SomeLayout();
  const BatchSchema schema = HomogeneousBatchSchema(layout, 3, DType::kFloat16);
  std::vector<std::byte> slot(layout.total_bytes);
  const HomogeneousView view = HomogeneousView::At(slot.data(), layout);
  const auto arrays = BatchArrays(view, layout.capacity.max_nodes, layout.capacity.max_edges, layout.capacity.max_seeds,
                                  3, DType::kFloat16);
  ASSERT_EQ(schema.arrays.size(), arrays.size());
  EXPECT_EQ(schema.slot_bytes, layout.total_bytes);
  for (size_t i = 0; i < arrays.size(); ++i) {
    const BatchArraySchema& a = schema.arrays[i];
    EXPECT_EQ(a.name, arrays[i].name);
    EXPECT_EQ(a.dtype, arrays[i].dtype) << a.name;
    EXPECT_EQ(a.offset, static_cast<uint64_t>(static_cast<std::byte*>(arrays[i].data) - slot.data())) << a.name;
    EXPECT_EQ(schema.capacity[a.count], arrays[i].shape[0]) << a.name;
    EXPECT_EQ(a.row_shape.empty() ? 1 : 2, arrays[i].ndim) << a.name;
  }
  EXPECT_EQ(schema.arrays[5].row_bytes(), 6u);
  EXPECT_EQ(schema.CountNamed("nodes_hop2"), 7);
  EXPECT_EQ(schema.CountNamed("edges_hop1"), 9);
  EXPECT_EQ(schema.counts.size(), 10u);

  const int32_t nodes[] = {10, 25, 31}, edges[] = {30, 50};
  const std::vector<int64_t> counts = HomogeneousBatchCounts(nodes, edges);
  EXPECT_EQ(counts, (std::vector<int64_t>{66, 80, 10, 3, 2, 10, 25, 31, 30, 50}));
  EXPECT_TRUE(CheckBatchCounts(schema, counts).ok());
  v1::BatchReady ready;
  SetBatchCounts(nodes, edges, ready);
  EXPECT_EQ(std::vector<int64_t>(ready.counts().begin(), ready.counts().end()), counts);
}

// A homogeneous session's one layout keeps the offsets API 1.0 clients check (SlotLayoutFromProto recomputes
// them from the capacities), and its capacity, from the typed bound, is the one-relation bound.
TEST(BatchSchema, TheOneLayoutOfAHomogeneousDatasetIsTheApi10Layout) {
  DatasetSchema schema = HomogeneousSchema(1000, 5000);
  NodeTypeSchema& nodes = schema.node_types[0];
  nodes.feature_dim = 3;
  nodes.feature_dtype = DType::kFloat16;
  nodes.num_classes = 4;
  nodes.features = 0;
  nodes.labels = 1;
  for (const SamplingSpec& spec :
       {SamplingSpec::OneRelation(10, {3, 2}), SamplingSpec::OneRelation(64, {-1, 5, 2}),
        SamplingSpec::OneRelation(2000, {-1, -1}, /*seeds_may_repeat=*/true), SamplingSpec::OneRelation(1, {1})}) {
    absl::StatusOr<HomogeneousCapacity> flat = ComputeHomogeneousCapacity(spec, 1000, 5000, 50);
    absl::StatusOr<BatchCapacity> typed = ComputeBatchCapacity(spec, schema, {50});
    ASSERT_TRUE(flat.ok() && typed.ok());
    EXPECT_EQ(typed->max_nodes[0], flat->max_nodes);
    EXPECT_EQ(typed->max_edges[0], flat->max_edges);
    EXPECT_EQ(typed->max_seeds, flat->max_seeds);
    for (int64_t rows : {int64_t{-1}, int64_t{7}}) {
      if (rows >= 0) flat->max_feature_rows = rows, typed->feature_rows = {rows};
      const HomogeneousLayout want = HomogeneousLayout::Make(*flat, spec.num_hops(), 6);
      const BatchLayout one = BatchLayout::Make(*typed, spec, schema);
      ASSERT_TRUE(one.homogeneous);
      const HomogeneousLayout got = HomogeneousLayoutOf(one);
      ASSERT_EQ(got.capacity.hops.size(), want.capacity.hops.size());
      for (size_t h = 0; h < got.capacity.hops.size(); ++h) {
        EXPECT_EQ(got.capacity.hops[h].frontier, want.capacity.hops[h].frontier) << h;
        EXPECT_EQ(got.capacity.hops[h].edges, want.capacity.hops[h].edges) << h;
        EXPECT_EQ(got.capacity.hops[h].nodes_after, want.capacity.hops[h].nodes_after) << h;
      }
      EXPECT_EQ(std::vector<size_t>({got.node_ids, got.num_nodes_per_hop, got.edge_src, got.edge_dst,
                                     got.num_edges_per_hop, got.features, got.labels, got.total_bytes}),
                std::vector<size_t>({want.node_ids, want.num_nodes_per_hop, want.edge_src, want.edge_dst,
                                     want.num_edges_per_hop, want.features, want.labels, want.total_bytes}));
      EXPECT_EQ(one.types[0].node_ids, want.node_ids);
      EXPECT_EQ(one.types[0].features, want.features);
      EXPECT_EQ(one.types[0].labels, want.labels);
      EXPECT_EQ(one.relations[0].edge_dst, want.edge_dst);
      EXPECT_EQ(one.total_bytes, want.total_bytes);
      const BatchSchema named = BatchSchemaOf(one, schema);
      EXPECT_EQ(named.arrays.size(), kNumBatchArrays);
      EXPECT_EQ(named.arrays[5].name, "features");
      EXPECT_EQ(named.Rows(5), rows >= 0 && rows < flat->max_nodes ? rows : flat->max_nodes);
    }
  }
}

TEST(BatchSchema, SurvivesTheWire) {
  const BatchSchema schema = HomogeneousBatchSchema(SomeLayout(), 3, DType::kFloat8E4M3FN);
  const v1::BatchSchema proto = BatchSchemaToProto(schema);
  EXPECT_EQ(proto.arrays(5).dtype(), "float8_e4m3fn");
  absl::StatusOr<BatchSchema> back = BatchSchemaFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->counts, schema.counts);
  EXPECT_EQ(back->capacity, schema.capacity);
  ASSERT_EQ(back->arrays.size(), schema.arrays.size());
  for (size_t i = 0; i < schema.arrays.size(); ++i) {
    EXPECT_EQ(back->arrays[i].name, schema.arrays[i].name);
    EXPECT_EQ(back->arrays[i].dtype, schema.arrays[i].dtype);
    EXPECT_EQ(back->arrays[i].row_shape, schema.arrays[i].row_shape);
    EXPECT_EQ(back->arrays[i].count, schema.arrays[i].count);
    EXPECT_EQ(back->arrays[i].offset, schema.arrays[i].offset);
  }
}

TEST(BatchSchema, WhatCouldReachPastASlotIsRefused) {
  const v1::BatchSchema good = BatchSchemaToProto(HomogeneousBatchSchema(SomeLayout(), 3, DType::kFloat16));
  const std::pair<std::function<void(v1::BatchSchema&)>, std::string> cases[] = {
      {[](auto& p) { p.mutable_arrays(6)->set_offset(p.slot_bytes()); }, "does not fit in a slot"},
      {[](auto& p) { p.mutable_arrays(6)->set_offset(~uint64_t{0} - 4); }, "does not fit in a slot"},
      {[](auto& p) { p.set_capacity(0, int64_t{1} << 62); }, "does not fit in a slot"},
      {[](auto& p) { p.mutable_arrays(5)->set_row_shape(0, int64_t{1} << 62); }, "does not fit in a slot"},
      {[](auto& p) { p.mutable_arrays(5)->set_row_shape(0, -1); }, "row dimension -1"},
      {[](auto& p) { p.mutable_arrays(5)->add_row_shape(2); }, "2 row dims"},
      {[](auto& p) { p.mutable_arrays(0)->set_count(99); }, "count 99"},
      {[](auto& p) { p.mutable_arrays(0)->set_dtype("complex64"); }, "dtype 'complex64' is not one this client knows"},
      {[](auto& p) { p.mutable_arrays(1)->set_name("node_ids"); }, "empty or repeated name"},
      {[](auto& p) { p.set_counts(1, "nodes"); }, "counts[1] = 'nodes' (empty or repeated)"},
      {[](auto& p) { p.set_capacity(2, -1); }, "capacity[2] = -1"},
      {[](auto& p) { p.add_capacity(1); }, "a capacity per count expected"},
  };
  for (const auto& [change, message] : cases) {
    v1::BatchSchema bad = good;
    change(bad);
    absl::StatusOr<BatchSchema> s = BatchSchemaFromProto(bad);
    ASSERT_FALSE(s.ok()) << message;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(s.status().message().find(message), std::string::npos) << s.status();
  }
  const BatchSchema schema = *BatchSchemaFromProto(good);
  std::vector<int64_t> counts = {1, 1, 1, 3, 2, 1, 0, 0, 1, 0};
  EXPECT_TRUE(CheckBatchCounts(schema, counts).ok());
  counts[1] = schema.capacity[1] + 1;
  EXPECT_FALSE(CheckBatchCounts(schema, counts).ok());
  counts.pop_back();
  EXPECT_FALSE(CheckBatchCounts(schema, counts).ok());
}

TEST(BatchSchema, FewerFeatureRowsShrinkTheFeaturesAlone) {
  const HomogeneousLayout bound = SomeLayout();
  HomogeneousCapacity capacity = bound.capacity;
  capacity.max_feature_rows = 40;
  const HomogeneousLayout sized = HomogeneousLayout::Make(capacity, 2, 3 * 2);
  EXPECT_EQ(sized.features, bound.features);  // everything before the features stays where it was
  EXPECT_EQ(sized.labels - sized.features, AlignBatchOffset(40 * 6));
  EXPECT_LT(sized.total_bytes, bound.total_bytes);
  std::vector<std::byte> slot(sized.total_bytes);
  EXPECT_EQ(HomogeneousView::At(slot.data(), sized).feature_rows, 40);
  EXPECT_EQ(HomogeneousView::At(slot.data(), bound).feature_rows, bound.capacity.max_nodes);

  const BatchSchema schema = HomogeneousBatchSchema(sized, 3, DType::kFloat16);
  const int features = schema.ArrayNamed("features");
  EXPECT_EQ(schema.Rows(features), 40);
  EXPECT_EQ(schema.Rows(schema.ArrayNamed("node_ids")), bound.capacity.max_nodes);
  EXPECT_EQ(HomogeneousBatchSchema(bound, 3, DType::kFloat16).arrays[features].rows, -1);
  // A batch of 40 nodes fits; one of 41 does not, and it is the features that overflow.
  const int32_t fits[] = {10, 20, 10}, over[] = {10, 20, 11}, edges[] = {30, 50};
  EXPECT_EQ(FirstArrayOverflowing(schema, HomogeneousBatchCounts(fits, edges)), -1);
  EXPECT_EQ(FirstArrayOverflowing(schema, HomogeneousBatchCounts(over, edges)), features);

  // On the wire: the schema's rows and the slot layout's feature rows come back; a layout without them is the
  // bound (an older gnnd's), one with more rows than nodes is refused.
  absl::StatusOr<BatchSchema> back = BatchSchemaFromProto(BatchSchemaToProto(schema));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Rows(features), 40);
  v1::BatchSchema reaching = BatchSchemaToProto(schema);
  reaching.mutable_arrays(features)->set_rows(bound.capacity.max_nodes + 1);
  EXPECT_FALSE(BatchSchemaFromProto(reaching).ok());
  absl::StatusOr<HomogeneousLayout> layout = SlotLayoutFromProto(SlotLayoutToProto(sized));
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->capacity.feature_rows(), 40);
  EXPECT_EQ(layout->total_bytes, sized.total_bytes);
  v1::SlotLayout old = SlotLayoutToProto(bound);
  EXPECT_FALSE(old.has_max_feature_rows());
  EXPECT_EQ(SlotLayoutFromProto(old)->capacity.feature_rows(), bound.capacity.max_nodes);
  v1::SlotLayout bad = SlotLayoutToProto(sized);
  bad.set_max_feature_rows(bound.capacity.max_nodes + 1);
  EXPECT_FALSE(SlotLayoutFromProto(bad).ok());

  // The one-type typed view of the layout keeps its rows.
  const BatchLayout typed = AsBatchLayout(sized);
  EXPECT_EQ(typed.capacity.FeatureRows(0), 40);
  EXPECT_EQ(BatchView::At(slot.data(), typed).types[0].feature_rows, 40);
  EXPECT_EQ(AsBatchView(HomogeneousView::At(slot.data(), sized)).types[0].feature_rows, 40);
}

}  // namespace
}  // namespace gnnd
