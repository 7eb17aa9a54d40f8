// The C ABI (client/include/gnnd_client.h) over the C++ client. Each entry point checks its arguments and
// runs inside Guard, so no C++ exception crosses into the caller.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/cpp/client.h"
#include "client/include/gnnd_client.h"
#include "common/base/limits.h"
#include "common/base/text_proto.h"
#include "common/base/vocabulary.h"
#include "common/batch/batch.h"
#include "common/batch/link_batch.h"
#include "common/dataset/dataset.h"
#include "dlpack/dlpack.h"

static_assert(GNND_BATCH_ARRAYS == gnnd::kNumBatchArrays, "the C ABI's batch arrays are the layout's");
static_assert(GNND_MAX_HOPS == gnnd::kMaxHops, "the C ABI's hop limit is the sampler's");

struct gnnd_client {
  std::unique_ptr<gnnd::client::Client> impl;
};
struct gnnd_session {
  std::unique_ptr<gnnd::client::Session> impl;
};

namespace {

thread_local std::string last_error;

gnnd_status Fail(const absl::Status& status) {
  last_error = std::string(status.message());
  return static_cast<gnnd_status>(status.code());
}

gnnd_status Check(const absl::Status& status) { return status.ok() ? GNND_OK : Fail(status); }

gnnd_status Null(const char* argument) { return Fail(absl::InvalidArgumentError(absl::StrCat(argument, ": NULL"))); }

// Runs an entry point's body; an exception (a bug, or out of memory) becomes GNND_INTERNAL.
template <typename Body>
gnnd_status Guard(Body&& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Fail(absl::InternalError(absl::StrCat("gnnd client: ", e.what())));
  } catch (...) {
    return Fail(absl::InternalError("gnnd client: unknown exception"));
  }
}

// The caller's options over the defaults: fields past the caller's `size` keep their defaults.
absl::StatusOr<gnnd_session_options> ReadOptions(const gnnd_session_options* given) {
  gnnd_session_options o = GNND_SESSION_OPTIONS_INIT;
  constexpr size_t kFirstVersion = offsetof(gnnd_session_options, device) + sizeof(o.device);  // API 1.0
  if (given->size < kFirstVersion || given->size > sizeof(o)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.size = ", given->size, " (start from GNND_SESSION_OPTIONS_INIT; this library knows ",
                     kFirstVersion, " to ", sizeof(o), " bytes, API ", GNND_API_VERSION, ")"));
  }
  std::memcpy(&o, given, given->size);
  return o;
}

// The C ABI's dtype codes (gnnd_dtype) for the dtypes a batch may hold.
struct CDType {
  gnnd::DType dtype;
  gnnd_dtype code;
};
constexpr CDType kCDTypes[] = {
    {gnnd::DType::kInt32, GNND_INT32},       {gnnd::DType::kInt64, GNND_INT64},
    {gnnd::DType::kFloat32, GNND_FLOAT32},   {gnnd::DType::kFloat16, GNND_FLOAT16},
    {gnnd::DType::kBFloat16, GNND_BFLOAT16}, {gnnd::DType::kFloat8E4M3FN, GNND_FLOAT8_E4M3FN},
    {gnnd::DType::kBool, GNND_BOOL}};

std::optional<gnnd_dtype> ToGnndDType(gnnd::DType dtype) {
  for (const CDType& c : kCDTypes) {
    if (c.dtype == dtype) return c.code;
  }
  return std::nullopt;
}

// Array `index` of the session's batch schema in `slot`, with `rows` rows (a batch's count, or the slot's
// capacity): what every C call that gives arrays hands out.
void SchemaArray(const gnnd::client::Session& session, int slot, int index, int64_t rows, gnnd_array* out) {
  const gnnd::BatchArraySchema& a = session.slot_schema(slot).arrays[index];
  out->name = a.name.c_str();
  out->data = static_cast<std::byte*>(session.SlotBase(slot)) + a.offset;
  out->dtype = *ToGnndDType(a.dtype);  // checked when the session opened
  out->ndim = a.row_shape.empty() ? 1 : 2;
  out->shape[0] = rows;
  out->shape[1] = a.row_shape.empty() ? 0 : a.row_shape[0];
  out->device_type = session.device() >= 0 ? GNND_DEVICE_CUDA : GNND_DEVICE_CPU;
  out->device_id = session.device() >= 0 ? session.device() : 0;
}

// A DLPack tensor over slot memory that holds the slots' mapping until torch or numpy deletes it.
struct SlotTensor {
  DLManagedTensor managed{};
  int64_t shape[2] = {0, 0};
  int64_t strides[2] = {0, 0};
  std::shared_ptr<const gnnd::client::SlotMapping> mapping;
};

void DeleteSlotTensor(DLManagedTensor* managed) noexcept { delete static_cast<SlotTensor*>(managed->manager_ctx); }

DLDataType DlpackDType(gnnd::DType dtype, bool as_bits) {
  switch (dtype) {
    case gnnd::DType::kInt32:
      return {kDLInt, 32, 1};
    case gnnd::DType::kInt64:
      return {kDLInt, 64, 1};
    case gnnd::DType::kFloat32:
      return {kDLFloat, 32, 1};
    case gnnd::DType::kFloat16:
      return {kDLFloat, 16, 1};
    case gnnd::DType::kBFloat16:
      return as_bits ? DLDataType{kDLUInt, 16, 1} : DLDataType{kDLBfloat, 16, 1};
    default:  // float8_e4m3fn, bool: not every reader knows a DLPack code for them; their bits, reinterpreted
      return {kDLUInt, static_cast<uint8_t>(8 * gnnd::DTypeSize(dtype)), 1};
  }
}

// The 1.x calls describe the homogeneous layout only.
absl::Status CheckHomogeneous(const gnnd::client::Session& session) {
  if (session.homogeneous()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "this session's batches (typed, link, or without features or labels) are read by their schema "
      "(gnnd_session_arrays, gnnd_slot_array, gnnd_next_batch_values), not as gnnd_batch or gnnd_batch_counts");
}

absl::Status CheckArrayIndex(const gnnd::BatchSchema& schema, int32_t index) {
  if (index >= 0 && index < static_cast<int32_t>(schema.arrays.size())) return absl::OkStatus();
  return absl::OutOfRangeError(absl::StrCat("array ", index, ": the batch has ", schema.arrays.size()));
}

// One call per batch: releases `release_slot` (none if negative), then takes the next batch into `batch`.
// GNND_OK, GNND_END_OF_EPOCH, or the failure.
gnnd_status ReleaseThenNext(gnnd_session& session, int32_t release_slot, void* cuda_stream,
                            gnnd::client::Batch& batch) {
  if (release_slot >= 0) {
    const gnnd_status released = Check(session.impl->Release(release_slot, cuda_stream));
    if (released != GNND_OK) return released;
  }
  auto next = session.impl->Next(cuda_stream);
  if (!next.ok()) return Fail(next.status());
  if (!next->has_value()) return GNND_END_OF_EPOCH;
  batch = **next;
  return GNND_OK;
}

// The seed ids and pairs the options give as arrays, added to `request`.
absl::Status AddSeedArrays(const gnnd_session_options& o, gnnd::v1::OpenSession& request) {
  // Refused by gnnd beyond its limits too; checked here before copying them (2 x num_seed_edges: no overflow).
  if (o.num_seed_ids > gnnd::kMaxSeedIds) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.num_seed_ids = ", o.num_seed_ids, " (at most ", gnnd::kMaxSeedIds, ")"));
  }
  if (o.num_seed_edges > gnnd::kMaxSeedEdges) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.num_seed_edges = ", o.num_seed_edges, " (at most ", gnnd::kMaxSeedEdges, " pairs)"));
  }
  request.mutable_seed_ids()->Add(o.seed_ids, o.seed_ids + std::max<int64_t>(o.num_seed_ids, 0));
  request.mutable_seed_edges()->Add(o.seed_edges, o.seed_edges + 2 * std::max<int64_t>(o.num_seed_edges, 0));
  return absl::OkStatus();
}

// The request the options' fields make (API 1.0-1.12 callers).
absl::Status RequestOfFields(const gnnd_session_options& o, gnnd::v1::OpenSession& request) {
  request.set_dataset(o.dataset ? o.dataset : "");
  if (o.edge_split != nullptr || o.num_seed_edges > 0) {  // a link session: an edge split's or given pairs
    if (o.edge_split != nullptr) request.set_edge_split(o.edge_split);
    if (o.edge_type != nullptr) request.set_edge_type(o.edge_type);
    if (o.split != nullptr) request.set_split(o.split);  // refused by gnnd, naming both
  } else if (o.split != nullptr || o.num_seed_ids <= 0) {
    request.set_split(o.split ? o.split : gnnd::kDefaultSplit);
  }
  // Sent whatever the session: gnnd refuses them without an edge split.
  request.set_neg_sampling(o.neg_sampling ? o.neg_sampling : "");
  request.set_neg_amount(o.neg_amount);
  request.set_strict_negatives(o.strict_negatives != 0);
  request.set_exclude(o.exclude ? o.exclude : "");
  request.set_seed_mask_length(o.seed_mask_length);
  request.set_slots_may_grow(o.slots_may_grow != 0);
  request.set_batch_size(o.batch_size);
  if (o.num_fanout_relations > 0) {
    for (int32_t r = 0; r < o.num_fanout_relations; ++r) {
      if (o.fanout_relations[r] == nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("options.fanout_relations[", r, "]: NULL"));
      }
      gnnd::v1::RelationFanouts& f = *request.add_relation_fanouts();
      f.set_relation(o.fanout_relations[r]);
      for (int32_t h = 0; h < o.num_fanouts; ++h) f.add_fanouts(o.fanouts[r * o.num_fanouts + h]);
    }
  } else {
    for (int32_t i = 0; i < o.num_fanouts; ++i) request.add_fanouts(o.fanouts[i]);
  }
  if (o.node_type != nullptr) request.set_node_type(o.node_type);
  request.set_seed(o.seed);
  request.set_epoch(o.epoch);
  request.set_rank(o.rank);
  request.set_world_size(o.world_size);
  request.set_no_shuffle(o.shuffle == 0);
  request.set_drop_last(o.drop_last != 0);
  request.set_num_slots(o.num_slots);
  request.set_device(o.device ? o.device : "");
  return AddSeedArrays(o, request);
}

}  // namespace

extern "C" {

int32_t gnnd_api_version(void) { return GNND_API_VERSION; }

const char* gnnd_dtype_name(int32_t dtype) {
  for (const CDType& c : kCDTypes) {
    if (c.code == dtype) return gnnd::DTypeName(c.dtype).data();
  }
  return nullptr;
}

const char* gnnd_batch_array_name(int32_t index) {
  return index >= 0 && index < gnnd::kNumBatchArrays ? gnnd::kBatchArrayNames[index] : nullptr;
}

const char* gnnd_default_address(void) {
  thread_local std::string address;
  try {
    address = gnnd::DefaultAddress();
  } catch (...) {  // out of memory: the built-in default needs no allocation
    return gnnd::kDefaultAddress;
  }
  return address.c_str();
}

gnnd_status gnnd_connect(const char* address, int32_t timeout_ms, gnnd_client** out) {
  if (out == nullptr) return Null("out");
  return Guard([&] {
    auto client = gnnd::client::Client::Connect(address != nullptr ? address : gnnd::DefaultAddress(),
                                                timeout_ms > 0 ? timeout_ms : 5000);
    if (!client.ok()) return Fail(client.status());
    *out = new gnnd_client{std::move(*client)};
    return GNND_OK;
  });
}

void gnnd_client_free(gnnd_client* client) { delete client; }

gnnd_status gnnd_open_session(gnnd_client* client, const gnnd_session_options* options, gnnd_session** out) {
  if (client == nullptr) return Null("client");
  if (options == nullptr) return Null("options");
  if (out == nullptr) return Null("out");
  return Guard([&] {
    absl::StatusOr<gnnd_session_options> o = ReadOptions(options);
    if (!o.ok()) return Fail(o.status());
    if (o->num_fanouts > 0 && o->fanouts == nullptr) return Null("options.fanouts");
    if (o->num_seed_ids > 0 && o->seed_ids == nullptr) return Null("options.seed_ids");
    if (o->num_seed_edges > 0 && o->seed_edges == nullptr) return Null("options.seed_edges");
    if (o->num_fanout_relations > 0 && o->fanout_relations == nullptr) return Null("options.fanout_relations");
    gnnd::v1::OpenSession request;
    if (o->request != nullptr) {
      if (absl::Status set = gnnd::SetTextFields(o->request, "options.request", &request); !set.ok()) return Fail(set);
      if (absl::Status added = AddSeedArrays(*o, request); !added.ok()) return Fail(added);
    } else if (absl::Status set = RequestOfFields(*o, request); !set.ok()) {
      return Fail(set);
    }
    if (o->open_fields != nullptr) {
      if (absl::Status set = gnnd::SetTextFields(o->open_fields, "options.open_fields", &request); !set.ok()) {
        return Fail(set);
      }
    }
    auto session = client->impl->OpenSession(request);
    if (!session.ok()) return Fail(session.status());
    for (const gnnd::BatchArraySchema& array : (*session)->schema().arrays) {
      if (!ToGnndDType(array.dtype)) {
        return Fail(absl::UnimplementedError(absl::StrCat("the batch's array ", array.name, " is ",
                                                          gnnd::DTypeName(array.dtype),
                                                          ", a dtype the C API cannot express (update the library)")));
      }
    }
    // The 1.x calls hand out gnnd_batch's seven arrays: the schema's first seven, by those names.
    const gnnd::BatchSchema& schema = (*session)->schema();
    for (int i = 0; i < gnnd::kNumBatchArrays && (*session)->homogeneous(); ++i) {
      if (i >= static_cast<int>(schema.arrays.size()) || schema.arrays[i].name != gnnd::kBatchArrayNames[i]) {
        return Fail(absl::InternalError("gnnd's batch schema does not start with gnnd_batch's arrays"));
      }
    }
    *out = new gnnd_session{std::move(*session)};
    return GNND_OK;
  });
}

int64_t gnnd_session_steps(const gnnd_session* session) {
  return session == nullptr ? -1 : session->impl->steps_per_epoch();
}

int32_t gnnd_batch_hop_counts(const gnnd_session* session, int32_t slot, int32_t* num_nodes_per_hop,
                              int32_t* num_edges_per_hop, int32_t capacity) {
  if (session == nullptr || num_nodes_per_hop == nullptr || num_edges_per_hop == nullptr) return -1;
  const gnnd::client::HopCounts* counts = session->impl->hop_counts(slot);
  if (counts == nullptr) return -1;
  const int32_t hops = static_cast<int32_t>(counts->edges.size());
  if (capacity < hops + 1) return -1;
  std::copy(counts->nodes.begin(), counts->nodes.end(), num_nodes_per_hop);
  std::copy(counts->edges.begin(), counts->edges.end(), num_edges_per_hop);
  return hops;
}

gnnd_status gnnd_next_batch(gnnd_session* session, gnnd_batch* out) {
  return gnnd_next_batch_on_stream(session, nullptr, out);
}

gnnd_status gnnd_next_batch_on_stream(gnnd_session* session, void* cuda_stream, gnnd_batch* out) {
  if (session == nullptr) return Null("session");
  if (out == nullptr) return Null("out");
  if (absl::Status s = CheckHomogeneous(*session->impl); !s.ok()) return Fail(s);
  return Guard([&] {
    auto batch = session->impl->Next(cuda_stream);
    if (!batch.ok()) return Fail(batch.status());
    if (!batch->has_value()) return GNND_END_OF_EPOCH;
    const gnnd::client::Batch& b = **batch;
    out->slot = b.slot;
    out->epoch = b.epoch;
    out->step = b.step;
    const gnnd::client::Session& s = *session->impl;
    const std::vector<int64_t>& counts = *s.counts(b.slot);  // Next checked them
    for (int i = 0; i < gnnd::kNumBatchArrays; ++i) {
      SchemaArray(s, b.slot, i, counts[s.schema().arrays[i].count], &out->arrays[i]);
    }
    return GNND_OK;
  });
}

int32_t gnnd_session_slots(const gnnd_session* session) { return session == nullptr ? -1 : session->impl->num_slots(); }

int64_t gnnd_batch_input_id(const gnnd_session* session, int32_t slot, int64_t* out, int64_t capacity) {
  if (session == nullptr) {
    Null("session");
    return -1;
  }
  const std::vector<int64_t>* ids = session->impl->input_id(slot);
  if (ids == nullptr) {
    Fail(absl::OutOfRangeError(absl::StrCat("slot ", slot, ": no batch was given out there")));
    return -1;
  }
  const int64_t n = static_cast<int64_t>(ids->size());
  if (n > 0 && (out == nullptr || capacity < n)) {
    Fail(absl::OutOfRangeError(absl::StrCat("out has room for ", capacity, " of the batch's ", n, " seeds")));
    return -1;
  }
  std::copy(ids->begin(), ids->end(), out);
  return n;
}

gnnd_status gnnd_slot_arrays(const gnnd_session* session, int32_t slot, gnnd_array* out) {
  if (session == nullptr) return Null("session");
  if (out == nullptr) return Null("out");
  const gnnd::client::Session& s = *session->impl;
  if (slot < 0 || slot >= s.num_slots()) {
    return Fail(absl::OutOfRangeError(absl::StrCat("slot ", slot, ": the session has ", s.num_slots(), " slots")));
  }
  if (absl::Status status = CheckHomogeneous(s); !status.ok()) return Fail(status);
  return Guard([&] {
    for (int i = 0; i < gnnd::kNumBatchArrays; ++i) {
      SchemaArray(s, slot, i, s.slot_schema(slot).Rows(i), &out[i]);
    }
    return GNND_OK;
  });
}

gnnd_status gnnd_next_batch_counts(gnnd_session* session, int32_t release_slot, void* cuda_stream,
                                   gnnd_batch_counts* out) {
  if (session == nullptr) return Null("session");
  if (out == nullptr) return Null("out");
  if (absl::Status s = CheckHomogeneous(*session->impl); !s.ok()) return Fail(s);
  return Guard([&] {
    gnnd::client::Batch b;
    if (const gnnd_status next = ReleaseThenNext(*session, release_slot, cuda_stream, b); next != GNND_OK) return next;
    const gnnd::client::HopCounts& hops = *session->impl->hop_counts(b.slot);  // Next checked them
    out->slot = b.slot;
    out->num_hops = static_cast<int32_t>(hops.edges.size());
    out->epoch = b.epoch;
    out->step = b.step;
    out->num_nodes = b.num_nodes;
    out->num_edges = b.num_edges;
    out->num_seeds = b.num_seeds;
    std::copy(hops.nodes.begin(), hops.nodes.end(), out->num_nodes_per_hop);
    std::copy(hops.edges.begin(), hops.edges.end(), out->num_edges_per_hop);
    return GNND_OK;
  });
}

int32_t gnnd_session_arrays(const gnnd_session* session) {
  return session == nullptr ? -1 : static_cast<int32_t>(session->impl->schema().arrays.size());
}

int32_t gnnd_session_counts(const gnnd_session* session) {
  return session == nullptr ? -1 : static_cast<int32_t>(session->impl->schema().counts.size());
}

const char* gnnd_session_count_name(const gnnd_session* session, int32_t index) {
  if (session == nullptr || index < 0 || index >= gnnd_session_counts(session)) return nullptr;
  return session->impl->schema().counts[index].c_str();
}

gnnd_status gnnd_session_array_info(const gnnd_session* session, int32_t index, gnnd_array_info* out) {
  if (session == nullptr) return Null("session");
  if (out == nullptr) return Null("out");
  const gnnd::BatchSchema& schema = session->impl->schema();
  if (absl::Status s = CheckArrayIndex(schema, index); !s.ok()) return Fail(s);
  if (out->size < sizeof(gnnd_array_info)) {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat("out.size = ", out->size, " (set it to sizeof(gnnd_array_info))")));
  }
  const gnnd::BatchArraySchema& a = schema.arrays[index];
  out->name = a.name.c_str();
  out->dtype = *ToGnndDType(a.dtype);  // checked when the session opened
  out->ndim = a.row_shape.empty() ? 1 : 2;
  out->row_width = a.row_shape.empty() ? 1 : a.row_shape[0];
  out->count = a.count;
  return GNND_OK;
}

gnnd_status gnnd_slot_array(const gnnd_session* session, int32_t slot, int32_t index, gnnd_array* out) {
  if (session == nullptr) return Null("session");
  if (out == nullptr) return Null("out");
  const gnnd::client::Session& s = *session->impl;
  const gnnd::BatchSchema& schema = s.schema();
  if (slot < 0 || slot >= s.num_slots()) {
    return Fail(absl::OutOfRangeError(absl::StrCat("slot ", slot, ": the session has ", s.num_slots(), " slots")));
  }
  if (absl::Status status = CheckArrayIndex(schema, index); !status.ok()) return Fail(status);
  SchemaArray(s, slot, index, s.slot_schema(slot).Rows(index), out);
  return GNND_OK;
}

gnnd_status gnnd_slot_array_dlpack(const gnnd_session* session, int32_t slot, int32_t index, int32_t ndim,
                                   const int64_t* shape, const int64_t* strides, int32_t as_bits,
                                   void** managed_tensor) {
  if (session == nullptr) return Null("session");
  if (managed_tensor == nullptr) return Null("managed_tensor");
  gnnd_array array;
  if (const gnnd_status s = gnnd_slot_array(session, slot, index, &array); s != GNND_OK) return s;
  if (shape != nullptr && (ndim < 1 || ndim > 2)) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("ndim = ", ndim, " (1 or 2)")));
  }
  return Guard([&] {
    auto tensor = std::make_unique<SlotTensor>();
    const int dims = shape != nullptr ? ndim : array.ndim;
    for (int d = 0; d < dims; ++d) tensor->shape[d] = shape != nullptr ? shape[d] : array.shape[d];
    if (strides != nullptr) std::copy(strides, strides + dims, tensor->strides);
    tensor->mapping = session->impl->mapping(slot);
    DLTensor& t = tensor->managed.dl_tensor;
    t.data = array.data;
    t.device = {array.device_type == GNND_DEVICE_CUDA ? kDLCUDA : kDLCPU, array.device_id};
    t.ndim = dims;
    t.dtype = DlpackDType(session->impl->schema().arrays[index].dtype, as_bits != 0);
    t.shape = tensor->shape;
    t.strides = strides != nullptr ? tensor->strides : nullptr;
    t.byte_offset = 0;
    tensor->managed.manager_ctx = tensor.get();
    tensor->managed.deleter = DeleteSlotTensor;
    *managed_tensor = &tensor.release()->managed;
    return GNND_OK;
  });
}

gnnd_status gnnd_next_batch_values(gnnd_session* session, int32_t release_slot, void* cuda_stream,
                                   gnnd_batch_values* out) {
  if (session == nullptr) return Null("session");
  if (out == nullptr) return Null("out");
  constexpr size_t kHeader = offsetof(gnnd_batch_values, counts);
  if (out->size < kHeader) {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat("out.size = ", out->size, " (set it to sizeof(gnnd_batch_values))")));
  }
  const size_t room = std::min<size_t>((out->size - kHeader) / sizeof(int64_t), GNND_MAX_BATCH_COUNTS);
  if (session->impl->schema().counts.size() > room) {
    return Fail(absl::OutOfRangeError(
        absl::StrCat("the batch has ", session->impl->schema().counts.size(), " counts; out has room for ", room)));
  }
  return Guard([&] {
    gnnd::client::Batch b;
    if (const gnnd_status next = ReleaseThenNext(*session, release_slot, cuda_stream, b); next != GNND_OK) return next;
    const std::vector<int64_t>& counts = *session->impl->counts(b.slot);  // Next checked them
    out->slot = b.slot;
    out->epoch = b.epoch;
    out->step = b.step;
    out->num_counts = static_cast<int32_t>(counts.size());
    std::copy(counts.begin(), counts.end(), out->counts);
    return GNND_OK;
  });
}

gnnd_status gnnd_release_batch(gnnd_session* session, int32_t slot) {
  return gnnd_release_batch_on_stream(session, slot, nullptr);
}

gnnd_status gnnd_release_batch_on_stream(gnnd_session* session, int32_t slot, void* cuda_stream) {
  if (session == nullptr) return Null("session");
  return Guard([&] { return Check(session->impl->Release(slot, cuda_stream)); });
}

gnnd_status gnnd_start_epoch(gnnd_session* session, uint64_t epoch) {
  if (session == nullptr) return Null("session");
  return Guard([&] { return Check(session->impl->StartEpoch(epoch)); });
}

void gnnd_close_session(gnnd_session* session) {
  (void)Guard([&] {
    delete session;
    return GNND_OK;
  });
}

const char* gnnd_last_error(void) { return last_error.c_str(); }

}  // extern "C"
