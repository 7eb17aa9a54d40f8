// Dedup/relabel phase of the CUDA backend: the batch's node table, a hash table from global id to local
// index (node_table.cuh). Seeds start it; the sampling kernel inserts each hop's sampled ids, and the ids
// a hop adds (each added by exactly one thread) are sorted, so its new nodes are appended in id order (the
// canonical layout); the hop's edge sources are then relabeled through the table. The table is emptied at
// the batch's end by the slots its nodes took, not by clearing all of it. The kernels that do so are the
// sampler's (cuda_sampler.cu); this is their id width and between-batches state.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "common/batch/batch.h"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

// Id sorts cover bits [0, end_bit) of ids below `sentinel` (the node count, which pads sort inputs).
// `narrow`: the sentinel fits 32 bits, so ids are sorted and hashed as uint32 (half the memory traffic).
struct IdRange {
  uint64_t sentinel = 0;
  int end_bit = 1;
  bool narrow = true;
  static IdRange ForNodes(int64_t num_nodes);
};

// Calls f(Key{}) with the id type the dedup phase works in: uint32_t when ids.narrow, else uint64_t.
template <typename F>
decltype(auto) DispatchKey(const IdRange& ids, F&& f) {
  if (ids.narrow) return f(uint32_t{});
  return f(uint64_t{});
}

// Grows w.temp to what the dedup phase's CUB calls need at their largest (hops of up to `max_edges` edges).
absl::Status ReserveDedup(Workspace& w, int64_t max_edges);

// Puts the dedup phase's state in its between-batches form (an empty table, sentinel sort input): at
// the start, and after a batch that failed half-way.
absl::Status ResetDedup(Workspace& w, const IdRange& ids, cudaStream_t stream);

}  // namespace gnnd::cuda
