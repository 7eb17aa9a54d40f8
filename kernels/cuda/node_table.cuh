// The batch's node table on the device (dedup.h): written by the sampling kernel, which inserts each
// sampled id, and by the dedup phase, which assigns local indices and relabels through it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

inline constexpr uint32_t kNoLocal = UINT32_MAX;  // a slot's local index before one is assigned

__device__ inline uint32_t CompareAndSwap(uint32_t* at, uint32_t expected, uint32_t desired) {
  return atomicCAS(at, expected, desired);
}
__device__ inline uint64_t CompareAndSwap(uint64_t* at, uint64_t expected, uint64_t desired) {
  return atomicCAS(reinterpret_cast<unsigned long long*>(at), expected, desired);
}

// A slot of the node table: an id and its local index side by side, so that a lookup, the local index it reads or
// writes and the clear at the batch's end touch one memory sector (aligned to its size: never two).
template <typename Key>
struct alignas(2 * sizeof(Key)) TableSlot {
  Key key;
  uint32_t local;
};

// The batch's node table on the device: open addressing, linear probing, keys `Key` (all ones: empty).
template <typename Key>
struct NodeTable {
  static constexpr Key kEmpty = ~Key{0};
  TableSlot<Key>* slots;
  uint64_t mask;
  int shift;

  __device__ uint64_t Home(Key id) const { return (static_cast<uint64_t>(id) * 0x9e3779b97f4a7c15ull) >> shift; }
  // Puts `id` in the table; returns its slot and whether this call added it (exactly one caller per id).
  __device__ uint64_t Insert(Key id, bool* added) const {
    for (uint64_t s = Home(id);; s = (s + 1) & mask) {
      const Key before = CompareAndSwap(&slots[s].key, kEmpty, id);
      if (before == kEmpty || before == id) {
        *added = before == kEmpty;
        return s;
      }
    }
  }
  // The slot of an id in the table.
  __device__ uint64_t Find(Key id) const {
    uint64_t s = Home(id);
    while (slots[s].key != id) s = (s + 1) & mask;
    return s;
  }
  __device__ uint32_t& Local(uint64_t s) const { return slots[s].local; }
  // The local index of `id`, or kNoLocal where the table does not hold it.
  __device__ uint32_t LocalOf(Key id) const {
    for (uint64_t s = Home(id);; s = (s + 1) & mask) {
      const Key key = slots[s].key;
      if (key == id) return slots[s].local;
      if (key == kEmpty) return kNoLocal;
    }
  }
};

// Whether the calling block is the last of its grid to get here (every thread of the block calls it; each
// thread gets the answer). The last one resets `blocks_done` for the next launch. The relabel kernels end with
// it, so that their last block can move the frontier once every block has read it.
__device__ inline bool LastBlockDone(uint32_t* blocks_done) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(blocks_done, 1u) == gridDim.x - 1;
    if (last) *blocks_done = 0;
  }
  __syncthreads();
  return last;
}

template <typename Key>
inline NodeTable<Key> TableOf(const Workspace& w) {
  return {reinterpret_cast<TableSlot<Key>*>(w.table_slots), w.table_mask, w.table_shift};
}

}  // namespace gnnd::cuda
