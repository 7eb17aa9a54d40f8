// The hot tier: the feature rows and labels of a dataset's most-read nodes (hottest first, by a stored
// ranking) copied into GPU memory once, so that the gather reads them from HBM instead of over PCIe.
// Over several GPUs with peer access the hot set is interleaved: rank r lives on GPU r % N and the others
// read it over NVLink, so N GPUs hold N times more distinct rows than one. Batches are unchanged, bit for
// bit: only where a row is read from differs (gather.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/cuda/device_dataset.h"

namespace gnnd::cuda {

class HotTier {
 public:
  // Copies the rows and labels of the first `num_hot` nodes of `order` (distinct ids below the node
  // count, checked by the caller) from `source` (device-visible, e.g. a DeviceDataset's graph) into the
  // memory of `devices`, rank r on devices[r % devices.size()]. Several devices must have peer access to
  // each other (EnablePeerAccess).
  static absl::StatusOr<std::unique_ptr<HotTier>> Create(const DeviceGraph& source, std::span<const int64_t> order,
                                                         int64_t num_hot, const std::vector<int>& devices);
  ~HotTier();

  // What the kernels on `device` (one of the tier's devices) read.
  HotView view(int device) const;
  int64_t num_hot() const { return num_hot_; }
  const std::vector<int>& devices() const { return devices_; }
  // GPU memory the tier takes on each of its devices (the largest part).
  size_t bytes_per_device() const { return bytes_per_device_; }

 private:
  struct Part {               // what one device holds
    int32_t* rank = nullptr;  // per node, its rank or -1 (every device has all of it)
    char* rows = nullptr;
    int64_t* labels = nullptr;
    const char** row_parts = nullptr;  // every device's `rows`, then `labels` pointers
    const int64_t** label_parts = nullptr;
  };
  HotTier() = default;
  absl::Status Fill(const DeviceGraph& source, std::span<const int64_t> order, size_t index);

  int64_t num_hot_ = 0;
  size_t bytes_per_device_ = 0;
  std::vector<int> devices_;
  std::vector<Part> parts_;
};

// Bytes a hot tier of `rows_per_device` rows takes on each device, for a dataset like `manifest`: each
// row and its label, and the per-node rank table.
size_t HotTierBytes(const v1::DatasetManifest& manifest, int64_t rows_per_device);
// The rows a tier of at most `bytes` per device holds on each device (0 when the rank table alone does
// not fit).
int64_t HotRowsFor(const v1::DatasetManifest& manifest, size_t bytes);
// Enables peer access between every pair of `devices`; false (and enables nothing more) when some pair
// has none.
bool EnablePeerAccess(const std::vector<int>& devices);

}  // namespace gnnd::cuda
