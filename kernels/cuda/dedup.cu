#include <thrust/iterator/counting_iterator.h>

#include <cub/cub.cuh>
#include <cub/device/device_merge.cuh>

#include "kernels/cuda/dedup.h"

namespace gnnd::cuda {
namespace {

template <typename Key>
__device__ int64_t LowerBound(const Key* sorted, int64_t n, Key key) {
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

template <typename Key>
__global__ void InitKernel(const BatchArgs* args, HopState* state, int64_t* node_ids, int32_t* num_nodes_per_hop,
                           Key* pair_ids, int32_t* pair_local, int64_t max_seeds, Key sentinel) {
  const int64_t* seeds = args->seeds;
  const int64_t num_seeds = args->num_seeds;
  for (int64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < max_seeds; i += gridDim.x * blockDim.x) {
    if (i < num_seeds) {
      node_ids[i] = seeds[i];
      pair_ids[i] = static_cast<Key>(seeds[i]);
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

// Copies this hop's sampled ids into the sort input, padding past the hop's edges with the sentinel.
template <typename Key>
__global__ void PadKernel(const int64_t* hop_edges, const int64_t* sampled, Key* keys, int64_t bound, Key sentinel) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e < bound) keys[e] = e < *hop_edges ? static_cast<Key>(sampled[e]) : sentinel;
}

// Whether position i of the hop's sorted ids holds a node new to the batch: the first of its run of equal
// ids, not padding, and not in the node table (sorted, its first state->num_nodes entries real). CUB's
// select calls it with each position (a counting iterator as the "flags"), so deduplicating, looking up
// and compacting take one pass.
template <typename Key>
struct IsNewNode {
  const Key* sorted;
  const Key* table;
  const HopState* state;
  Key sentinel;
  __device__ bool operator()(int64_t i) const {
    const Key id = sorted[i];
    if (id == sentinel || (i > 0 && sorted[i - 1] == id)) return false;
    const int64_t n = state->num_nodes;
    const int64_t at = LowerBound(table, n, id);
    return at == n || table[at] != id;
  }
};

// Appends the hop's new nodes (sorted) to the batch and gives each its local index; pads the rest of
// `fresh` up to `bound` with the sentinel, so it merges into the table as a whole.
template <typename Key>
__global__ void AppendKernel(const HopState* state, Key* fresh, const int64_t* num_fresh, int64_t* node_ids,
                             int32_t* fresh_local, int64_t bound, Key sentinel) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= bound) return;
  if (i < *num_fresh) {
    const int64_t local = state->num_nodes + i;
    node_ids[local] = static_cast<int64_t>(fresh[i]);
    fresh_local[i] = static_cast<int32_t>(local);
  } else {
    fresh[i] = sentinel;
    fresh_local[i] = -1;
  }
}

template <typename Key>
__global__ void RelabelKernel(const HopState* state, const int64_t* hop_edges, const int64_t* sampled,
                              const Key* sorted_ids, const int32_t* sorted_local, int64_t nodes_bound,
                              int32_t* edge_src, int64_t bound) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= bound || e >= *hop_edges) return;
  const int64_t at = LowerBound(sorted_ids, nodes_bound, static_cast<Key>(sampled[e]));
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

// The workspace's id buffers as `Key`s (allocated for 64-bit ids; node ids below 2^32 use half of each).
template <typename Key>
struct KeyBuffers {
  Key *keys, *sorted_keys, *fresh, *pair_ids, *table_ids[2];
  explicit KeyBuffers(const Workspace& w)
      : keys(reinterpret_cast<Key*>(w.keys)),
        sorted_keys(reinterpret_cast<Key*>(w.sorted_keys)),
        fresh(reinterpret_cast<Key*>(w.fresh)),
        pair_ids(reinterpret_cast<Key*>(w.pair_ids)),
        table_ids{reinterpret_cast<Key*>(w.table_ids[0]), reinterpret_cast<Key*>(w.table_ids[1])} {}
};

// Merges the hop's new nodes (fresh: `count` entries, sorted, sentinel-padded) into the relabel table.
template <typename Key>
absl::Status MergeIntoTable(Workspace& w, const KeyBuffers<Key>& b, int64_t count, cudaStream_t stream) {
  const int from = w.current, to = 1 - w.current;
  GNND_RETURN_IF_ERROR(w.temp.Run("merge new nodes", [&](void* d, size_t& n) {
    return cub::DeviceMerge::MergePairs(d, n, b.table_ids[from], w.table_local[from], w.table_count, b.fresh,
                                        w.fresh_local, count, b.table_ids[to], w.table_local[to],
                                        ::cuda::std::less<Key>{}, stream);
  }));
  w.current = to;
  w.table_count += count;
  return absl::OkStatus();
}

}  // namespace

absl::Status ReserveDedup(Workspace& w, const BatchCapacity& capacity, int64_t max_edges, int64_t max_table) {
  // For either id width (DispatchKey): the buffers hold 64-bit ids or 32-bit ones.
  auto reserve = [&](auto key) -> absl::Status {
    using Key = decltype(key);
    const KeyBuffers<Key> b(w);
    CubTemp& t = w.temp;
    GNND_RETURN_IF_ERROR(t.Reserve("size sort", [&](void* d, size_t& n) {
      return cub::DeviceRadixSort::SortKeys(d, n, b.keys, b.sorted_keys, max_edges);
    }));
    GNND_RETURN_IF_ERROR(t.Reserve("size select", [&](void* d, size_t& n) {
      return cub::DeviceSelect::FlaggedIf(d, n, b.sorted_keys, thrust::counting_iterator<int64_t>(0), b.fresh,
                                          w.num_fresh, max_edges, IsNewNode<Key>{}, nullptr);
    }));
    GNND_RETURN_IF_ERROR(t.Reserve("size seed sort", [&](void* d, size_t& n) {
      return cub::DeviceRadixSort::SortPairs(d, n, b.pair_ids, b.table_ids[0], w.pair_local, w.table_local[0],
                                             std::max<int64_t>(capacity.max_seeds, 1));
    }));
    return t.Reserve("size merge", [&](void* d, size_t& n) {
      return cub::DeviceMerge::MergePairs(d, n, b.table_ids[0], w.table_local[0], max_table, b.fresh, w.fresh_local,
                                          max_edges, b.table_ids[1], w.table_local[1], ::cuda::std::less<Key>{});
    });
  };
  GNND_RETURN_IF_ERROR(reserve(uint32_t{}));
  return reserve(uint64_t{});
}

IdRange IdRange::ForNodes(int64_t num_nodes) {
  IdRange r;
  r.sentinel = static_cast<uint64_t>(num_nodes);  // above every node id
  while (r.end_bit < 64 && (uint64_t{1} << r.end_bit) <= r.sentinel) ++r.end_bit;
  r.narrow = r.sentinel <= UINT32_MAX;
  return r;
}

absl::Status StartBatch(Workspace& w, const BatchCapacity& capacity, const IdRange& ids, BatchView out,
                        cudaStream_t stream) {
  return DispatchKey(ids, [&](auto key) -> absl::Status {
    using Key = decltype(key);
    const KeyBuffers<Key> b(w);
    GNND_LAUNCH(InitKernel<Key>, Blocks(capacity.max_seeds), kThreads, 0, stream, w.args, w.state, out.node_ids,
                out.num_nodes_per_hop, b.pair_ids, w.pair_local, capacity.max_seeds, static_cast<Key>(ids.sentinel));
    w.current = 0;
    w.table_count = capacity.max_seeds;
    return w.temp.Run("sort seeds", [&](void* d, size_t& n) {
      return cub::DeviceRadixSort::SortPairs(d, n, b.pair_ids, b.table_ids[0], w.pair_local, w.table_local[0],
                                             capacity.max_seeds, 0, ids.end_bit, stream);
    });
  });
}

absl::Status AddHopNodes(Workspace& w, const HopBound& bound, int hop, const IdRange& ids, BatchView out,
                         cudaStream_t stream) {
  return DispatchKey(ids, [&](auto key) -> absl::Status {
    using Key = decltype(key);
    const KeyBuffers<Key> b(w);
    const Key sentinel = static_cast<Key>(ids.sentinel);
    const int64_t edges = std::max<int64_t>(bound.edges, 1);
    const int64_t* hop_edges = w.offsets + bound.frontier;  // the sampling scan's last entry
    GNND_LAUNCH(PadKernel<Key>, Blocks(edges), kThreads, 0, stream, hop_edges, w.sampled, b.keys, edges, sentinel);
    GNND_RETURN_IF_ERROR(w.temp.Run("sort sampled ids", [&](void* d, size_t& n) {
      return cub::DeviceRadixSort::SortKeys(d, n, b.keys, b.sorted_keys, edges, 0, ids.end_bit, stream);
    }));
    const IsNewNode<Key> is_new{b.sorted_keys, b.table_ids[w.current], w.state, sentinel};
    GNND_RETURN_IF_ERROR(w.temp.Run("select new nodes", [&](void* d, size_t& n) {
      return cub::DeviceSelect::FlaggedIf(d, n, b.sorted_keys, thrust::counting_iterator<int64_t>(0), b.fresh,
                                          w.num_fresh, edges, is_new, stream);
    }));
    GNND_LAUNCH(AppendKernel<Key>, Blocks(edges), kThreads, 0, stream, w.state, b.fresh, w.num_fresh, out.node_ids,
                w.fresh_local, edges, sentinel);
    GNND_RETURN_IF_ERROR(MergeIntoTable(w, b, edges, stream));
    GNND_LAUNCH(RelabelKernel<Key>, Blocks(edges), kThreads, 0, stream, w.state, hop_edges, w.sampled,
                b.table_ids[w.current], w.table_local[w.current], w.table_count, out.edge_src, edges);
    GNND_LAUNCH(AdvanceKernel, 1, 1, 0, stream, w.state, hop_edges, w.num_fresh, out.num_nodes_per_hop,
                out.num_edges_per_hop, hop);
    return absl::OkStatus();
  });
}

}  // namespace gnnd::cuda
