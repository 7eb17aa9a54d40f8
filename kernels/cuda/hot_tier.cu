#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/cuda_check.h"
#include "common/status.h"
#include "kernels/cuda/gather.h"
#include "kernels/cuda/hot_tier.h"
#include "kernels/cuda/launch.h"

namespace gnnd::cuda {
namespace {

// Ids are uploaded and scattered in chunks, so building a large tier needs little scratch memory.
constexpr int64_t kChunk = int64_t{1} << 24;

__global__ void RankKernel(const int64_t* ids, int64_t count, int64_t first_rank, int32_t* rank) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) rank[ids[i]] = static_cast<int32_t>(first_rank + i);
}

__global__ void LabelsKernel(const int64_t* ids, int64_t count, const int64_t* labels, int64_t* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = labels[ids[i]];
}

template <typename T>
absl::Status Allocate(T** out, size_t count, int device) {
  GNND_CUDA(cudaMalloc(out, std::max<size_t>(count, 1) * sizeof(T)),
            absl::StrCat("allocate the hot tier on cuda:", device));
  return absl::OkStatus();
}

// Ranks of part `index` of `parts` among the first `num_hot`.
int64_t PartRows(int64_t num_hot, size_t index, size_t parts) {
  const auto n = static_cast<int64_t>(parts), i = static_cast<int64_t>(index);
  return num_hot > i ? (num_hot - i + n - 1) / n : 0;
}

}  // namespace

size_t HotTierBytes(const v1::DatasetManifest& manifest, int64_t rows_per_device) {
  if (rows_per_device <= 0) return 0;
  const size_t per_row = FeatureRowBytes(manifest) + sizeof(int64_t);
  return sizeof(int32_t) * static_cast<size_t>(manifest.num_nodes()) + per_row * rows_per_device + 16;
}

int64_t HotRowsFor(const v1::DatasetManifest& manifest, size_t bytes) {
  const size_t fixed = sizeof(int32_t) * static_cast<size_t>(manifest.num_nodes()) + 16;
  if (bytes <= fixed) return 0;
  const size_t per_row = FeatureRowBytes(manifest) + sizeof(int64_t);
  return static_cast<int64_t>(std::min<size_t>((bytes - fixed) / per_row, INT32_MAX));
}

bool EnablePeerAccess(const std::vector<int>& devices) {
  for (int a : devices) {
    for (int b : devices) {
      int can = 0;
      if (a != b && (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || can == 0)) {
        (void)cudaGetLastError();
        return false;
      }
    }
  }
  for (int a : devices) {
    if (cudaSetDevice(a) != cudaSuccess) return false;
    for (int b : devices) {
      if (a == b) continue;
      const cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();
        return false;
      }
      (void)cudaGetLastError();  // clears cudaErrorPeerAccessAlreadyEnabled
    }
  }
  return true;
}

HotTier::~HotTier() {
  for (size_t i = 0; i < parts_.size(); ++i) {
    cudaSetDevice(devices_[i]);
    const Part& p = parts_[i];
    for (void* ptr : {static_cast<void*>(p.rank), static_cast<void*>(p.rows), static_cast<void*>(p.labels),
                      static_cast<void*>(p.row_parts), static_cast<void*>(p.label_parts)}) {
      if (ptr != nullptr) cudaFree(ptr);
    }
  }
}

absl::StatusOr<std::unique_ptr<HotTier>> HotTier::Create(const DeviceGraph& source, std::span<const int64_t> order,
                                                         int64_t num_hot, const std::vector<int>& devices) {
  if (devices.empty()) return absl::InvalidArgumentError("a hot tier needs a GPU");
  if (num_hot < 0 || num_hot > static_cast<int64_t>(order.size()) || num_hot > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("hot tier of ", num_hot, " rows from a ranking of ", order.size()));
  }
  auto tier = std::unique_ptr<HotTier>(new HotTier());
  tier->num_hot_ = num_hot;
  tier->devices_ = devices;
  tier->parts_.resize(devices.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    GNND_CUDA(cudaSetDevice(devices[i]), absl::StrCat("select cuda:", devices[i]));
    Part& p = tier->parts_[i];
    const int64_t rows = PartRows(num_hot, i, devices.size());
    GNND_RETURN_IF_ERROR(Allocate(&p.rank, source.manifest.num_nodes(), devices[i]));
    // 16 bytes of padding: the gather reads rows in aligned 16-byte words (gather.cu).
    GNND_RETURN_IF_ERROR(Allocate(&p.rows, FeatureRowBytes(source.manifest) * rows + 16, devices[i]));
    GNND_RETURN_IF_ERROR(Allocate(&p.labels, rows, devices[i]));
    GNND_RETURN_IF_ERROR(Allocate(&p.row_parts, devices.size(), devices[i]));
    GNND_RETURN_IF_ERROR(Allocate(&p.label_parts, devices.size(), devices[i]));
    tier->bytes_per_device_ = std::max(tier->bytes_per_device_, HotTierBytes(source.manifest, rows));
  }
  for (size_t i = 0; i < devices.size(); ++i) GNND_RETURN_IF_ERROR(tier->Fill(source, order.first(num_hot), i));
  return tier;
}

absl::Status HotTier::Fill(const DeviceGraph& source, std::span<const int64_t> order, size_t index) {
  const int device = devices_[index];
  const Part& p = parts_[index];
  const size_t n = devices_.size();
  const int64_t num_nodes = source.manifest.num_nodes();
  const std::string what = absl::StrCat("fill the hot tier on cuda:", device);
  GNND_CUDA(cudaSetDevice(device), what);
  std::vector<const char*> rows(n);
  std::vector<const int64_t*> labels(n);
  for (size_t i = 0; i < n; ++i) rows[i] = parts_[i].rows, labels[i] = parts_[i].labels;
  GNND_CUDA(cudaMemcpy(p.row_parts, rows.data(), n * sizeof(rows[0]), cudaMemcpyHostToDevice), what);
  GNND_CUDA(cudaMemcpy(p.label_parts, labels.data(), n * sizeof(labels[0]), cudaMemcpyHostToDevice), what);
  GNND_CUDA(cudaMemset(p.rank, 0xff, sizeof(int32_t) * num_nodes), what);  // -1: not hot

  int64_t* scratch = nullptr;
  GNND_RETURN_IF_ERROR(Allocate(&scratch, std::min<int64_t>(kChunk, std::max<int64_t>(order.size(), 1)), device));
  const std::unique_ptr<int64_t, cudaError_t (*)(void*)> ids(scratch, &cudaFree);
  // Every device's rank table covers the whole hot set.
  for (int64_t first = 0; first < static_cast<int64_t>(order.size()); first += kChunk) {
    const int64_t count = std::min<int64_t>(kChunk, order.size() - first);
    GNND_CUDA(cudaMemcpy(ids.get(), order.data() + first, count * sizeof(int64_t), cudaMemcpyHostToDevice), what);
    GNND_LAUNCH(RankKernel, Blocks(count), kThreads, 0, nullptr, ids.get(), count, first, p.rank);
  }
  // Its own rows and labels: ranks index, index + n, ... read zero-copy from host memory.
  const RowSource host{static_cast<const char*>(source.features), num_nodes, FeatureRowBytes(source.manifest)};
  const int64_t own = PartRows(static_cast<int64_t>(order.size()), index, n);
  std::vector<int64_t> mine;
  for (int64_t first = 0; first < own; first += kChunk) {
    const int64_t count = std::min<int64_t>(kChunk, own - first);
    mine.resize(count);
    for (int64_t j = 0; j < count; ++j) mine[j] = order[(first + j) * n + index];
    GNND_CUDA(cudaMemcpy(ids.get(), mine.data(), count * sizeof(int64_t), cudaMemcpyHostToDevice), what);
    GNND_RETURN_IF_ERROR(GatherRows(ids.get(), nullptr, count, host, {}, p.rows + first * host.row_bytes, nullptr));
    GNND_LAUNCH(LabelsKernel, Blocks(count), kThreads, 0, nullptr, ids.get(), count, source.labels, p.labels + first);
  }
  GNND_CUDA(cudaDeviceSynchronize(), what);
  return absl::OkStatus();
}

HotView HotTier::view(int device) const {
  for (size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i] != device) continue;
    const Part& p = parts_[i];
    return {p.rank, p.row_parts, p.label_parts, static_cast<int32_t>(devices_.size())};
  }
  return {};
}

}  // namespace gnnd::cuda
