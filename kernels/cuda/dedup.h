// Dedup/relabel phase of the CUDA backend: the batch's node table. Seeds start it; each hop's sampled
// ids are sorted and made unique (CUB), those new to the batch appended in id order (the canonical
// layout) and merged into the table sorted by id (a merge, not a re-sort of every node), and the hop's
// edge sources relabeled to local indices through that table.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "common/batch.h"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

// Id sorts cover bits [0, end_bit) of ids below `sentinel` (the node count, which pads sort inputs).
// `narrow`: the sentinel fits 32 bits, so ids are sorted, deduplicated and looked up as uint32 (half the
// memory traffic of the sorts).
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

// Grows w.temp to what the dedup phase's CUB calls need at their largest (hops of up to `max_edges`
// edges, a node table of up to `max_table` entries).
absl::Status ReserveDedup(Workspace& w, const BatchCapacity& capacity, int64_t max_edges, int64_t max_table);

// Starts a batch: the seeds (w.args) become its first nodes, hop 0.
absl::Status StartBatch(Workspace& w, const BatchCapacity& capacity, const IdRange& ids, BatchView out,
                        cudaStream_t stream);
// After SampleHop: appends the hop's new nodes, relabels its edges' sources, records its counts and
// moves the frontier to the new nodes.
absl::Status AddHopNodes(Workspace& w, const HopBound& bound, int hop, const IdRange& ids, BatchView out,
                         cudaStream_t stream);

}  // namespace gnnd::cuda
