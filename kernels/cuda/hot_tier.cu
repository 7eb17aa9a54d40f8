#include <algorithm>
#include <cub/cub.cuh>

#include "absl/strings/str_cat.h"
#include "common/base/cuda_check.h"
#include "common/base/status.h"
#include "kernels/cuda/gather.h"
#include "kernels/cuda/hot_tier.h"
#include "kernels/cuda/launch.h"

namespace gnnd::cuda {
namespace {

// The ranking is uploaded and scattered in chunks, so building a large tier needs little scratch memory.
constexpr int64_t kChunk = int64_t{1} << 24;
// Every array a part reads with 16-byte words ends with this much padding (gather.cu).
constexpr size_t kPad = 16;

__global__ void RankKernel(const int64_t* ids, int64_t count, int64_t first_rank, int32_t* rank) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) rank[ids[i]] = static_cast<int32_t>(first_rank + i);
}

__global__ void LabelsKernel(const int64_t* ids, int64_t count, const int64_t* labels, int64_t* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = labels == nullptr ? -1 : labels[ids[i]];  // a type without labels (typed datasets)
}

// degrees[i] = in-degree of ids[i]; degrees[count] = 0 (the scan's total).
__global__ void DegreesKernel(const int64_t* ids, int64_t count, const int64_t* indptr, int64_t* degrees) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) degrees[i] = indptr[ids[i] + 1] - indptr[ids[i]];
  if (i == count) degrees[i] = 0;
}

// One warp per node: its in-neighbor list, from host memory into the part's copy.
template <typename Index>
__global__ void ListsKernel(const int64_t* ids, int64_t count, const int64_t* indptr, const Index* indices,
                            const int64_t* part_indptr, Index* part_indices) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
  if (i >= count) return;
  const Index* src = indices + indptr[ids[i]];
  Index* dst = part_indices + part_indptr[i];
  const int64_t degree = part_indptr[i + 1] - part_indptr[i];
  for (int64_t p = threadIdx.x % kWarp; p < degree; p += kWarp) dst[p] = src[p];
}

// Ranks of part `index` of `parts` among the first `num_hot`.
int64_t PartNodes(int64_t num_hot, size_t index, size_t parts) {
  const auto n = static_cast<int64_t>(parts), i = static_cast<int64_t>(index);
  return num_hot > i ? (num_hot - i + n - 1) / n : 0;
}

size_t IndexBytes(const v1::DatasetManifest& m) {
  return m.index_dtype() == v1::INDEX_DTYPE_INT64 ? sizeof(int64_t) : sizeof(int32_t);
}

}  // namespace

struct HotTier::Part {
  int device = 0;
  std::vector<void*> owned;  // every allocation below
  int32_t* rank = nullptr;   // per node, its rank or -1 (every device has all of it)
  char* rows = nullptr;
  int64_t* labels = nullptr;
  int64_t* adjacency_indptr = nullptr;  // with adjacency
  void* adjacency = nullptr;
  // Every device's rows, labels, adjacency_indptr and adjacency pointers, in that order.
  void** shared = nullptr;
  size_t bytes = 0;

  template <typename T>
  absl::Status Allocate(T** out, size_t count) {
    const size_t size = std::max<size_t>(count, 1) * sizeof(T) + kPad;
    GNND_CUDA(cudaMalloc(out, size), absl::StrCat("allocate the hot tier on cuda:", device));
    owned.push_back(*out);
    bytes += size;
    return absl::OkStatus();
  }
  ~Part() {
    cudaSetDevice(device);
    for (void* p : owned) cudaFree(p);
  }
};

int64_t HotNodesWithin(const GraphData& host, std::span<const int64_t> order, size_t bytes_per_device, size_t devices,
                       bool adjacency) {
  const v1::DatasetManifest& m = host.manifest;
  const size_t fixed = sizeof(int32_t) * static_cast<size_t>(m.num_nodes());  // (and a few bytes of padding)
  if (bytes_per_device <= fixed) return 0;
  const double room = static_cast<double>(bytes_per_device - fixed) * static_cast<double>(devices);
  const size_t row = FeatureRowBytes(m) + sizeof(int64_t);
  const auto* indptr = static_cast<const int64_t*>(host.arrays[ArrayId::kIndptr]);
  double used = 0;
  int64_t n = 0;
  for (; n < static_cast<int64_t>(std::min<size_t>(order.size(), INT32_MAX)); ++n) {
    const int64_t id = order[n];
    used += static_cast<double>(row);
    if (adjacency) used += sizeof(int64_t) + static_cast<double>((indptr[id + 1] - indptr[id]) * IndexBytes(m));
    if (used > room) break;
  }
  return n;
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
      (void)cudaGetLastError();  // clears cudaErrorPeerAccessAlreadyEnabled
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return false;
    }
  }
  return true;
}

HotTier::~HotTier() = default;

absl::StatusOr<std::unique_ptr<HotTier>> HotTier::Create(const DeviceGraph& source, std::span<const int64_t> order,
                                                         int64_t num_hot, const std::vector<int>& devices,
                                                         bool adjacency, const ReadRows& read_rows) {
  if (devices.empty()) return absl::InvalidArgumentError("a hot tier needs a GPU");
  if (num_hot < 0 || num_hot > static_cast<int64_t>(order.size()) || num_hot > INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("hot tier of ", num_hot, " nodes from a ranking of ", order.size()));
  }
  if (source.features == nullptr && !read_rows) {
    return absl::InvalidArgumentError("a hot tier of features on storage needs a way to read their rows");
  }
  auto tier = std::unique_ptr<HotTier>(new HotTier());
  tier->num_hot_ = num_hot;
  tier->devices_ = devices;
  for (size_t i = 0; i < devices.size(); ++i) {
    tier->parts_.push_back(std::make_unique<Part>());
    tier->parts_.back()->device = devices[i];
    GNND_RETURN_IF_ERROR(tier->Fill(source, order.first(num_hot), i, adjacency, read_rows));
  }
  tier->held_ = std::make_shared<std::vector<bool>>(source.manifest.num_nodes(), false);
  for (int64_t id : order.first(num_hot)) (*tier->held_)[id] = true;
  for (size_t i = 0; i < devices.size(); ++i) {
    GNND_RETURN_IF_ERROR(tier->ShareParts(i));
    tier->bytes_per_device_ = std::max(tier->bytes_per_device_, tier->parts_[i]->bytes);
  }
  return tier;
}

absl::Status HotTier::Fill(const DeviceGraph& source, std::span<const int64_t> order, size_t index, bool adjacency,
                           const ReadRows& read_rows) {
  Part& p = *parts_[index];
  const size_t n = devices_.size();
  const int64_t num_nodes = source.manifest.num_nodes();
  const std::string what = absl::StrCat("fill the hot tier on cuda:", p.device);
  GNND_CUDA(cudaSetDevice(p.device), what);
  const int64_t own = PartNodes(static_cast<int64_t>(order.size()), index, n);
  GNND_RETURN_IF_ERROR(p.Allocate(&p.rank, num_nodes));
  GNND_RETURN_IF_ERROR(p.Allocate(&p.rows, FeatureRowBytes(source.manifest) * own));
  GNND_RETURN_IF_ERROR(p.Allocate(&p.labels, own));
  GNND_RETURN_IF_ERROR(p.Allocate(&p.shared, 4 * n));
  GNND_CUDA(cudaMemset(p.rank, 0xff, sizeof(int32_t) * num_nodes), what);  // -1: not hot

  int64_t* ids = nullptr;  // the part's node ids while filling (all of them: the adjacency scan needs them)
  GNND_CUDA(cudaMalloc(&ids, sizeof(int64_t) * std::max<int64_t>({own, std::min<int64_t>(kChunk, order.size()), 1})),
            what);
  const std::unique_ptr<int64_t, cudaError_t (*)(void*)> scratch(ids, &cudaFree);
  // Every device's rank table covers the whole hot set.
  for (int64_t first = 0; first < static_cast<int64_t>(order.size()); first += kChunk) {
    const int64_t count = std::min<int64_t>(kChunk, order.size() - first);
    GNND_CUDA(cudaMemcpy(ids, order.data() + first, count * sizeof(int64_t), cudaMemcpyHostToDevice), what);
    GNND_LAUNCH(RankKernel, Blocks(count), kThreads, 0, nullptr, ids, count, first, p.rank);
  }
  // Its own nodes: ranks index, index + n, ... read zero-copy from host memory.
  std::vector<int64_t> mine(own);
  for (int64_t j = 0; j < own; ++j) mine[j] = order[j * n + index];
  GNND_CUDA(cudaMemcpy(ids, mine.data(), own * sizeof(int64_t), cudaMemcpyHostToDevice), what);
  if (source.features != nullptr) {
    const RowSource host{static_cast<const char*>(source.features), num_nodes, FeatureRowBytes(source.manifest)};
    GNND_RETURN_IF_ERROR(GatherRows(ids, nullptr, own, host, {}, p.rows, nullptr));
  } else {
    GNND_RETURN_IF_ERROR(FillFromHost(mine, index, FeatureRowBytes(source.manifest), read_rows));
  }
  GNND_LAUNCH(LabelsKernel, Blocks(own), kThreads, 0, nullptr, ids, own, source.labels, p.labels);
  if (adjacency) GNND_RETURN_IF_ERROR(FillAdjacency(source, ids, own, index));
  GNND_CUDA(cudaDeviceSynchronize(), what);
  return absl::OkStatus();
}

absl::Status HotTier::FillFromHost(std::span<const int64_t> ids, size_t index, size_t row_bytes,
                                   const ReadRows& read_rows) {
  Part& p = *parts_[index];
  const std::string what = absl::StrCat("fill the hot tier on cuda:", p.device, " from storage");
  const int64_t chunk =
      std::max<int64_t>(1, (int64_t{64} << 20) / static_cast<int64_t>(std::max<size_t>(row_bytes, 1)));
  void* staging = nullptr;
  GNND_CUDA(cudaMallocHost(&staging, row_bytes * std::min<int64_t>(chunk, std::max<size_t>(ids.size(), 1))), what);
  const std::unique_ptr<void, cudaError_t (*)(void*)> owned(staging, &cudaFreeHost);
  for (size_t first = 0; first < ids.size(); first += chunk) {
    const size_t count = std::min<size_t>(chunk, ids.size() - first);
    GNND_RETURN_IF_ERROR(read_rows(ids.subspan(first, count), staging));
    GNND_CUDA(cudaMemcpy(p.rows + first * row_bytes, staging, count * row_bytes, cudaMemcpyHostToDevice), what);
  }
  return absl::OkStatus();
}

absl::Status HotTier::FillAdjacency(const DeviceGraph& source, const int64_t* ids, int64_t count, size_t index) {
  Part& p = *parts_[index];
  const std::string what = absl::StrCat("copy hot adjacency to cuda:", p.device);
  int64_t* degrees = nullptr;
  GNND_RETURN_IF_ERROR(p.Allocate(&p.adjacency_indptr, count + 1));
  GNND_CUDA(cudaMalloc(&degrees, sizeof(int64_t) * (count + 1)), what);
  const std::unique_ptr<int64_t, cudaError_t (*)(void*)> owned_degrees(degrees, &cudaFree);
  GNND_LAUNCH(DegreesKernel, Blocks(count + 1), kThreads, 0, nullptr, ids, count, source.indptr, degrees);
  size_t temp_bytes = 0;
  GNND_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, degrees, p.adjacency_indptr, count + 1), what);
  void* temp = nullptr;
  GNND_CUDA(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 1)), what);
  const std::unique_ptr<void, cudaError_t (*)(void*)> owned_temp(temp, &cudaFree);
  GNND_CUDA(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, degrees, p.adjacency_indptr, count + 1), what);
  int64_t total = 0;
  GNND_CUDA(cudaMemcpy(&total, p.adjacency_indptr + count, sizeof(total), cudaMemcpyDeviceToHost), what);
  return DispatchIndex(source.manifest.index_dtype(), [&](auto index_type) -> absl::Status {
    using Index = decltype(index_type);
    Index* lists = nullptr;
    GNND_RETURN_IF_ERROR(p.Allocate(&lists, total));
    p.adjacency = lists;
    GNND_LAUNCH(ListsKernel<Index>, Blocks(count * kWarp), kThreads, 0, nullptr, ids, count, source.indptr,
                static_cast<const Index*>(source.indices), p.adjacency_indptr, lists);
    GNND_CUDA(cudaDeviceSynchronize(), what);  // before the scratch goes
    return absl::OkStatus();
  });
}

absl::Status HotTier::ShareParts(size_t index) {
  const size_t n = parts_.size();
  std::vector<void*> shared(4 * n);
  for (size_t i = 0; i < n; ++i) {
    shared[i] = parts_[i]->rows;
    shared[n + i] = parts_[i]->labels;
    shared[2 * n + i] = parts_[i]->adjacency_indptr;
    shared[3 * n + i] = parts_[i]->adjacency;
  }
  const Part& p = *parts_[index];
  GNND_CUDA(cudaSetDevice(p.device), "select the hot tier's GPU");
  GNND_CUDA(cudaMemcpy(p.shared, shared.data(), shared.size() * sizeof(void*), cudaMemcpyHostToDevice),
            "share the hot tier's parts");
  return absl::OkStatus();
}

HotView HotTier::view(int device) const {
  for (const auto& part : parts_) {
    if (part->device != device) continue;
    const auto n = static_cast<int32_t>(parts_.size());
    void* const* shared = part->shared;
    const bool adjacency = part->adjacency_indptr != nullptr;
    return {part->rank,
            reinterpret_cast<const char* const*>(shared),
            reinterpret_cast<const int64_t* const*>(shared + n),
            adjacency ? reinterpret_cast<const int64_t* const*>(shared + 2 * n) : nullptr,
            adjacency ? reinterpret_cast<const void* const*>(shared + 3 * n) : nullptr,
            n};
  }
  return {};
}

}  // namespace gnnd::cuda
