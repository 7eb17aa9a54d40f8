// The C ABI as a caller sees it (linked against libgnnd_client.so): its version, the batch array names,
// sized options, and clear errors for null handles, bad option sizes and an absent gnnd.
#include <cstring>
#include <string>

#include "client/include/gnnd_client.h"
#include "gtest/gtest.h"

extern "C" gnnd_session_options gnnd_test_default_options(void);

namespace {

TEST(CAbi, VersionIsTheHeaders) {
  EXPECT_EQ(gnnd_api_version(), GNND_API_VERSION);
  EXPECT_EQ(GNND_API_VERSION, GNND_API_VERSION_MAJOR * 1000 + GNND_API_VERSION_MINOR);
}

TEST(CAbi, BatchArrayNamesInLayoutOrder) {
  const char* expected[GNND_BATCH_ARRAYS] = {"node_ids",          "num_nodes_per_hop", "edge_src", "edge_dst",
                                             "num_edges_per_hop", "features",          "labels"};
  for (int i = 0; i < GNND_BATCH_ARRAYS; ++i) EXPECT_STREQ(gnnd_batch_array_name(i), expected[i]);
  EXPECT_EQ(gnnd_batch_array_name(GNND_BATCH_ARRAYS), nullptr);
  EXPECT_EQ(gnnd_batch_array_name(-1), nullptr);
}

TEST(CAbi, DTypeNamesAreTorchs) {
  EXPECT_STREQ(gnnd_dtype_name(GNND_INT32), "int32");
  EXPECT_STREQ(gnnd_dtype_name(GNND_INT64), "int64");
  EXPECT_STREQ(gnnd_dtype_name(GNND_FLOAT32), "float32");
  EXPECT_STREQ(gnnd_dtype_name(GNND_FLOAT16), "float16");
  EXPECT_STREQ(gnnd_dtype_name(GNND_BFLOAT16), "bfloat16");
  EXPECT_STREQ(gnnd_dtype_name(GNND_FLOAT8_E4M3FN), "float8_e4m3fn");
  EXPECT_STREQ(gnnd_dtype_name(GNND_BOOL), "bool");
  EXPECT_EQ(gnnd_dtype_name(GNND_BOOL + 1), nullptr);
  EXPECT_EQ(gnnd_dtype_name(-1), nullptr);
}

TEST(CAbi, InitializerFromCGivesTheDefaults) {
  const gnnd_session_options o = gnnd_test_default_options();
  EXPECT_EQ(o.size, sizeof(gnnd_session_options));
  EXPECT_EQ(o.dataset, nullptr);
  EXPECT_EQ(o.split, nullptr);
  EXPECT_EQ(o.batch_size, 1024);
  EXPECT_EQ(o.num_fanouts, 0);
  EXPECT_EQ(o.rank, 0);
  EXPECT_EQ(o.world_size, 1);
  EXPECT_EQ(o.shuffle, 1);
  EXPECT_EQ(o.drop_last, 0);
  EXPECT_EQ(o.num_slots, 0);
  EXPECT_EQ(o.device, nullptr);
  EXPECT_EQ(o.seed_ids, nullptr);
  EXPECT_EQ(o.num_seed_ids, 0);
  EXPECT_EQ(o.exclude, nullptr);  // API 1.5's last field
  EXPECT_EQ(o.seed_edges, nullptr);
  EXPECT_EQ(o.num_seed_edges, 0);
  EXPECT_EQ(o.edge_type, nullptr);
  EXPECT_EQ(o.seed_mask_length, 0);  // API 1.8's last field
  EXPECT_EQ(o.open_fields, nullptr);
  EXPECT_EQ(o.request, nullptr);  // API 1.13's last field
}

TEST(CAbi, NullHandlesAreInvalidArguments) {
  gnnd_batch batch;
  EXPECT_EQ(gnnd_next_batch(nullptr, &batch), GNND_INVALID_ARGUMENT);
  EXPECT_STREQ(gnnd_last_error(), "session: NULL");
  EXPECT_EQ(gnnd_next_batch_on_stream(nullptr, nullptr, &batch), GNND_INVALID_ARGUMENT);
  EXPECT_EQ(gnnd_release_batch(nullptr, 0), GNND_INVALID_ARGUMENT);
  EXPECT_EQ(gnnd_release_batch_on_stream(nullptr, 0, nullptr), GNND_INVALID_ARGUMENT);
  EXPECT_EQ(gnnd_start_epoch(nullptr, 1), GNND_INVALID_ARGUMENT);
  EXPECT_EQ(gnnd_session_steps(nullptr), -1);
  EXPECT_EQ(gnnd_session_slots(nullptr), -1);
  int64_t input_id[4];
  EXPECT_EQ(gnnd_batch_input_id(nullptr, 0, input_id, 4), -1);  // API 1.9
  EXPECT_STREQ(gnnd_last_error(), "session: NULL");
  gnnd_array arrays[GNND_BATCH_ARRAYS];
  EXPECT_EQ(gnnd_slot_arrays(nullptr, 0, arrays), GNND_INVALID_ARGUMENT);
  gnnd_batch_counts counts;
  EXPECT_EQ(gnnd_next_batch_counts(nullptr, -1, nullptr, &counts), GNND_INVALID_ARGUMENT);
  EXPECT_STREQ(gnnd_last_error(), "session: NULL");
  EXPECT_EQ(gnnd_session_arrays(nullptr), -1);
  EXPECT_EQ(gnnd_session_counts(nullptr), -1);
  EXPECT_EQ(gnnd_session_count_name(nullptr, 0), nullptr);
  gnnd_array_info info{};
  info.size = sizeof(info);
  EXPECT_EQ(gnnd_session_array_info(nullptr, 0, &info), GNND_INVALID_ARGUMENT);
  EXPECT_EQ(gnnd_slot_array(nullptr, 0, 0, arrays), GNND_INVALID_ARGUMENT);
  static gnnd_batch_values values{};
  values.size = sizeof(values);
  EXPECT_EQ(gnnd_next_batch_values(nullptr, -1, nullptr, &values), GNND_INVALID_ARGUMENT);
  EXPECT_STREQ(gnnd_last_error(), "session: NULL");
  gnnd_session_options options = GNND_SESSION_OPTIONS_INIT;
  gnnd_session* session = nullptr;
  EXPECT_EQ(gnnd_open_session(nullptr, &options, &session), GNND_INVALID_ARGUMENT);
  EXPECT_STREQ(gnnd_last_error(), "client: NULL");
  EXPECT_EQ(gnnd_connect("unix:/nonexistent/gnnd.sock", 100, nullptr), GNND_INVALID_ARGUMENT);
  EXPECT_STREQ(gnnd_last_error(), "out: NULL");
  gnnd_close_session(nullptr);  // no-ops
  gnnd_client_free(nullptr);
}

TEST(CAbi, AbsentDaemonIsUnavailable) {
  gnnd_client* client = nullptr;
  EXPECT_EQ(gnnd_connect("unix:/nonexistent/gnnd.sock", 200, &client), GNND_UNAVAILABLE);
  EXPECT_EQ(client, nullptr);
  EXPECT_NE(std::string(gnnd_last_error()).find("unix:/nonexistent/gnnd.sock"), std::string::npos);
}

TEST(CAbi, DefaultAddressFollowsTheEnvironment) {
  ::setenv("GNND_ADDRESS", "unix:/run/gnnd/x.sock", 1);
  EXPECT_STREQ(gnnd_default_address(), "unix:/run/gnnd/x.sock");
  ::unsetenv("GNND_ADDRESS");
  EXPECT_STREQ(gnnd_default_address(), "unix:/tmp/gnnd.sock");
}

}  // namespace
