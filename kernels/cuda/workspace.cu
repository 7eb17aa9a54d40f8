#include <cub/cub.cuh>

#include "kernels/cuda/dedup.h"
#include "kernels/cuda/node_table.cuh"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {
namespace {

__global__ void SetBatchArgsKernel(BatchArgs* out, BatchArgs args) { *out = args; }

}  // namespace

absl::Status SetBatchArgs(const Workspace& w, const BatchArgs& args, cudaStream_t stream) {
  GNND_LAUNCH(SetBatchArgsKernel, 1, 1, 0, stream, w.args, args);
  return absl::OkStatus();
}

Workspace::~Workspace() {
  for (void* p : owned_) cudaFree(p);
}

template <typename T>
absl::Status Workspace::Allocate(T** out, int64_t count) {
  void* p = nullptr;
  GNND_CUDA(cudaMalloc(&p, std::max<int64_t>(count, 1) * sizeof(T)), "allocate sampler buffers");
  owned_.push_back(p);
  *out = static_cast<T*>(p);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Workspace>> Workspace::Create(const HomogeneousCapacity& capacity, bool narrow_keys,
                                                             bool induced, bool labor) {
  int64_t max_frontier = induced ? std::max<int64_t>(capacity.max_nodes, 1) : 1, max_edges = 1;
  for (const HopBound& h : capacity.hops) {
    max_frontier = std::max(max_frontier, h.frontier);
    max_edges = std::max(max_edges, h.edges);
  }
  auto w = std::make_unique<Workspace>();
  GNND_RETURN_IF_ERROR(w->Allocate(&w->args, 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->counts, max_frontier + 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->offsets, max_frontier + 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->lists, max_frontier));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->degrees, max_frontier));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->firsts, max_frontier));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->candidates, max_frontier));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->sampled, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->keys, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->sorted_keys, max_edges));
  w->max_edges = max_edges;
  if (labor) {
    GNND_RETURN_IF_ERROR(w->Allocate(&w->labor_kept, max_edges));
    GNND_RETURN_IF_ERROR(w->Allocate(&w->labor_kept_at, max_frontier));
    GNND_RETURN_IF_ERROR(w->Allocate(&w->labor_kept_used, 1));
  }
  // Every node of a batch has a slot, and the table stays at most half full (short probes).
  int k = 10;
  while ((int64_t{1} << k) < 2 * capacity.max_nodes) ++k;
  if (k > 32) return absl::ResourceExhaustedError("batch capacity too large for the CUDA node table (2^32 slots)");
  w->table_mask = (uint64_t{1} << k) - 1;
  w->table_shift = 64 - k;
  char* table = nullptr;
  w->table_slot_bytes = narrow_keys ? sizeof(TableSlot<uint32_t>) : sizeof(TableSlot<uint64_t>);
  GNND_RETURN_IF_ERROR(w->Allocate(&table, (int64_t{1} << k) * static_cast<int64_t>(w->table_slot_bytes)));
  w->table_slots = table;
  GNND_RETURN_IF_ERROR(w->Allocate(&w->node_slots, capacity.max_nodes));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->blocks_done, 1));
  // The CUB calls of the sampling (scan) and dedup (sort) phases at their largest.
  CubTemp& t = w->temp;
  GNND_RETURN_IF_ERROR(t.Reserve("size scan", [&](void* d, size_t& n) {
    return cub::DeviceScan::ExclusiveSum(d, n, w->counts, w->offsets, max_frontier + 1);
  }));
  GNND_RETURN_IF_ERROR(ReserveDedup(*w, max_edges));
  char* temp = nullptr;
  GNND_RETURN_IF_ERROR(w->Allocate(&temp, static_cast<int64_t>(t.bytes)));
  t.data = temp;
  return w;
}

}  // namespace gnnd::cuda
