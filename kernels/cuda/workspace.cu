#include <cub/cub.cuh>

#include "kernels/cuda/dedup.h"
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

absl::StatusOr<std::unique_ptr<Workspace>> Workspace::Create(const BatchCapacity& capacity) {
  int64_t max_frontier = 1, max_edges = 1, max_table = std::max<int64_t>(capacity.max_seeds, 1);
  for (const HopBound& h : capacity.hops) {
    max_frontier = std::max(max_frontier, h.frontier);
    max_edges = std::max(max_edges, h.edges);
    max_table += std::max<int64_t>(h.edges, 1);  // each hop merges in up to one new node per edge
  }
  auto w = std::make_unique<Workspace>();
  GNND_RETURN_IF_ERROR(w->Allocate(&w->args, 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->state, 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->counts, max_frontier + 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->offsets, max_frontier + 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->lists, max_frontier));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->degrees, max_frontier));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->sampled, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->keys, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->sorted_keys, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->fresh, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->num_fresh, 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->pair_ids, capacity.max_seeds));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->pair_local, capacity.max_seeds));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->fresh_local, max_edges));
  for (int t = 0; t < 2; ++t) {
    GNND_RETURN_IF_ERROR(w->Allocate(&w->table_ids[t], max_table));
    GNND_RETURN_IF_ERROR(w->Allocate(&w->table_local[t], max_table));
  }
  // The CUB calls of the sampling (scan) and dedup (sorts, select, merge) phases at their largest.
  CubTemp& t = w->temp;
  GNND_RETURN_IF_ERROR(t.Reserve("size scan", [&](void* d, size_t& n) {
    return cub::DeviceScan::ExclusiveSum(d, n, w->counts, w->offsets, max_frontier + 1);
  }));
  GNND_RETURN_IF_ERROR(ReserveDedup(*w, capacity, max_edges, max_table));
  char* temp = nullptr;
  GNND_RETURN_IF_ERROR(w->Allocate(&temp, static_cast<int64_t>(t.bytes)));
  t.data = temp;
  return w;
}

}  // namespace gnnd::cuda
