// A link session's slot (common/batch/link_batch.h): every array aligned, inside the slot at its count's
// capacity and after the graph arrays, the schema accepted as a client checks an untrusted one, and the
// arrays each negative mode has.
#include "common/batch/link_batch.h"

#include "common/wire/batch_proto.h"
#include "gtest/gtest.h"

namespace gnnd {
namespace {

// A homogeneous dataset of 1000 nodes with 3-wide float16 features, and its link sessions' layout for batches
// of 50 positives with [3, 2] fanouts.
DatasetSchema Homogeneous() {
  DatasetSchema schema = HomogeneousSchema(1000, 5000);
  NodeTypeSchema& nodes = schema.node_types[0];
  nodes.feature_dim = 3;
  nodes.feature_dtype = DType::kFloat16;
  nodes.features = 0;
  return schema;
}

TEST(LinkBatch, EveryModeLaysItsArraysOutInsideTheSlot) {
  const DatasetSchema homogeneous = Homogeneous();
  for (NegativeMode mode : {NegativeMode::kNone, NegativeMode::kBinary, NegativeMode::kTriplet}) {
    for (bool labeled : {false, true}) {
      if (labeled && mode == NegativeMode::kTriplet) continue;
      LinkSeedSpec spec;
      spec.negatives = {mode, 3, false};
      const SamplingSpec sampling = LinkSampling(spec, {{3, 2}}, homogeneous, 50);
      EXPECT_EQ(sampling.max_hop0, std::vector<int64_t>{MaxLinkSeeds(50, spec.negatives)});
      absl::StatusOr<BatchCapacity> capacity = ComputeBatchCapacity(sampling, homogeneous, {40});
      ASSERT_TRUE(capacity.ok()) << capacity.status();
      BatchLayout layout = BatchLayout::Make(*capacity, sampling, homogeneous);
      const size_t graph_bytes = layout.total_bytes;
      AddPairArrays(layout, 0, 50, spec.negatives, labeled);
      const BatchSchema schema = BatchSchemaOf(layout, homogeneous);
      EXPECT_EQ(schema.ArrayNamed("labels"), -1);
      EXPECT_GE(schema.ArrayNamed("features"), 0);
      EXPECT_EQ(schema.counts[schema.counts.size() - 2], "pairs");
      EXPECT_EQ(schema.capacity.back(), 50);  // positives
      const bool triplet = mode == NegativeMode::kTriplet;
      EXPECT_EQ(schema.ArrayNamed("edge_label_index") >= 0, !triplet);
      EXPECT_EQ(schema.ArrayNamed("dst_neg_index") >= 0, triplet);
      EXPECT_EQ(layout.pairs->max_pairs, triplet ? 0 : mode == NegativeMode::kBinary ? 200 : 50);
      EXPECT_EQ(layout.pairs->pairs(7), triplet ? 0 : mode == NegativeMode::kBinary ? 28 : 7);  // a short batch's
      for (const BatchArraySchema& a : schema.arrays) {
        EXPECT_EQ(a.offset % kBatchAlignment, 0u) << a.name;
        EXPECT_LE(a.offset + a.row_bytes() * schema.capacity[a.count], layout.total_bytes) << a.name;
        if (a.name == "input_id" || a.name.find("index") != std::string::npos || a.name == "edge_label") {
          EXPECT_GE(a.offset, graph_bytes) << a.name << " overlaps the graph arrays";
        }
      }
      if (!triplet) {
        EXPECT_EQ(schema.arrays[schema.ArrayNamed("edge_label")].dtype, labeled ? DType::kInt64 : DType::kFloat32);
      }
      // What a client does with the schema gnnd sends.
      absl::StatusOr<BatchSchema> parsed = BatchSchemaFromProto(BatchSchemaToProto(schema));
      ASSERT_TRUE(parsed.ok()) << parsed.status();
      EXPECT_EQ(parsed->arrays.size(), schema.arrays.size());
    }
  }
}

// A disjoint (temporal) link slot: hop 0 holds every endpoint (repeats kept, so not capped by the graph's
// nodes), each node's subgraph, and edge_label_time per pair (triplets: per positive); the negatives' index of
// nodes by time is 8 bytes a node of each timed endpoint type, with node times only.
TEST(LinkBatch, DisjointTemporalSlotsHoldEveryEndpointTheirSubgraphsAndPairTimes) {
  DatasetSchema tiny = HomogeneousSchema(10, 40);
  tiny.node_types[0].node_time = 0;
  for (NegativeMode mode : {NegativeMode::kBinary, NegativeMode::kTriplet}) {
    LinkSeedSpec spec;
    spec.negatives = {mode, 3, false};
    SamplingSpec sampling = LinkSampling(spec, {{3, 2}}, tiny, 50);
    sampling.disjoint = true;
    sampling.time = {.node_level = true, .seed_times_given = true};
    ASSERT_TRUE(CheckSamplingSpec(sampling, tiny).ok()) << CheckSamplingSpec(sampling, tiny);
    EXPECT_EQ(sampling.MaxSubgraphs(), MaxLinkSeeds(50, spec.negatives));
    absl::StatusOr<BatchCapacity> capacity = ComputeBatchCapacity(sampling, tiny, {6});
    ASSERT_TRUE(capacity.ok()) << capacity.status();
    EXPECT_EQ(capacity->hops[0].frontier[0], MaxLinkSeeds(50, spec.negatives)) << "hop 0 capped by the graph";
    BatchLayout layout = BatchLayout::Make(*capacity, sampling, tiny);
    AddPairArrays(layout, 0, 50, spec.negatives, false, /*timed=*/true);
    const BatchSchema schema = BatchSchemaOf(layout, tiny);
    ASSERT_GE(schema.ArrayNamed("batch"), 0);
    const BatchArraySchema& times = schema.arrays[schema.ArrayNamed("edge_label_time")];
    EXPECT_EQ(times.dtype, DType::kInt64);
    EXPECT_EQ(schema.capacity[times.count], mode == NegativeMode::kTriplet ? 50 : 200);
    EXPECT_LE(times.offset + 8 * schema.capacity[times.count], layout.total_bytes);
    EXPECT_EQ(NodesByTimeBytes(tiny, 0, sampling), 80u);
    sampling.time.node_level = false;  // edge times draw no temporal negatives
    sampling.time.edge_times = {0};
    EXPECT_EQ(NodesByTimeBytes(tiny, 0, sampling), 0u);
  }
}

TEST(LinkBatch, ModesAndSplitsAreParsedNamingTheField) {
  EXPECT_EQ(*ParseNegativeMode("", "f"), NegativeMode::kNone);
  EXPECT_EQ(*ParseNegativeMode("triplet", "f"), NegativeMode::kTriplet);
  EXPECT_EQ(ParseNegativeMode("binar", "open.neg_sampling").status().message(),
            "open.neg_sampling = 'binar' (must be none, binary, triplet or fixed)");
  EXPECT_EQ(*ParseExcludeMode("reverse", "f"), ExcludeMode::kReverse);
  EXPECT_EQ(ParseExcludeMode("all", "open.exclude").status().message(),
            "open.exclude = 'all' (must be none, self or reverse)");
  EXPECT_EQ(*ParseEdgeSplit("valid", "f"), 1);
  EXPECT_EQ(ParseEdgeSplit("dev", "open.edge_split").status().message(),
            "open.edge_split = 'dev' (must be train, valid or test)");
  EXPECT_EQ(MaxLinkSeeds(10, {NegativeMode::kNone, 5, false}), 20);
  EXPECT_EQ(MaxLinkSeeds(10, {NegativeMode::kBinary, 2, false}), 60);
  EXPECT_EQ(MaxLinkSeeds(10, {NegativeMode::kTriplet, 2, false}), 40);
}

TEST(LinkBatch, LabeledSplitsGiveClassesShiftedBesideBinaryNegatives) {
  const std::vector<int64_t> classes = {4, 0, 7, 2};
  const std::vector<int64_t> input_id = {2, 0};
  std::vector<int64_t> out(6, -1);
  ASSERT_EQ(LabelShift(NegativeMode::kBinary, classes.data(), 4), 1);
  LabeledEdgeLabels(classes.data(), input_id, 1, 6, out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{8, 5, 0, 0, 0, 0}));  // PyG: 0 is the negatives' class
  std::vector<int64_t> alone(2, -1);
  ASSERT_EQ(LabelShift(NegativeMode::kNone, classes.data(), 4), 0);
  LabeledEdgeLabels(classes.data(), input_id, 0, 2, alone.data());
  EXPECT_EQ(alone, (std::vector<int64_t>{7, 4}));
  // Classes that do not start at 0 keep their values beside binary negatives (PyG adds 1 only where min is 0).
  const std::vector<int64_t> from_one = {4, 1, 7, 2};
  EXPECT_EQ(LabelShift(NegativeMode::kBinary, from_one.data(), 4), 0);
  EXPECT_EQ(LabelShift(NegativeMode::kTriplet, classes.data(), 4), 0);
  EXPECT_EQ(LabelShift(NegativeMode::kBinary, nullptr, 0), 0);
}

TEST(LinkBatch, GivenSeedPairsAreCheckedNamingTheFirstBadId) {
  const std::vector<int64_t> pairs = {0, 4, 9, 1, 2, 3};  // sources 0, 4, 9; destinations 1, 2, 3
  EXPECT_TRUE(CheckSeedEdges(pairs, 10, 10, "open.").ok());
  EXPECT_EQ(CheckSeedEdges(pairs, 9, 9, "open.").message(), "open.seed_edges[0][2] = 9 (node ids are 0 to 8)");
  const std::vector<int64_t> negative = {0, 1, 2, -1};
  EXPECT_EQ(CheckSeedEdges(negative, 9, 9, "open.").message(), "open.seed_edges[1][1] = -1 (node ids are 0 to 8)");
  const std::vector<int64_t> odd = {0, 1, 2};
  EXPECT_TRUE(absl::IsInvalidArgument(CheckSeedEdges(odd, 9, 9, "open.")));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckSeedEdges({}, 9, 9, "open.")));
}

}  // namespace
}  // namespace gnnd
