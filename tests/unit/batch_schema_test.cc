// The batch schema: the homogeneous layout described as data agrees with the layout's own arrays, it
// survives the wire, and a schema or counts from the wire that could reach past a slot are refused.
#include "common/batch/batch_schema.h"

#include <functional>

#include "common/batch/batch_proto.h"
#include "gtest/gtest.h"

namespace gnnd {
namespace {

BatchLayout SomeLayout() {
  const SamplingSpec spec{.batch_size = 10, .fanouts = {3, 2}};
  const absl::StatusOr<BatchCapacity> capacity = ComputeBatchCapacity(spec, 1000, 5000, 50);
  EXPECT_TRUE(capacity.ok());
  return BatchLayout::Make(*capacity, 2, 3 * 2);
}

TEST(BatchSchema, HomogeneousSchemaIsTheLayoutsArrays) {
  const BatchLayout layout = SomeLayout();
  const BatchSchema schema = HomogeneousBatchSchema(layout, 3, DType::kFloat16);
  std::vector<std::byte> slot(layout.total_bytes);
  const BatchView view = BatchView::At(slot.data(), layout);
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

}  // namespace
}  // namespace gnnd
