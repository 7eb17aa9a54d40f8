#include <cub/cub.cuh>

#include "common/cuda_check.h"
#include "common/sampling.h"
#include "common/status.h"
#include "kernels/cuda/cuda_sampler.h"
#include "kernels/cuda/host_registration.h"

namespace gnnd::cuda {
namespace {

constexpr int kThreads = 256;

// Sizes that live on the device, so no launch waits for the host.
struct HopState {
  int64_t num_nodes;       // nodes in the batch so far
  int64_t frontier_begin;  // local indices expanded by the current hop
  int64_t frontier_end;
  int64_t total_edges;  // edges of the hops before the current one
};

int Blocks(int64_t items, int per_block = kThreads) {
  return static_cast<int>(std::max<int64_t>(1, (items + per_block - 1) / per_block));
}

__device__ int64_t LowerBound(const uint64_t* sorted, int64_t n, uint64_t key) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (sorted[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

__global__ void InitKernel(HopState* state, const int64_t* seeds, int64_t num_seeds, int64_t* node_ids,
                           int32_t* num_nodes_per_hop, uint64_t* pair_ids, int32_t* pair_local, int64_t max_nodes,
                           uint64_t sentinel) {
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < max_nodes; i += gridDim.x * blockDim.x) {
    if (i < num_seeds) {
      node_ids[i] = seeds[i];
      pair_ids[i] = static_cast<uint64_t>(seeds[i]);
      pair_local[i] = static_cast<int32_t>(i);
    } else {
      pair_ids[i] = sentinel;
      pair_local[i] = -1;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *state = {num_seeds, 0, num_seeds, 0};
    num_nodes_per_hop[0] = static_cast<int32_t>(num_seeds);
  }
}

// counts[i] = how many in-neighbors frontier node i contributes; counts[bound] = 0 closes the scan.
__global__ void CountKernel(const HopState* state, const int64_t* node_ids, const int64_t* indptr, int32_t fanout,
                            int64_t* counts, int64_t bound) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i > bound) return;
  const int64_t v = state->frontier_begin + i;
  int64_t k = 0;
  if (i < bound && v < state->frontier_end) {
    const int64_t node = node_ids[v];
    k = SampleCount(indptr[node + 1] - indptr[node], fanout);
  }
  counts[i] = k;
}

// One warp per frontier node: lane 0 draws the positions (the shared rule), the warp reads the
// neighbors; a node that keeps all its in-neighbors is copied by the whole warp, coalesced.
template <typename Index>
__global__ void SampleKernel(const HopState* state, const int64_t* node_ids, const int64_t* indptr,
                             const Index* indices, int32_t fanout, SamplingKey key, uint64_t batch, uint32_t hop,
                             const int64_t* offsets, int64_t bound, int64_t* sampled, int32_t* edge_dst) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (i >= bound) return;
  const int64_t v = state->frontier_begin + i;
  if (v >= state->frontier_end) return;
  const int64_t node = node_ids[v];
  const int64_t first = indptr[node], degree = indptr[node + 1] - first;
  const int64_t offset = offsets[i], k = offsets[i + 1] - offset;
  int64_t* out = sampled + offset;
  if (k == degree) {
    for (int64_t p = lane; p < degree; p += 32) out[p] = indices[first + p];
  } else {
    if (lane == 0) ChoosePositions(key, batch, hop, static_cast<uint64_t>(node), degree, k, out);
    __syncwarp();
    for (int64_t p = lane; p < k; p += 32) out[p] = indices[first + out[p]];
  }
  int32_t* dst = edge_dst + state->total_edges + offset;
  for (int64_t p = lane; p < k; p += 32) dst[p] = static_cast<int32_t>(v);
}

// Copies this hop's sampled ids into the sort input, padding past the hop's edges with the sentinel.
__global__ void PadKernel(const int64_t* hop_edges, const int64_t* sampled, uint64_t* keys, int64_t bound,
                          uint64_t sentinel) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e < bound) keys[e] = e < *hop_edges ? static_cast<uint64_t>(sampled[e]) : sentinel;
}

__global__ void FlagNewKernel(const HopState* state, const uint64_t* unique, const int64_t* num_unique,
                              const uint64_t* sorted_ids, uint64_t sentinel, char* flags, int64_t bound) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= bound) return;
  bool fresh = false;
  if (i < *num_unique && unique[i] != sentinel) {
    const int64_t at = LowerBound(sorted_ids, state->num_nodes, unique[i]);
    fresh = at == state->num_nodes || sorted_ids[at] != unique[i];
  }
  flags[i] = fresh;
}

__global__ void AppendKernel(const HopState* state, const uint64_t* fresh, const int64_t* num_fresh, int64_t* node_ids,
                             uint64_t* pair_ids, int32_t* pair_local, int64_t bound) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= bound || i >= *num_fresh) return;
  const int64_t local = state->num_nodes + i;
  node_ids[local] = static_cast<int64_t>(fresh[i]);
  pair_ids[local] = fresh[i];
  pair_local[local] = static_cast<int32_t>(local);
}

__global__ void RelabelKernel(const HopState* state, const int64_t* hop_edges, const int64_t* sampled,
                              const uint64_t* sorted_ids, const int32_t* sorted_local, int64_t nodes_bound,
                              int32_t* edge_src, int64_t bound) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= bound || e >= *hop_edges) return;
  const int64_t at = LowerBound(sorted_ids, nodes_bound, static_cast<uint64_t>(sampled[e]));
  edge_src[state->total_edges + e] = sorted_local[at];
}

__global__ void AdvanceKernel(HopState* state, const int64_t* hop_edges, const int64_t* num_fresh,
                              int32_t* num_nodes_per_hop, int32_t* num_edges_per_hop, int hop) {
  num_edges_per_hop[hop] = static_cast<int32_t>(*hop_edges);
  num_nodes_per_hop[hop + 1] = static_cast<int32_t>(*num_fresh);
  state->frontier_begin = state->num_nodes;
  state->num_nodes += *num_fresh;
  state->frontier_end = state->num_nodes;
  state->total_edges += *hop_edges;
}

// One warp per row, `Vector`-wide loads (the widest that the row size allows).
template <typename Vector>
__global__ void GatherKernel(const HopState* state, const int64_t* node_ids, const char* features, size_t row_bytes,
                             char* out, int64_t bound) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (i >= bound || i >= state->num_nodes) return;
  const auto* src = reinterpret_cast<const Vector*>(features + node_ids[i] * row_bytes);
  auto* dst = reinterpret_cast<Vector*>(out + i * row_bytes);
  const size_t words = row_bytes / sizeof(Vector);
  for (size_t w = lane; w < words; w += 32) dst[w] = src[w];
}

// Rows whose size is not a multiple of 16 bytes start at arbitrary 4- or 2-byte boundaries. Reading them
// with narrow loads turns each row into many small PCIe reads; instead each warp reads the 16-byte-aligned
// span covering the row with 16-byte loads into shared memory, then writes the row out shifted into
// place. `Word` is the widest unit that divides the row size (4 or 2 bytes).
template <typename Word>
__global__ void GatherShiftedKernel(const HopState* state, const int64_t* node_ids, const char* features,
                                    size_t features_bytes, size_t row_bytes, char* out, int64_t bound) {
  extern __shared__ uint4 stage[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const size_t stage_words = (row_bytes + 31) / 16 + 1;  // 16-byte words per warp, with room for the shift
  uint4* mine = stage + warp * stage_words;
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  if (i >= bound || i >= state->num_nodes) return;
  const size_t start = static_cast<size_t>(node_ids[i]) * row_bytes;
  const size_t first = start & ~size_t{15}, end = start + row_bytes;
  const size_t head = start - first, chunks = (end - first + 15) / 16;
  for (size_t c = lane; c < chunks; c += 32) {
    const size_t at = first + 16 * c;
    if (at + 16 <= features_bytes) {
      mine[c] = *reinterpret_cast<const uint4*>(features + at);
    } else {  // the array's last bytes: never read past its end
      const Word* tail = reinterpret_cast<const Word*>(features + at);
      Word* dst = reinterpret_cast<Word*>(mine + c);
      for (size_t w = 0; at + (w + 1) * sizeof(Word) <= features_bytes && w < 16 / sizeof(Word); ++w) dst[w] = tail[w];
    }
  }
  __syncwarp();
  const Word* src = reinterpret_cast<const Word*>(reinterpret_cast<const char*>(mine) + head);
  Word* dst = reinterpret_cast<Word*>(out + i * row_bytes);
  for (size_t w = lane; w < row_bytes / sizeof(Word); w += 32) dst[w] = src[w];
}

__global__ void LabelsKernel(const int64_t* node_ids, const int64_t* labels, int64_t* out, int64_t num_seeds) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < num_seeds) out[i] = labels[node_ids[i]];
}

int EndBit(uint64_t sentinel) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) <= sentinel) ++bits;
  return bits;
}

}  // namespace

struct CudaSampler::Buffers {
  HopState* state = nullptr;
  int64_t *counts = nullptr, *offsets = nullptr, *sampled = nullptr, *num_unique = nullptr, *num_fresh = nullptr;
  uint64_t *keys = nullptr, *sorted_keys = nullptr, *unique = nullptr, *fresh = nullptr;
  uint64_t *pair_ids = nullptr, *sorted_ids = nullptr;
  int32_t *pair_local = nullptr, *sorted_local = nullptr;
  char* flags = nullptr;
  void* temp = nullptr;
  size_t temp_bytes = 0;
  std::vector<void*> owned;

  ~Buffers() {
    for (void* p : owned) cudaFree(p);
  }
  template <typename T>
  absl::Status Allocate(T** out, int64_t count) {
    void* p = nullptr;
    GNND_CUDA(cudaMalloc(&p, std::max<int64_t>(count, 1) * sizeof(T)), "allocate sampler buffers");
    owned.push_back(p);
    *out = static_cast<T*>(p);
    return absl::OkStatus();
  }
};

CudaSampler::~CudaSampler() = default;

absl::StatusOr<std::unique_ptr<CudaSampler>> CudaSampler::Create(const DeviceGraph& graph, std::vector<int32_t> fanouts,
                                                                 uint64_t seed, const BatchCapacity& capacity) {
  auto s = std::unique_ptr<CudaSampler>(new CudaSampler());
  s->graph_ = graph;
  s->fanouts_ = std::move(fanouts);
  s->seed_ = seed;
  s->layout_ = BatchLayout::Make(capacity, static_cast<int>(s->fanouts_.size()), FeatureRowBytes(graph.manifest));
  int64_t max_frontier = 1, max_edges = 1;
  for (const HopBound& h : capacity.hops) {
    max_frontier = std::max(max_frontier, h.frontier);
    max_edges = std::max(max_edges, h.edges);
  }
  const int64_t max_nodes = std::max<int64_t>(capacity.max_nodes, 1);
  s->buffers_ = std::make_unique<Buffers>();
  Buffers& b = *s->buffers_;
  GNND_RETURN_IF_ERROR(b.Allocate(&b.state, 1));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.counts, max_frontier + 1));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.offsets, max_frontier + 1));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.sampled, max_edges));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.keys, max_edges));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.sorted_keys, max_edges));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.unique, max_edges));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.fresh, max_edges));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.flags, max_edges));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.num_unique, 1));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.num_fresh, 1));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.pair_ids, max_nodes));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.sorted_ids, max_nodes));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.pair_local, max_nodes));
  GNND_RETURN_IF_ERROR(b.Allocate(&b.sorted_local, max_nodes));
  // One temporary buffer, as large as the largest CUB call needs.
  size_t bytes = 0, need = 0;
  GNND_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, need, b.counts, b.offsets, max_frontier + 1), "size scan");
  bytes = std::max(bytes, need);
  GNND_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, need, b.keys, b.sorted_keys, max_edges), "size sort");
  bytes = std::max(bytes, need);
  GNND_CUDA(cub::DeviceSelect::Unique(nullptr, need, b.sorted_keys, b.unique, b.num_unique, max_edges), "size unique");
  bytes = std::max(bytes, need);
  GNND_CUDA(cub::DeviceSelect::Flagged(nullptr, need, b.unique, b.flags, b.fresh, b.num_fresh, max_edges),
            "size select");
  bytes = std::max(bytes, need);
  GNND_CUDA(
      cub::DeviceRadixSort::SortPairs(nullptr, need, b.pair_ids, b.sorted_ids, b.pair_local, b.sorted_local, max_nodes),
      "size pair sort");
  bytes = std::max(bytes, need);
  GNND_RETURN_IF_ERROR(b.Allocate(reinterpret_cast<char**>(&b.temp), static_cast<int64_t>(bytes)));
  b.temp_bytes = bytes;
  return s;
}

absl::Status CudaSampler::Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> device_seeds,
                                 BatchView out, cudaStream_t stream) {
  Buffers& b = *buffers_;
  const BatchCapacity& capacity = layout_.capacity;
  const int64_t num_seeds = static_cast<int64_t>(device_seeds.size());
  if (num_seeds > capacity.max_seeds) return absl::InvalidArgumentError("more seeds than the batch capacity");
  const uint64_t sentinel = static_cast<uint64_t>(graph_.manifest.num_nodes());  // above every node id
  const int end_bit = EndBit(sentinel);
  const SamplingKey key = MakeSamplingKey(seed_, epoch, RandomPurpose::kNeighbors);
  const bool wide = graph_.manifest.index_dtype() == v1::INDEX_DTYPE_INT64;

  InitKernel<<<Blocks(capacity.max_nodes), kThreads, 0, stream>>>(b.state, device_seeds.data(), num_seeds, out.node_ids,
                                                                  out.num_nodes_per_hop, b.pair_ids, b.pair_local,
                                                                  capacity.max_nodes, sentinel);
  size_t temp = b.temp_bytes;
  GNND_CUDA(cub::DeviceRadixSort::SortPairs(b.temp, temp, b.pair_ids, b.sorted_ids, b.pair_local, b.sorted_local,
                                            capacity.max_seeds, 0, end_bit, stream),
            "sort seeds");
  for (size_t hop = 0; hop < fanouts_.size(); ++hop) {
    const HopBound& bound = capacity.hops[hop];
    const int64_t frontier = bound.frontier, edges = std::max<int64_t>(bound.edges, 1);
    const int64_t* hop_edges = b.offsets + frontier;  // the scan's last entry
    CountKernel<<<Blocks(frontier + 1), kThreads, 0, stream>>>(b.state, out.node_ids, graph_.indptr, fanouts_[hop],
                                                               b.counts, frontier);
    temp = b.temp_bytes;
    GNND_CUDA(cub::DeviceScan::ExclusiveSum(b.temp, temp, b.counts, b.offsets, frontier + 1, stream), "scan counts");
    const int blocks = Blocks(frontier * 32);
    if (wide) {
      SampleKernel<<<blocks, kThreads, 0, stream>>>(
          b.state, out.node_ids, graph_.indptr, static_cast<const int64_t*>(graph_.indices), fanouts_[hop], key,
          batch_index, static_cast<uint32_t>(hop + 1), b.offsets, frontier, b.sampled, out.edge_dst);
    } else {
      SampleKernel<<<blocks, kThreads, 0, stream>>>(
          b.state, out.node_ids, graph_.indptr, static_cast<const int32_t*>(graph_.indices), fanouts_[hop], key,
          batch_index, static_cast<uint32_t>(hop + 1), b.offsets, frontier, b.sampled, out.edge_dst);
    }
    PadKernel<<<Blocks(edges), kThreads, 0, stream>>>(hop_edges, b.sampled, b.keys, edges, sentinel);
    temp = b.temp_bytes;
    GNND_CUDA(cub::DeviceRadixSort::SortKeys(b.temp, temp, b.keys, b.sorted_keys, edges, 0, end_bit, stream),
              "sort sampled ids");
    temp = b.temp_bytes;
    GNND_CUDA(cub::DeviceSelect::Unique(b.temp, temp, b.sorted_keys, b.unique, b.num_unique, edges, stream),
              "unique sampled ids");
    FlagNewKernel<<<Blocks(edges), kThreads, 0, stream>>>(b.state, b.unique, b.num_unique, b.sorted_ids, sentinel,
                                                          b.flags, edges);
    temp = b.temp_bytes;
    GNND_CUDA(cub::DeviceSelect::Flagged(b.temp, temp, b.unique, b.flags, b.fresh, b.num_fresh, edges, stream),
              "select new nodes");
    AppendKernel<<<Blocks(edges), kThreads, 0, stream>>>(b.state, b.fresh, b.num_fresh, out.node_ids, b.pair_ids,
                                                         b.pair_local, edges);
    temp = b.temp_bytes;
    GNND_CUDA(cub::DeviceRadixSort::SortPairs(b.temp, temp, b.pair_ids, b.sorted_ids, b.pair_local, b.sorted_local,
                                              bound.nodes_after, 0, end_bit, stream),
              "sort batch nodes");
    RelabelKernel<<<Blocks(edges), kThreads, 0, stream>>>(b.state, hop_edges, b.sampled, b.sorted_ids, b.sorted_local,
                                                          bound.nodes_after, out.edge_src, edges);
    AdvanceKernel<<<1, 1, 0, stream>>>(b.state, hop_edges, b.num_fresh, out.num_nodes_per_hop, out.num_edges_per_hop,
                                       static_cast<int>(hop));
  }
  const size_t row = layout_.feature_row_bytes;
  const char* features = static_cast<const char*>(graph_.features);
  char* dst = static_cast<char*>(out.features);
  const int gather_blocks = Blocks(capacity.max_nodes * 32);
  const int64_t max_nodes = capacity.max_nodes;
  if (row % 16 == 0) {
    GatherKernel<uint4><<<gather_blocks, kThreads, 0, stream>>>(b.state, out.node_ids, features, row, dst, max_nodes);
  } else if (const size_t stage_bytes = (kThreads / 32) * ((row + 31) / 16 + 1) * 16;
             shifted_gather_ && stage_bytes <= 48 * 1024) {  // rows up to ~6 KB: the default shared memory
    const size_t features_bytes = row * static_cast<size_t>(graph_.manifest.num_nodes());
    if (row % 4 == 0) {
      GatherShiftedKernel<uint32_t><<<gather_blocks, kThreads, stage_bytes, stream>>>(
          b.state, out.node_ids, features, features_bytes, row, dst, max_nodes);
    } else {
      GatherShiftedKernel<uint16_t><<<gather_blocks, kThreads, stage_bytes, stream>>>(
          b.state, out.node_ids, features, features_bytes, row, dst, max_nodes);
    }
  } else if (row % 8 == 0) {
    GatherKernel<uint2><<<gather_blocks, kThreads, 0, stream>>>(b.state, out.node_ids, features, row, dst, max_nodes);
  } else if (row % 4 == 0) {
    GatherKernel<uint32_t>
        <<<gather_blocks, kThreads, 0, stream>>>(b.state, out.node_ids, features, row, dst, max_nodes);
  } else {
    GatherKernel<uint16_t>
        <<<gather_blocks, kThreads, 0, stream>>>(b.state, out.node_ids, features, row, dst, max_nodes);
  }
  LabelsKernel<<<Blocks(num_seeds), kThreads, 0, stream>>>(out.node_ids, graph_.labels, out.labels, num_seeds);
  GNND_CUDA(cudaGetLastError(), "launch sampling kernels");
  return absl::OkStatus();
}

DeviceDataset::~DeviceDataset() {
  if (device_indptr_ != nullptr) cudaFree(device_indptr_);
  if (device_indices_ != nullptr) cudaFree(device_indices_);
}

absl::StatusOr<std::unique_ptr<DeviceDataset>> DeviceDataset::Create(const GraphData& host, CscPlacement placement) {
  auto d = std::unique_ptr<DeviceDataset>(new DeviceDataset());
  d->graph_.manifest = host.manifest;
  const v1::DatasetManifest& m = host.manifest;
  auto place = [&](ArrayId id) -> absl::StatusOr<const void*> {
    GNND_ASSIGN_OR_RETURN(std::unique_ptr<HostRegistration> r,
                          HostRegistration::Register(host.arrays[id], ArrayBytes(m, id)));
    const void* device = r->device_pointer();
    d->registrations_.push_back(std::move(r));
    return device;
  };
  if (placement == CscPlacement::kDevice) {
    for (ArrayId id : {ArrayId::kIndptr, ArrayId::kIndices}) {
      void** target = id == ArrayId::kIndptr ? &d->device_indptr_ : &d->device_indices_;
      const size_t bytes = ArrayBytes(m, id);
      GNND_CUDA(cudaMalloc(target, std::max<size_t>(bytes, 1)),
                absl::StrCat("allocate ", ArrayName(id), " on the GPU"));
      GNND_CUDA(cudaMemcpy(*target, host.arrays[id], bytes, cudaMemcpyHostToDevice),
                absl::StrCat("copy ", ArrayName(id), " to the GPU"));
    }
    d->graph_.indptr = static_cast<const int64_t*>(d->device_indptr_);
    d->graph_.indices = d->device_indices_;
  } else {
    GNND_ASSIGN_OR_RETURN(const void* indptr, place(ArrayId::kIndptr));
    GNND_ASSIGN_OR_RETURN(d->graph_.indices, place(ArrayId::kIndices));
    d->graph_.indptr = static_cast<const int64_t*>(indptr);
  }
  GNND_ASSIGN_OR_RETURN(d->graph_.features, place(ArrayId::kFeatures));
  GNND_ASSIGN_OR_RETURN(const void* labels, place(ArrayId::kLabels));
  d->graph_.labels = static_cast<const int64_t*>(labels);
  return d;
}

bool HaveGpu() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return ok;
}

}  // namespace gnnd::cuda
