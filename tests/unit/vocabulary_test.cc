// The shared vocabulary: device strings, feature dtype names, the default address, and the batch layout
// as it travels on the session stream.
#include "common/base/vocabulary.h"

#include <cstdlib>

#include "common/batch/batch.h"
#include "common/wire/batch_proto.h"
#include "gtest/gtest.h"

namespace gnnd {
namespace {

TEST(Vocabulary, DevicesParseAndPrintBack) {
  for (const char* text : {"cpu", "cuda:0", "cuda:7", "cuda:12"}) {
    auto device = ParseDevice(text, "open.device");
    ASSERT_TRUE(device.ok()) << text << ": " << device.status();
    EXPECT_EQ(device->ToString(), text);
  }
  auto empty = ParseDevice("", "open.device");
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->is_cuda());
  EXPECT_EQ(ParseDevice("cuda:3", "x")->cuda, 3);
}

TEST(Vocabulary, BadDevicesNameTheFieldAndValue) {
  for (const char* text : {"gpu", "cuda", "cuda:", "cuda:-1", "cuda:1x", "cuda: 1", "cuda:99999", "CPU", "tpu:0"}) {
    auto device = ParseDevice(text, "open.device");
    ASSERT_FALSE(device.ok()) << text;
    EXPECT_EQ(device.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(device.status().message(), absl::StrCat("open.device = '", text, "' (cpu or cuda:N)"));
  }
}

TEST(Vocabulary, FeatureDTypeNamesRoundTrip) {
  for (v1::FeatureDType t : {v1::FEATURE_DTYPE_FLOAT32, v1::FEATURE_DTYPE_FLOAT16, v1::FEATURE_DTYPE_BFLOAT16,
                             v1::FEATURE_DTYPE_FLOAT8_E4M3FN}) {
    auto parsed = ParseFeatureDType(FeatureDTypeName(t), "--feature-dtype");
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, t);
  }
  auto bad = ParseFeatureDType("float64", "--feature-dtype");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--feature-dtype = 'float64' (one of float32, float16, bfloat16, float8_e4m3fn)");
  EXPECT_EQ(FeatureElementDType(v1::FEATURE_DTYPE_BFLOAT16), DType::kBFloat16);
  EXPECT_EQ(FeatureElementDType(v1::FEATURE_DTYPE_FLOAT8_E4M3FN), DType::kFloat8E4M3FN);
  EXPECT_EQ(FeatureElementDType(v1::FEATURE_DTYPE_FLOAT32), DType::kFloat32);
  EXPECT_FALSE(FeatureElementDType(v1::FEATURE_DTYPE_UNSPECIFIED).has_value());
  EXPECT_FALSE(FeatureElementDType(static_cast<v1::FeatureDType>(99)).has_value());
  EXPECT_EQ(FeatureDTypeName(static_cast<v1::FeatureDType>(99)), "unknown (99)");
}

TEST(Vocabulary, DefaultAddressHonorsTheEnvironment) {
  ::unsetenv("GNND_ADDRESS");
  EXPECT_EQ(DefaultAddress(), kDefaultAddress);
  ::setenv("GNND_ADDRESS", "unix:/run/gnnd/gnnd.sock", 1);
  EXPECT_EQ(DefaultAddress(), "unix:/run/gnnd/gnnd.sock");
  ::setenv("GNND_ADDRESS", "", 1);
  EXPECT_EQ(DefaultAddress(), kDefaultAddress);
  ::unsetenv("GNND_ADDRESS");
}

TEST(Vocabulary, InstanceNamesAddressesAndPrefixes) {
  EXPECT_TRUE(CheckInstanceName("node-1_a", "instance").ok());
  for (const char* bad : {"", "a.b", "a/b", "123456789012345678901234567890123"}) {
    const absl::Status s = CheckInstanceName(bad, "instance");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("instance = "), std::string::npos) << s;
  }
  // The default instance keeps today's names; the others are prefixed, and address and instance are inverses.
  EXPECT_EQ(InstancePrefix(kDefaultInstance), "gnnd");
  EXPECT_EQ(InstancePrefix("node1"), "gnnd-node1");
  EXPECT_EQ(InstanceAddress(kDefaultInstance), kDefaultAddress);
  EXPECT_EQ(InstanceAddress("node1"), "unix:/tmp/gnnd-node1.sock");
  for (const char* instance : {"gnnd", "node1", "a-b"})
    EXPECT_EQ(InstanceOfAddress(InstanceAddress(instance)), instance);
  EXPECT_EQ(InstanceOfAddress("unix:/run/gnnd/gnnd.sock"), "gnnd");
  EXPECT_EQ(InstanceOfAddress("unix:/run/x/socket-2.sock"), "socket-2");
  EXPECT_EQ(InstanceOfAddress("unix:/tmp/we.ird name"), "weirdname");
  EXPECT_EQ(InstanceOfAddress("127.0.0.1:50051"), "tcp-50051");
  EXPECT_EQ(InstanceOfAddress("unix:/tmp/.sock"), kDefaultInstance);
  EXPECT_TRUE(CheckInstanceName(InstanceOfAddress(absl::StrCat("unix:/tmp/", std::string(80, 'x'))), "i").ok());
}

HomogeneousLayout SomeLayout() {
  HomogeneousCapacity capacity{1000, 60000, 90000, {{1000, 15000, 16000}, {16000, 75000, 60000}}};
  return HomogeneousLayout::Make(capacity, 2, 516);
}

TEST(BatchProto, LayoutRoundTripsThroughTheSessionMessage) {
  const HomogeneousLayout layout = SomeLayout();
  auto back = SlotLayoutFromProto(SlotLayoutToProto(layout));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->num_hops, 2);
  EXPECT_EQ(back->feature_row_bytes, 516u);
  EXPECT_EQ(back->total_bytes, layout.total_bytes);
  EXPECT_EQ(back->node_ids, layout.node_ids);
  EXPECT_EQ(back->num_nodes_per_hop, layout.num_nodes_per_hop);
  EXPECT_EQ(back->edge_src, layout.edge_src);
  EXPECT_EQ(back->edge_dst, layout.edge_dst);
  EXPECT_EQ(back->num_edges_per_hop, layout.num_edges_per_hop);
  EXPECT_EQ(back->features, layout.features);
  EXPECT_EQ(back->labels, layout.labels);
  EXPECT_EQ(back->capacity.max_nodes, 60000);
  EXPECT_EQ(back->capacity.max_edges, 90000);
  EXPECT_EQ(back->capacity.max_seeds, 1000);
}

TEST(BatchProto, LayoutThatDoesNotMatchItsCapacitiesIsRefused) {
  v1::SlotLayout proto = SlotLayoutToProto(SomeLayout());
  proto.set_features(proto.features() + 256);
  EXPECT_EQ(SlotLayoutFromProto(proto).status().code(), absl::StatusCode::kInvalidArgument);
  proto = SlotLayoutToProto(SomeLayout());
  proto.set_num_hops(0);
  EXPECT_EQ(SlotLayoutFromProto(proto).status().code(), absl::StatusCode::kInvalidArgument);
  proto = SlotLayoutToProto(SomeLayout());  // a slot too small for its arrays
  proto.set_slot_bytes(proto.slot_bytes() - kBatchAlignment);
  EXPECT_EQ(SlotLayoutFromProto(proto).status().code(), absl::StatusCode::kInvalidArgument);
}

// Arrays after API 1.0's (a batch's edge data) make the slot larger: its offsets stay, its stride grows.
TEST(BatchProto, ASlotMayHoldMoreAfterTheLayoutsArrays) {
  v1::SlotLayout proto = SlotLayoutToProto(SomeLayout());
  proto.set_slot_bytes(proto.slot_bytes() + 4 * kBatchAlignment);
  absl::StatusOr<HomogeneousLayout> back = SlotLayoutFromProto(proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->total_bytes, proto.slot_bytes());
  EXPECT_EQ(back->features, SomeLayout().features);
  proto.set_slot_bytes(proto.slot_bytes() + 8);  // not a whole number of aligned arrays
  EXPECT_EQ(SlotLayoutFromProto(proto).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BatchProto, CountsAndTheirTotals) {
  const int32_t nodes[] = {4, 10, 25}, edges[] = {12, 40};
  v1::BatchReady ready;
  ready.add_num_nodes_per_hop(99);  // replaced, not appended to
  SetBatchCounts(nodes, edges, ready);
  EXPECT_EQ(ready.num_nodes_per_hop_size(), 3);
  EXPECT_EQ(ready.num_edges_per_hop_size(), 2);
  EXPECT_EQ(ready.num_nodes(), 39);
  EXPECT_EQ(ready.num_edges(), 52);
  EXPECT_EQ(ready.num_seeds(), 4);
}

TEST(BatchArrays, NamesShapesAndAddressesFollowTheLayout) {
  const HomogeneousLayout layout = SomeLayout();
  HomogeneousBuffer buffer(layout);
  const HomogeneousView view = buffer.view();
  const auto arrays = BatchArrays(view, 39, 52, 4, 129, DType::kFloat32);
  ASSERT_EQ(arrays.size(), 7u);
  for (int i = 0; i < kNumBatchArrays; ++i) EXPECT_STREQ(arrays[i].name, kBatchArrayNames[i]);
  EXPECT_EQ(arrays[0].data, view.node_ids);
  EXPECT_EQ(arrays[0].shape[0], 39);
  EXPECT_EQ(arrays[1].shape[0], 3);  // hops + 1
  EXPECT_EQ(arrays[2].data, view.edge_src);
  EXPECT_EQ(arrays[3].shape[0], 52);
  EXPECT_EQ(arrays[4].shape[0], 2);
  EXPECT_EQ(arrays[5].ndim, 2);
  EXPECT_EQ(arrays[5].shape[1], 129);
  EXPECT_EQ(arrays[5].data, view.features);
  EXPECT_EQ(arrays[6].dtype, DType::kInt64);
  EXPECT_EQ(arrays[6].shape[0], 4);
  // Bytes served: the arrays' sizes added up, whatever the backend.
  uint64_t bytes = 0;
  for (const BatchArray& a : arrays) bytes += DTypeSize(a.dtype) * a.shape[0] * (a.ndim == 2 ? a.shape[1] : 1);
  EXPECT_EQ(BatchArrayBytes(39, 52, 4, 2, 129 * 4), bytes);
}

}  // namespace
}  // namespace gnnd
