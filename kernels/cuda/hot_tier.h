// The hot tier: the feature rows and labels of a dataset's most-read nodes (hottest first, by a stored
// ranking) copied into GPU memory once, so that the gather reads them from HBM instead of over PCIe; with
// the CSC in host memory, their in-neighbor lists too, so that sampling reads those from HBM. Over several
// GPUs with peer access the hot set is interleaved: rank r lives on GPU r % N and the others read it over
// NVLink, so N GPUs hold N times more distinct rows than one. Batches are unchanged, bit for bit: only
// where a row or list is read from differs (gather.h, sampling.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dataset/graph.h"
#include "kernels/cuda/device_dataset.h"

namespace gnnd::cuda {

class HotTier {
 public:
  // Reads rows `ids` (distinct) into host memory at `out`, the i-th at out + i * row_bytes: the rows of
  // features on storage, whose `source` has none.
  using ReadRows = std::function<absl::Status(std::span<const int64_t> ids, void* out)>;

  // Copies the rows and labels (and, with `adjacency`, the in-neighbor lists) of the first `num_hot`
  // nodes of `order` (distinct ids below the node count, checked by the caller) from `source`
  // (device-visible, e.g. a DeviceDataset's graph; its rows through `read_rows` when it has no features)
  // into the memory of `devices`, rank r on devices[r % devices.size()]. Several devices must have peer
  // access to each other (EnablePeerAccess).
  static absl::StatusOr<std::unique_ptr<HotTier>> Create(const DeviceGraph& source, std::span<const int64_t> order,
                                                         int64_t num_hot, const std::vector<int>& devices,
                                                         bool adjacency, const ReadRows& read_rows = nullptr);
  ~HotTier();

  // What the kernels on `device` (one of the tier's devices) read.
  HotView view(int device) const;
  int64_t num_hot() const { return num_hot_; }
  // Per node, whether the tier holds its row (a host copy of the rank table's "is hot").
  std::shared_ptr<const std::vector<bool>> held() const { return held_; }
  const std::vector<int>& devices() const { return devices_; }
  // GPU memory the tier takes on each of its devices (the largest part).
  size_t bytes_per_device() const { return bytes_per_device_; }

 private:
  struct Part;  // what one device holds
  HotTier() = default;
  absl::Status Fill(const DeviceGraph& source, std::span<const int64_t> order, size_t index, bool adjacency,
                    const ReadRows& read_rows);
  // Part `index`'s rows `ids` (in entry order) through `read_rows`, staged in pinned memory a chunk at a time.
  absl::Status FillFromHost(std::span<const int64_t> ids, size_t index, size_t row_bytes, const ReadRows& read_rows);
  absl::Status FillAdjacency(const DeviceGraph& source, const int64_t* ids, int64_t count, size_t index);
  absl::Status ShareParts(size_t index);

  int64_t num_hot_ = 0;
  size_t bytes_per_device_ = 0;
  std::vector<int> devices_;
  std::vector<std::unique_ptr<Part>> parts_;
  std::shared_ptr<std::vector<bool>> held_;
};

// How many of the first nodes of `order` a tier of at most `bytes_per_device` on each of `devices` GPUs
// holds: each GPU keeps the per-node rank table (4 bytes a node), then each hot node costs its row and
// label (and with `adjacency` its in-neighbor list and indptr entry) on one of the GPUs.
int64_t HotNodesWithin(const GraphData& host, std::span<const int64_t> order, size_t bytes_per_device, size_t devices,
                       bool adjacency);
// Enables peer access between every pair of `devices`; false (and enables nothing more) when some pair
// has none.
bool EnablePeerAccess(const std::vector<int>& devices);

}  // namespace gnnd::cuda
