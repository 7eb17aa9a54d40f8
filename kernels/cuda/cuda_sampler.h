// The CUDA backend: samples a batch on the GPU with the shared rule (common/sampling.h) and assembles
// it in the canonical layout, bit-identical to CpuSampler. Every buffer is allocated up front from the
// batch capacity; Sample() only launches work on its stream (no allocation, no host synchronization):
// hop sizes stay on the device and each launch covers the host-side upper bound.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch.h"
#include "common/graph.h"

namespace gnnd::cuda {

enum class CscPlacement {
  kDevice,  // indptr/indices copied into GPU memory
  kHost,    // read from (registered) host memory over PCIe, zero-copy
};

// Device-visible pointers to a dataset's arrays. Host arrays must be registered (HostRegistration) or
// otherwise addressable from the device.
struct DeviceGraph {
  v1::DatasetManifest manifest;
  const int64_t* indptr = nullptr;
  const void* indices = nullptr;
  const void* features = nullptr;
  const int64_t* labels = nullptr;
};

class CudaSampler {
 public:
  // Sizes every buffer for `capacity` (ComputeBatchCapacity of the same spec) on the current device.
  static absl::StatusOr<std::unique_ptr<CudaSampler>> Create(const DeviceGraph& graph, std::vector<int32_t> fanouts,
                                                             uint64_t seed, const BatchCapacity& capacity);
  ~CudaSampler();

  // Enqueues the batch for (epoch, batch_index) around `seeds` (device memory, seeds.size() entries) on
  // `stream`, writing every array of `out` (device memory laid out by layout()).
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> device_seeds, BatchView out,
                      cudaStream_t stream);
  const BatchLayout& layout() const { return layout_; }
  // Rows that are not multiples of 16 bytes: read them with 16-byte loads shifted through shared memory
  // (default), or with the widest narrower loads that fit (kept for comparison in benchmarks).
  void set_shifted_gather(bool shifted) { shifted_gather_ = shifted; }

 private:
  CudaSampler() = default;
  bool shifted_gather_ = true;
  struct Buffers;
  DeviceGraph graph_;
  std::vector<int32_t> fanouts_;
  uint64_t seed_ = 0;
  BatchLayout layout_;
  std::vector<int64_t> frontier_bound_, edge_bound_, nodes_bound_;  // per hop, host-side upper bounds
  std::unique_ptr<Buffers> buffers_;
};

// Places a dataset for the GPU: CSC copied to the device or used in place, features and labels used in
// place (zero-copy). The host arrays must stay mapped while the result is used.
class DeviceDataset {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceDataset>> Create(const GraphData& host, CscPlacement placement);
  ~DeviceDataset();
  const DeviceGraph& graph() const { return graph_; }

 private:
  DeviceDataset() = default;
  DeviceGraph graph_;
  std::vector<std::unique_ptr<class HostRegistration>> registrations_;
  void* device_indptr_ = nullptr;
  void* device_indices_ = nullptr;
};

bool HaveGpu();

}  // namespace gnnd::cuda
