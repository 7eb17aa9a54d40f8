#include "kernels/cuda/device_dataset.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/cuda_check.h"
#include "common/base/status.h"

namespace gnnd::cuda {

DeviceDataset::~DeviceDataset() {
  for (void* p : copies_) cudaFree(p);
}

absl::StatusOr<const void*> DeviceDataset::Register(const void* host, size_t bytes) {
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<HostRegistration> r, HostRegistration::Register(host, bytes));
  const void* device = r->device_pointer();
  registrations_.push_back(std::move(r));
  registered_bytes_ += bytes;
  return device;
}

absl::StatusOr<const void*> DeviceDataset::Copy(const void* host, size_t bytes, const std::string& what) {
  void* target = nullptr;
  GNND_CUDA(cudaMalloc(&target, std::max<size_t>(bytes, 1)), absl::StrCat("allocate ", what, " on the GPU"));
  copies_.push_back(target);
  GNND_CUDA(cudaMemcpy(target, host, bytes, cudaMemcpyHostToDevice), absl::StrCat("copy ", what, " to the GPU"));
  placed_bytes_ += bytes;
  return target;
}

absl::StatusOr<const uint32_t*> DeviceDataset::TimeOrder(int relation, int times) {
  std::lock_guard<std::mutex> lock(time_orders_mutex_);
  if (auto at = time_orders_.find({relation, times}); at != time_orders_.end()) return at->second;
  GNND_ASSIGN_OR_RETURN(const uint32_t* host, host_->time_orders->Get(*host_, relation, times));
  const size_t bytes = sizeof(uint32_t) * static_cast<size_t>(host_->schema.relations[relation].num_edges);
  const void* placed = nullptr;
  if (graph_.csc == CscPlacement::kDevice) {
    GNND_ASSIGN_OR_RETURN(placed, Copy(host, bytes, absl::StrCat("the time order of ",
                                                                 host_->schema.relations[relation].key())));
  } else {
    GNND_ASSIGN_OR_RETURN(placed, Register(host, bytes));
  }
  time_orders_[{relation, times}] = static_cast<const uint32_t*>(placed);
  return static_cast<const uint32_t*>(placed);
}

absl::StatusOr<std::unique_ptr<DeviceDataset>> DeviceDataset::Create(const GraphData& host, CscPlacement placement) {
  auto d = std::unique_ptr<DeviceDataset>(new DeviceDataset());
  d->host_ = &host;
  d->graph_.dataset = d.get();
  d->graph_.manifest = host.manifest;
  d->graph_.schema = host.schema;
  d->graph_.csc = placement;
  const DatasetSchema& schema = host.schema;
  // Each array of the schema where it goes: indptr copied unless kHost, indices only with kDevice and with
  // them the node times and the edge attributes that may weight or time draws (one float32 or int64 an edge:
  // read with each list), the rest (features, labels, other edge data) read in place.
  std::vector<const void*> placed(schema.arrays.size(), nullptr);
  std::vector<bool> can_weigh(schema.arrays.size(), false), read_with_lists(schema.arrays.size(), false);
  for (const RelationSchema& r : schema.relations) {
    for (const EdgeAttributeSchema& a : r.edge_attrs) {
      can_weigh[a.array] = a.CanWeighDraws();
      read_with_lists[a.array] = a.CanWeighDraws() || a.CanTimeDraws();
    }
  }
  for (const NodeTypeSchema& t : schema.node_types) {
    if (t.node_time >= 0) read_with_lists[t.node_time] = true;
  }
  d->graph_.positive.assign(schema.arrays.size(), 0);
  for (size_t i = 0; i < schema.arrays.size(); ++i) {
    const ArraySchema& a = schema.arrays[i];
    if (a.role == ArrayRole::kSplit) continue;     // seeds reach the GPU per batch
    if (host.arrays.data[i] == nullptr) continue;  // features on storage: staged by the host per batch
    const bool weights = can_weigh[i];
    if (weights) {  // the weighted rule counts a node's positive weights unless all are
      const auto* w = static_cast<const float*>(host.arrays.data[i]);
      d->graph_.positive[i] = std::all_of(w, w + a.shape[0], [](float x) { return x > 0; });
    }
    const bool copy = (a.role == ArrayRole::kIndptr && placement != CscPlacement::kHost) ||
                      ((a.role == ArrayRole::kIndices || read_with_lists[i]) && placement == CscPlacement::kDevice);
    if (copy) {
      GNND_ASSIGN_OR_RETURN(placed[i], d->Copy(host.arrays.data[i], a.bytes(), a.name));
    } else {
      GNND_ASSIGN_OR_RETURN(placed[i], d->Register(host.arrays.data[i], a.bytes()));
    }
  }
  d->graph_.arrays = placed;
  for (const RelationSchema& r : schema.relations) {
    d->graph_.relations.push_back({static_cast<const int64_t*>(placed[r.indptr]), placed[r.indices],
                                   r.index_dtype == DType::kInt32 ? v1::INDEX_DTYPE_INT32 : v1::INDEX_DTYPE_INT64});
  }
  for (const NodeTypeSchema& t : schema.node_types) {
    DeviceNodeType& type = d->graph_.types.emplace_back();
    type.features = t.features >= 0 ? placed[t.features] : nullptr;
    type.labels = t.labels >= 0 ? static_cast<const int64_t*>(placed[t.labels]) : nullptr;
  }
  if (schema.format_version == 1) {  // the homogeneous kernels' fields
    d->graph_.indptr = d->graph_.relations[0].indptr;
    d->graph_.indices = d->graph_.relations[0].indices;
    d->graph_.features = d->graph_.types[0].features;
    d->graph_.labels = d->graph_.types[0].labels;
  }
  return d;
}

bool HaveGpu() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return ok;
}

}  // namespace gnnd::cuda
