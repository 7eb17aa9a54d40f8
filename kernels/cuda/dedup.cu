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

template <typename Key>
__global__ void FlagNewKernel(const HopState* state, const Key* unique, const int64_t* num_unique,
                              const Key* sorted_ids, Key sentinel, char* flags, int64_t bound) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= bound) return;
  bool fresh = false;
  if (i < *num_unique && unique[i] != sentinel) {
    const int64_t at = LowerBound(sorted_ids, state->num_nodes, unique[i]);
    fresh = at == state->num_nodes || sorted_ids[at] != unique[i];
  }
  flags[i] = fresh;
}

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
  Key *keys, *sorted_keys, *unique, *fresh, *pair_ids, *table_ids[2];
  explicit KeyBuffers(const Workspace& w)
      : keys(reinterpret_cast<Key*>(w.keys)),
        sorted_keys(reinterpret_cast<Key*>(w.sorted_keys)),
        unique(reinterpret_cast<Key*>(w.unique)),
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
    GNND_RETURN_IF_ERROR(w.temp.Run("unique sampled ids", [&](void* d, size_t& n) {
      return cub::DeviceSelect::Unique(d, n, b.sorted_keys, b.unique, w.num_unique, edges, stream);
    }));
    GNND_LAUNCH(FlagNewKernel<Key>, Blocks(edges), kThreads, 0, stream, w.state, b.unique, w.num_unique,
                b.table_ids[w.current], sentinel, w.flags, edges);
    GNND_RETURN_IF_ERROR(w.temp.Run("select new nodes", [&](void* d, size_t& n) {
      return cub::DeviceSelect::Flagged(d, n, b.unique, w.flags, b.fresh, w.num_fresh, edges, stream);
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
