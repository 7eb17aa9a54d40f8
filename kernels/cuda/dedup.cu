#include <cub/cub.cuh>

#include "kernels/cuda/dedup.h"
#include "kernels/cuda/node_table.cuh"

namespace gnnd::cuda {
namespace {

// The seeds become the batch's first nodes, in their order; a seed given twice maps to its first local
// index (as on the CPU backend).
template <typename Key>
__global__ void InitKernel(const BatchArgs* args, HopState* state, int64_t* node_ids, int32_t* num_nodes_per_hop,
                           NodeTable<Key> table, uint32_t* node_slots, int64_t max_seeds) {
  const int64_t* seeds = args->seeds;
  const int64_t num_seeds = args->num_seeds;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < max_seeds && i < num_seeds; i += gridDim.x * blockDim.x) {
    node_ids[i] = seeds[i];
    bool added = false;
    const uint64_t s = table.Insert(static_cast<Key>(seeds[i]), &added);
    atomicMin(table.locals + s, static_cast<uint32_t>(i));
    node_slots[i] = static_cast<uint32_t>(s);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    *state = {num_seeds, 0, num_seeds, 0};
    num_nodes_per_hop[0] = static_cast<int32_t>(num_seeds);
  }
}

// The kernels below loop over the device-side count (grid-stride) on a grid sized by StrideBlocks: the
// host-side bounds are several times the counts, and a grid of idle blocks costs microseconds per launch.
__device__ int64_t FirstIndex() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ int64_t Stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Position i of the sorted keys: a new node (before the sentinels) gets local index num_nodes + i; the
// first sentinel's position is the count of new nodes. Also puts the sentinel back into `keys`.
template <typename Key>
__global__ void AssignKernel(const HopState* state, const int64_t* hop_edges, const Key* sorted, Key* keys,
                             NodeTable<Key> table, int64_t* node_ids, uint32_t* node_slots, int64_t* num_fresh,
                             Key sentinel) {
  const int64_t edges = *hop_edges;
  for (int64_t i = FirstIndex(); i <= edges; i += Stride()) {
    const bool is_new = i < edges && sorted[i] != sentinel;
    if (!is_new && (i == 0 || sorted[i - 1] != sentinel)) *num_fresh = i;
    if (i == edges) continue;
    keys[i] = sentinel;
    if (!is_new) continue;
    const int64_t local = state->num_nodes + i;
    const uint64_t s = table.Find(sorted[i]);
    table.locals[s] = static_cast<uint32_t>(local);
    node_ids[local] = static_cast<int64_t>(sorted[i]);
    node_slots[local] = static_cast<uint32_t>(s);
  }
}

// Relabels the hop's edge sources through the table. The last block to finish then records the hop's
// counts and moves the frontier to its new nodes (no launch of its own): every block has read the state
// by then.
template <typename Key>
__global__ void RelabelKernel(HopState* state, const int64_t* hop_edges, const int64_t* sampled, NodeTable<Key> table,
                              int32_t* edge_src, const int64_t* num_fresh, int32_t* num_nodes_per_hop,
                              int32_t* num_edges_per_hop, int hop, uint32_t* blocks_done) {
  const int64_t edges = *hop_edges;
  int32_t* out = edge_src + state->total_edges;
  for (int64_t e = FirstIndex(); e < edges; e += Stride()) {
    out[e] = static_cast<int32_t>(table.locals[table.Find(static_cast<Key>(sampled[e]))]);
  }
  if (!LastBlockDone(blocks_done) || threadIdx.x != 0) return;
  num_edges_per_hop[hop] = static_cast<int32_t>(edges);
  num_nodes_per_hop[hop + 1] = static_cast<int32_t>(*num_fresh);
  state->frontier_begin = state->num_nodes;
  state->num_nodes += *num_fresh;
  state->frontier_end = state->num_nodes;
  state->total_edges += edges;
}

// Empties the slots of the batch's nodes, so the next batch starts with an empty table.
template <typename Key>
__global__ void ClearKernel(const HopState* state, const uint32_t* node_slots, NodeTable<Key> table) {
  const int64_t nodes = state->num_nodes;
  for (int64_t local = FirstIndex(); local < nodes; local += Stride()) {
    const uint32_t s = node_slots[local];
    table.keys[s] = NodeTable<Key>::kEmpty;
    table.locals[s] = kNoLocal;
  }
}

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
  GNND_CUDA(cudaMemsetAsync(w.table_keys, 0xff, (w.table_mask + 1) * sizeof(uint64_t), stream), "empty the node table");
  GNND_CUDA(cudaMemsetAsync(w.table_locals, 0xff, (w.table_mask + 1) * sizeof(uint32_t), stream),
            "empty the node table");
  GNND_CUDA(cudaMemsetAsync(w.blocks_done, 0, sizeof(uint32_t), stream), "reset the relabel's block count");
  return DispatchKey(ids, [&](auto key) -> absl::Status {
    using Key = decltype(key);
    GNND_LAUNCH(FillKernel<Key>, StrideBlocks(w.max_edges), kThreads, 0, stream, reinterpret_cast<Key*>(w.keys),
                w.max_edges, static_cast<Key>(ids.sentinel));
    return absl::OkStatus();
  });
}

absl::Status StartBatch(Workspace& w, const BatchCapacity& capacity, const IdRange& ids, BatchView out,
                        cudaStream_t stream) {
  return DispatchKey(ids, [&](auto key) -> absl::Status {
    using Key = decltype(key);
    GNND_LAUNCH(InitKernel<Key>, Blocks(capacity.max_seeds), kThreads, 0, stream, w.args, w.state, out.node_ids,
                out.num_nodes_per_hop, TableOf<Key>(w), w.node_slots, capacity.max_seeds);
    return absl::OkStatus();
  });
}

absl::Status AddHopNodes(Workspace& w, const HopBound& bound, int hop, const IdRange& ids, BatchView out,
                         cudaStream_t stream) {
  return DispatchKey(ids, [&](auto key) -> absl::Status {
    using Key = decltype(key);
    const NodeTable<Key> table = TableOf<Key>(w);
    Key* keys = reinterpret_cast<Key*>(w.keys);
    Key* sorted = reinterpret_cast<Key*>(w.sorted_keys);
    const Key sentinel = static_cast<Key>(ids.sentinel);
    const int64_t edges = std::max<int64_t>(bound.edges, 1);
    const int64_t* hop_edges = w.offsets + bound.frontier;  // the sampling scan's last entry
    GNND_RETURN_IF_ERROR(w.temp.Run("sort new nodes", [&](void* d, size_t& n) {
      return cub::DeviceRadixSort::SortKeys(d, n, keys, sorted, edges, 0, ids.end_bit, stream);
    }));
    GNND_LAUNCH(AssignKernel<Key>, StrideBlocks(edges + 1), kThreads, 0, stream, w.state, hop_edges, sorted, keys,
                table, out.node_ids, w.node_slots, w.num_fresh, sentinel);
    GNND_LAUNCH(RelabelKernel<Key>, StrideBlocks(edges), kThreads, 0, stream, w.state, hop_edges, w.sampled, table,
                out.edge_src, w.num_fresh, out.num_nodes_per_hop, out.num_edges_per_hop, hop, w.blocks_done);
    return absl::OkStatus();
  });
}

absl::Status EndBatch(Workspace& w, const BatchCapacity& capacity, const IdRange& ids, cudaStream_t stream) {
  return DispatchKey(ids, [&](auto key) -> absl::Status {
    using Key = decltype(key);
    GNND_LAUNCH(ClearKernel<Key>, StrideBlocks(capacity.max_nodes), kThreads, 0, stream, w.state, w.node_slots,
                TableOf<Key>(w));
    return absl::OkStatus();
  });
}

}  // namespace gnnd::cuda
