#include "common/batch/batch.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace gnnd {
HomogeneousLayout HomogeneousLayout::Make(const HomogeneousCapacity& capacity, int num_hops, size_t feature_row_bytes) {
  HomogeneousLayout l;
  l.num_hops = num_hops;
  l.capacity = capacity;
  l.feature_row_bytes = feature_row_bytes;
  ArrayPlacer placer;
  l.node_ids = placer.Place(sizeof(int64_t) * capacity.max_nodes);
  l.num_nodes_per_hop = placer.Place(sizeof(int32_t) * (num_hops + 1));
  l.edge_src = placer.Place(sizeof(int32_t) * capacity.max_edges);
  l.edge_dst = placer.Place(sizeof(int32_t) * capacity.max_edges);
  l.num_edges_per_hop = placer.Place(sizeof(int32_t) * num_hops);
  l.features = placer.Place(feature_row_bytes * capacity.feature_rows());
  l.labels = placer.Place(sizeof(int64_t) * capacity.max_seeds);
  l.total_bytes = placer.end();
  return l;
}

uint64_t BatchArrayBytes(int64_t num_nodes, int64_t num_edges, int64_t num_seeds, int num_hops,
                         size_t feature_row_bytes) {
  return sizeof(int64_t) * num_nodes + sizeof(int32_t) * (num_hops + 1) + 2 * sizeof(int32_t) * num_edges +
         sizeof(int32_t) * num_hops + feature_row_bytes * num_nodes + sizeof(int64_t) * num_seeds;
}

HomogeneousView HomogeneousView::At(void* base, const HomogeneousLayout& layout) {
  auto* bytes = static_cast<std::byte*>(base);
  HomogeneousView v;
  v.num_hops = layout.num_hops;
  v.node_ids = reinterpret_cast<int64_t*>(bytes + layout.node_ids);
  v.num_nodes_per_hop = reinterpret_cast<int32_t*>(bytes + layout.num_nodes_per_hop);
  v.edge_src = reinterpret_cast<int32_t*>(bytes + layout.edge_src);
  v.edge_dst = reinterpret_cast<int32_t*>(bytes + layout.edge_dst);
  v.num_edges_per_hop = reinterpret_cast<int32_t*>(bytes + layout.num_edges_per_hop);
  v.features = bytes + layout.features;
  v.labels = reinterpret_cast<int64_t*>(bytes + layout.labels);
  v.feature_rows = layout.capacity.feature_rows();
  return v;
}

int64_t HomogeneousView::num_nodes() const {
  int64_t n = 0;
  for (int h = 0; h <= num_hops; ++h) n += num_nodes_per_hop[h];
  return n;
}

int64_t HomogeneousView::num_edges() const {
  int64_t n = 0;
  for (int h = 0; h < num_hops; ++h) n += num_edges_per_hop[h];
  return n;
}

std::array<BatchArray, kNumBatchArrays> BatchArrays(const HomogeneousView& v, int64_t num_nodes, int64_t num_edges,
                                                    int64_t num_seeds, int64_t feature_dim, DType feature_dtype) {
  const int64_t hops = v.num_hops;
  auto array = [](int index, DType dtype, void* data, int64_t rows, int64_t cols = -1) {
    return BatchArray{kBatchArrayNames[index], dtype, cols < 0 ? 1 : 2, {rows, cols < 0 ? 0 : cols}, data};
  };
  return {
      array(0, DType::kInt64, v.node_ids, num_nodes),     array(1, DType::kInt32, v.num_nodes_per_hop, hops + 1),
      array(2, DType::kInt32, v.edge_src, num_edges),     array(3, DType::kInt32, v.edge_dst, num_edges),
      array(4, DType::kInt32, v.num_edges_per_hop, hops), array(5, feature_dtype, v.features, num_nodes, feature_dim),
      array(6, DType::kInt64, v.labels, num_seeds)};
}

HomogeneousBuffer::HomogeneousBuffer(const HomogeneousLayout& layout) : layout_(layout), bytes_(layout.total_bytes) {}

}  // namespace gnnd
