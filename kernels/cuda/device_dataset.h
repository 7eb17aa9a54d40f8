// A dataset as one GPU sees it: device-visible pointers to its arrays. Host arrays (the shared-memory
// segments) are registered once for zero-copy access; the CSC is copied into GPU memory or read in place.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dataset/graph.h"
#include "kernels/cuda/host_registration.h"

namespace gnnd::cuda {

enum class CscPlacement {
  kDevice,       // indptr/indices copied into GPU memory
  kHostIndices,  // indptr (8 bytes a node) copied into GPU memory, indices (the bulk) read from host memory
  kHost,         // both read from (registered) host memory over PCIe, zero-copy
};

// A hot tier as one GPU's kernels see it (hot_tier.h builds it): rank[node] is the node's place in the
// hot set, -1 when it is not hot. Rank r's feature row and label are entry r / num_parts of part
// r % num_parts: each GPU of an NVLink group holds one part and reads the others' through peer access.
struct HotView {
  const int32_t* rank = nullptr;      // null: no hot tier
  const char* const* rows = nullptr;  // num_parts pointers (device memory)
  const int64_t* const* labels = nullptr;
  // With the CSC in host memory, also the hot nodes' in-neighbor lists: rank r's list is
  // adjacency[p][adjacency_indptr[p][r / num_parts] ...] with p = r % num_parts. Null: not cached.
  const int64_t* const* adjacency_indptr = nullptr;
  const void* const* adjacency = nullptr;
  int32_t num_parts = 1;
};

// A typed dataset's relation (its CSC) and node type (features, labels), device-visible.
struct DeviceRelation {
  const int64_t* indptr = nullptr;
  const void* indices = nullptr;
  v1::IndexDType index_dtype = v1::INDEX_DTYPE_INT64;
};
struct DeviceNodeType {
  const void* features = nullptr;   // null: the type has none
  const int64_t* labels = nullptr;  // null: the type has none
  HotView hot;                      // the type's rows in a hot tier (ids within the type), if any
};

class DeviceDataset;

// Device-visible pointers to a dataset's arrays. A typed dataset (schema.format_version 2) has its arrays
// in `relations` and `types` (by the schema's positions); a homogeneous one in the fields above them.
struct DeviceGraph {
  v1::DatasetManifest manifest;
  DatasetSchema schema;
  const int64_t* indptr = nullptr;
  const void* indices = nullptr;
  const void* features = nullptr;
  const int64_t* labels = nullptr;
  std::vector<DeviceRelation> relations;
  std::vector<DeviceNodeType> types;
  std::vector<const void*> arrays;           // per array of the schema, device-visible (null: not placed)
  std::vector<uint8_t> positive;             // per array: one float32 an edge, every value > 0
  CscPlacement csc = CscPlacement::kDevice;  // where indptr and indices are
  DeviceDataset* dataset = nullptr;          // what placed it: more of it (time orders) on first use
};

// Places `host` for the current device: CSC per `placement`, features and labels used in place
// (zero-copy). The host arrays must stay mapped while the result is used.
class DeviceDataset {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceDataset>> Create(const GraphData& host, CscPlacement placement);
  ~DeviceDataset();
  const DeviceGraph& graph() const { return graph_; }
  // Samplers created after this call read node type `type`'s rows (and a one-relation dataset's lists, when
  // the tier holds them) through `hot`.
  void set_hot(int type, const HotView& hot) { graph_.types[type].hot = hot; }
  // The temporal rule's time order of `relation` by schema array `times` (the host's TimeOrderCache), where
  // the CSC is: copied into GPU memory beside indices there, else read in place. Placed on first use.
  absl::StatusOr<const uint32_t*> TimeOrder(int relation, int times);
  size_t placed_bytes() const { return placed_bytes_; }          // copied into GPU memory
  size_t registered_bytes() const { return registered_bytes_; }  // host memory registered for zero-copy

 private:
  DeviceDataset() = default;
  // Registers a host array for zero-copy reads (its device pointer), or copies it into GPU memory.
  absl::StatusOr<const void*> Register(const void* host, size_t bytes);
  absl::StatusOr<const void*> Copy(const void* host, size_t bytes, const std::string& what);

  DeviceGraph graph_;
  const GraphData* host_ = nullptr;
  std::mutex time_orders_mutex_;  // TimeOrder's: sessions open concurrently
  std::map<std::pair<int, int>, const uint32_t*> time_orders_;
  size_t placed_bytes_ = 0, registered_bytes_ = 0;
  std::vector<std::unique_ptr<HostRegistration>> registrations_;
  std::vector<void*> copies_;  // GPU memory this object owns
};

// Whether a CUDA device is present (GPU tests skip otherwise).
bool HaveGpu();

}  // namespace gnnd::cuda
