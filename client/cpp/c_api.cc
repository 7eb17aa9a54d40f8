// The C ABI (client/include/gnnd_client.h) over the C++ client.
#include <string>

#include "client/cpp/client.h"
#include "client/include/gnnd_client.h"

struct gnnd_client {
  std::unique_ptr<gnnd::client::Client> impl;
};
struct gnnd_session {
  std::unique_ptr<gnnd::client::Session> impl;
  gnnd::v1::FeatureDType feature_dtype;
  int64_t feature_dim;
};

namespace {

thread_local std::string last_error;

gnnd_status Fail(const absl::Status& status) {
  last_error = std::string(status.message());
  return static_cast<gnnd_status>(status.code());
}

gnnd_array Array(int device, const char* name, void* data, gnnd_dtype dtype, int64_t rows, int64_t cols = 0) {
  gnnd_array a{};
  a.name = name;
  a.data = data;
  a.dtype = dtype;
  a.ndim = cols > 0 ? 2 : 1;
  a.shape[0] = rows;
  a.shape[1] = cols;
  a.device_type = device >= 0 ? GNND_DEVICE_CUDA : GNND_DEVICE_CPU;
  a.device_id = device >= 0 ? device : 0;
  return a;
}

}  // namespace

extern "C" {

gnnd_status gnnd_connect(const char* address, int32_t timeout_ms, gnnd_client** out) {
  if (address == nullptr || out == nullptr) return Fail(absl::InvalidArgumentError("address: missing"));
  auto client = gnnd::client::Client::Connect(address, timeout_ms > 0 ? timeout_ms : 5000);
  if (!client.ok()) return Fail(client.status());
  *out = new gnnd_client{std::move(*client)};
  return GNND_OK;
}

void gnnd_client_free(gnnd_client* client) { delete client; }

gnnd_status gnnd_open_session(gnnd_client* client, const gnnd_session_options* o, gnnd_session** out) {
  if (client == nullptr || o == nullptr || out == nullptr) return Fail(absl::InvalidArgumentError("null argument"));
  gnnd::v1::OpenSession request;
  request.set_dataset(o->dataset ? o->dataset : "");
  request.set_split(o->split ? o->split : "train");
  request.set_batch_size(o->batch_size);
  for (int32_t i = 0; i < o->num_fanouts; ++i) request.add_fanouts(o->fanouts[i]);
  request.set_seed(o->seed);
  request.set_epoch(o->epoch);
  request.set_rank(o->rank);
  request.set_world_size(o->world_size);
  request.set_no_shuffle(o->shuffle == 0);
  request.set_drop_last(o->drop_last != 0);
  request.set_num_slots(o->num_slots);
  request.set_device(o->device ? o->device : "");
  auto session = client->impl->OpenSession(request);
  if (!session.ok()) return Fail(session.status());
  const auto& opened = (*session)->opened();
  *out = new gnnd_session{std::move(*session), opened.feature_dtype(), opened.feature_dim()};
  return GNND_OK;
}

int64_t gnnd_session_steps(const gnnd_session* session) {
  return session == nullptr ? -1 : session->impl->steps_per_epoch();
}

gnnd_status gnnd_next_batch(gnnd_session* session, gnnd_batch* out) {
  return gnnd_next_batch_on_stream(session, nullptr, out);
}

gnnd_status gnnd_next_batch_on_stream(gnnd_session* session, void* cuda_stream, gnnd_batch* out) {
  auto batch = session->impl->Next(cuda_stream);
  if (!batch.ok()) return Fail(batch.status());
  if (!batch->has_value()) return GNND_END_OF_EPOCH;
  const gnnd::BatchView& v = (*batch)->view;
  const int d = (*batch)->device;
  const int64_t nodes = (*batch)->num_nodes, edges = (*batch)->num_edges, hops = v.num_hops;
  out->slot = (*batch)->slot;
  out->epoch = (*batch)->epoch;
  out->step = (*batch)->step;
  const gnnd_dtype feature_dtype = session->feature_dtype == gnnd::v1::FEATURE_DTYPE_FLOAT16    ? GNND_FLOAT16
                                   : session->feature_dtype == gnnd::v1::FEATURE_DTYPE_BFLOAT16 ? GNND_BFLOAT16
                                                                                                : GNND_FLOAT32;
  out->arrays[0] = Array(d, "node_ids", v.node_ids, GNND_INT64, nodes);
  out->arrays[1] = Array(d, "num_nodes_per_hop", v.num_nodes_per_hop, GNND_INT32, hops + 1);
  out->arrays[2] = Array(d, "edge_src", v.edge_src, GNND_INT32, edges);
  out->arrays[3] = Array(d, "edge_dst", v.edge_dst, GNND_INT32, edges);
  out->arrays[4] = Array(d, "num_edges_per_hop", v.num_edges_per_hop, GNND_INT32, hops);
  out->arrays[5] = Array(d, "features", v.features, feature_dtype, nodes, session->feature_dim);
  out->arrays[6] = Array(d, "labels", v.labels, GNND_INT64, (*batch)->num_seeds);
  return GNND_OK;
}

gnnd_status gnnd_release_batch(gnnd_session* session, int32_t slot) {
  return gnnd_release_batch_on_stream(session, slot, nullptr);
}

gnnd_status gnnd_release_batch_on_stream(gnnd_session* session, int32_t slot, void* cuda_stream) {
  const absl::Status s = session->impl->Release(slot, cuda_stream);
  return s.ok() ? GNND_OK : Fail(s);
}

gnnd_status gnnd_start_epoch(gnnd_session* session, uint64_t epoch) {
  const absl::Status s = session->impl->StartEpoch(epoch);
  return s.ok() ? GNND_OK : Fail(s);
}

void gnnd_close_session(gnnd_session* session) { delete session; }

const char* gnnd_last_error(void) { return last_error.c_str(); }

}  // extern "C"
