// A CUDA sampler's device state: the sizes that stay on the device between launches (HopState) and
// every scratch buffer, allocated once from the batch capacity so that sampling never allocates.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/batch.h"
#include "common/batch/sampling.h"
#include "kernels/cuda/launch.h"

namespace gnnd::cuda {

// Sizes that live on the device, so no launch waits for the host.
struct HopState {
  int64_t num_nodes;       // nodes in the batch so far
  int64_t frontier_begin;  // local indices expanded by the current hop
  int64_t frontier_end;
  int64_t total_edges;  // edges of the hops before the current one
};

// What changes from one batch to the next, written on the device by SetBatchArgs before each batch, so
// that the launches of a batch are the same every time (and are replayed as a CUDA graph).
struct BatchArgs {
  const int64_t *seeds;  // device memory
  int64_t num_seeds;
  SamplingKey key;
  uint64_t batch_index;
  const int64_t *seed_times = nullptr;  // a temporal batch's given seed times (device memory), or null
  SamplingKey labor_key{};              // a LABOR batch's r_t key (sampling.h, namespace labor): its epoch's
};

struct Workspace {
  BatchArgs *args = nullptr;
  // Sampling: per frontier node counts and their exclusive scan (the last entry: the hop's edges), and
  // the sampled neighbors' global ids. An induced batch's per-node edge counts too (every node of a type).
  int64_t *counts = nullptr, *offsets = nullptr, *sampled = nullptr;
  // Each frontier node's in-neighbor list (where it starts: host memory, or the hot tier's copy) and
  // in-degree, looked up once by the count kernel.
  const void **lists = nullptr;
  int64_t *degrees = nullptr;
  // Each frontier node's first position in the dataset's own CSC (its list's, unless read from the hot tier's
  // copy): the base of its sampled edges' positions, where a batch carries edge data.
  int64_t *firsts = nullptr;
  // The temporal rule: each frontier node's candidates (in-edges no newer than its seed, not excluded).
  int64_t *candidates = nullptr;
  // LABOR (sampling.cu, LaborArgs): the positions each frontier node keeps, handed from the count kernel to the
  // sample kernel (max_edges of them), where each node's run starts, and the runs' total.
  uint32_t *labor_kept = nullptr;
  int64_t *labor_kept_at = nullptr;
  unsigned long long *labor_kept_used = nullptr;
  // Dedup: the hop's sort input (the ids it adds to the batch at their edges' positions, the sentinel
  // elsewhere; all sentinel between hops) and that input sorted.
  uint64_t *keys = nullptr, *sorted_keys = nullptr;
  int64_t max_edges = 0;
  // The node table (dedup.h, node_table.cuh): 2^k slots of id (all ones: empty) and local index, at most half full,
  // each table_slot_bytes (TableSlot of the ids' width).
  void *table_slots = nullptr;
  size_t table_slot_bytes = 0;
  uint64_t table_mask = 0;
  int table_shift = 64;  // 64 - k: a hash's top k bits pick the home slot
  // The slot each of the batch's nodes took, by local index: the slots to empty at the batch's end.
  uint32_t *node_slots = nullptr;
  // Blocks of the relabel kernel that have finished (its last one moves the frontier); 0 between hops.
  uint32_t *blocks_done = nullptr;
  CubTemp temp;

  // Sized for `capacity` on the current device.
  // `narrow_keys`: the node table's ids are 32-bit (IdRange::narrow), else 64-bit. `induced`: counts and offsets
  // hold capacity.max_nodes too (SamplingSpec::induced). `labor`: LABOR's buffers too.
  static absl::StatusOr<std::unique_ptr<Workspace>> Create(const HomogeneousCapacity &capacity, bool narrow_keys,
                                                           bool induced = false, bool labor = false);
  ~Workspace();

 private:
  template <typename T>
  absl::Status Allocate(T **out, int64_t count);
  std::vector<void *> owned_;
};

// Enqueues the write of `args` into w.args (a launch: its arguments are copied when it is enqueued).
absl::Status SetBatchArgs(const Workspace &w, const BatchArgs &args, cudaStream_t stream);

}  // namespace gnnd::cuda
