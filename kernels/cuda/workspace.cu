#include <cub/cub.cuh>

#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

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
  int64_t max_frontier = 1, max_edges = 1;
  for (const HopBound& h : capacity.hops) {
    max_frontier = std::max(max_frontier, h.frontier);
    max_edges = std::max(max_edges, h.edges);
  }
  const int64_t max_nodes = std::max<int64_t>(capacity.max_nodes, 1);
  auto w = std::make_unique<Workspace>();
  GNND_RETURN_IF_ERROR(w->Allocate(&w->state, 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->counts, max_frontier + 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->offsets, max_frontier + 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->sampled, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->keys, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->sorted_keys, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->unique, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->fresh, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->flags, max_edges));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->num_unique, 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->num_fresh, 1));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->pair_ids, max_nodes));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->sorted_ids, max_nodes));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->pair_local, max_nodes));
  GNND_RETURN_IF_ERROR(w->Allocate(&w->sorted_local, max_nodes));
  // The CUB calls of the sampling (scan) and dedup (sorts, unique, select) phases at their largest.
  CubTemp& t = w->temp;
  GNND_RETURN_IF_ERROR(t.Reserve("size scan", [&](void* d, size_t& n) {
    return cub::DeviceScan::ExclusiveSum(d, n, w->counts, w->offsets, max_frontier + 1);
  }));
  GNND_RETURN_IF_ERROR(t.Reserve("size sort", [&](void* d, size_t& n) {
    return cub::DeviceRadixSort::SortKeys(d, n, w->keys, w->sorted_keys, max_edges);
  }));
  GNND_RETURN_IF_ERROR(t.Reserve("size unique", [&](void* d, size_t& n) {
    return cub::DeviceSelect::Unique(d, n, w->sorted_keys, w->unique, w->num_unique, max_edges);
  }));
  GNND_RETURN_IF_ERROR(t.Reserve("size select", [&](void* d, size_t& n) {
    return cub::DeviceSelect::Flagged(d, n, w->unique, w->flags, w->fresh, w->num_fresh, max_edges);
  }));
  GNND_RETURN_IF_ERROR(t.Reserve("size pair sort", [&](void* d, size_t& n) {
    return cub::DeviceRadixSort::SortPairs(d, n, w->pair_ids, w->sorted_ids, w->pair_local, w->sorted_local, max_nodes);
  }));
  char* temp = nullptr;
  GNND_RETURN_IF_ERROR(w->Allocate(&temp, static_cast<int64_t>(t.bytes)));
  t.data = temp;
  return w;
}

}  // namespace gnnd::cuda
