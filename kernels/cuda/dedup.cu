#include <cub/cub.cuh>

#include "kernels/cuda/dedup.h"
#include "kernels/cuda/node_table.cuh"

namespace gnnd::cuda {
namespace {

// Grid-stride loops on a grid sized by StrideBlocks: a grid of idle blocks costs microseconds per launch.
__device__ int64_t FirstIndex() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ int64_t Stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

template <typename Key>
__global__ void FillKernel(Key* keys, int64_t count, Key value) {
  for (int64_t i = FirstIndex(); i < count; i += Stride()) keys[i] = value;
}

}  // namespace

absl::Status ReserveDedup(Workspace& w, int64_t max_edges) {
  // For either id width (DispatchKey): the buffers hold 64-bit ids or 32-bit ones.
  auto reserve = [&](auto key) -> absl::Status {
    using Key = decltype(key);
    return w.temp.Reserve("size sort", [&](void* d, size_t& n) {
      return cub::DeviceRadixSort::SortKeys(d, n, reinterpret_cast<Key*>(w.keys), reinterpret_cast<Key*>(w.sorted_keys),
                                            max_edges);
    });
  };
  GNND_RETURN_IF_ERROR(reserve(uint32_t{}));
  return reserve(uint64_t{});
}

IdRange IdRange::ForNodes(int64_t num_nodes) {
  IdRange r;
  r.sentinel = static_cast<uint64_t>(num_nodes);  // above every node id
  while (r.end_bit < 64 && (uint64_t{1} << r.end_bit) <= r.sentinel) ++r.end_bit;
  r.narrow = r.sentinel <= UINT32_MAX;  // so ids stay below all ones, the node table's empty key
  return r;
}

absl::Status ResetDedup(Workspace& w, const IdRange& ids, cudaStream_t stream) {
  // All ones: every key empty, every local index kNoLocal.
  GNND_CUDA(cudaMemsetAsync(w.table_slots, 0xff, (w.table_mask + 1) * w.table_slot_bytes, stream),
            "empty the node table");
  GNND_CUDA(cudaMemsetAsync(w.blocks_done, 0, sizeof(uint32_t), stream), "reset the relabel's block count");
  return DispatchKey(ids, [&](auto key) -> absl::Status {
    using Key = decltype(key);
    GNND_LAUNCH(FillKernel<Key>, StrideBlocks(w.max_edges), kThreads, 0, stream, reinterpret_cast<Key*>(w.keys),
                w.max_edges, static_cast<Key>(ids.sentinel));
    return absl::OkStatus();
  });
}

}  // namespace gnnd::cuda
