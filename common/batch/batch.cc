#include "common/batch/batch.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace gnnd {
absl::StatusOr<BatchCapacity> ComputeBatchCapacity(const SamplingSpec& spec, int64_t num_nodes, int64_t num_edges,
                                                   int64_t max_in_degree) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  BatchCapacity c;
  c.max_seeds = spec.seeds_may_repeat ? spec.batch_size : std::min(spec.batch_size, num_nodes);
  // A batch holds its seed entries plus at most every other node.
  const int64_t node_cap = spec.seeds_may_repeat ? std::min(c.max_seeds, kMax - num_nodes) + num_nodes - 1 : num_nodes;
  c.max_nodes = c.max_seeds;
  int64_t frontier = c.max_seeds;
  bool distinct = !spec.seeds_may_repeat;  // frontier entries are distinct nodes (all but repeated seeds)
  for (int32_t fanout : spec.fanouts.at(0)) {
    const int64_t per_node = fanout < 0 ? max_in_degree : std::min<int64_t>(fanout, max_in_degree);
    // Saturating: bounds for deep hops exceed int64 long before they are capped.
    const int64_t edges = per_node == 0 ? 0 : frontier > kMax / per_node ? kMax : frontier * per_node;
    // Distinct nodes have at most every edge of the graph; a repeated seed is expanded once per entry.
    const int64_t hop_edges = distinct ? std::min(edges, num_edges) : edges;
    HopBound& hop = c.hops.emplace_back();
    hop.frontier = frontier;
    hop.edges = hop_edges;
    c.max_edges = hop_edges > kMax - c.max_edges ? kMax : c.max_edges + hop_edges;
    // Nodes first reached here: at most one per edge, and at most the graph. (Not num_nodes minus the
    // bound so far: a batch may have fewer nodes than its bound, leaving more to be reached.)
    frontier = std::min(hop_edges, num_nodes);
    distinct = true;
    c.max_nodes = std::min(c.max_nodes + frontier, node_cap);
    hop.nodes_after = c.max_nodes;
  }
  constexpr int64_t kLimit = (int64_t{1} << 31) - 1;  // local indices and per-hop counts are int32
  if (c.max_nodes > kLimit || c.max_edges > kLimit) {
    return absl::InvalidArgumentError(absl::StrCat("a batch could hold ", c.max_nodes, " nodes and ", c.max_edges,
                                                   " edges, beyond the int32 layout: lower batch_size or fanouts"));
  }
  return c;
}

BatchLayout BatchLayout::Make(const BatchCapacity& capacity, int num_hops, size_t feature_row_bytes) {
  BatchLayout l;
  l.num_hops = num_hops;
  l.capacity = capacity;
  l.feature_row_bytes = feature_row_bytes;
  size_t at = 0;
  auto place = [&](size_t bytes) {
    const size_t offset = at;
    at = AlignBatchOffset(at + bytes);
    return offset;
  };
  l.node_ids = place(sizeof(int64_t) * capacity.max_nodes);
  l.num_nodes_per_hop = place(sizeof(int32_t) * (num_hops + 1));
  l.edge_src = place(sizeof(int32_t) * capacity.max_edges);
  l.edge_dst = place(sizeof(int32_t) * capacity.max_edges);
  l.num_edges_per_hop = place(sizeof(int32_t) * num_hops);
  l.features = place(feature_row_bytes * capacity.feature_rows());
  l.labels = place(sizeof(int64_t) * capacity.max_seeds);
  l.total_bytes = at;
  return l;
}

uint64_t BatchArrayBytes(int64_t num_nodes, int64_t num_edges, int64_t num_seeds, int num_hops,
                         size_t feature_row_bytes) {
  return sizeof(int64_t) * num_nodes + sizeof(int32_t) * (num_hops + 1) + 2 * sizeof(int32_t) * num_edges +
         sizeof(int32_t) * num_hops + feature_row_bytes * num_nodes + sizeof(int64_t) * num_seeds;
}

BatchView BatchView::At(void* base, const BatchLayout& layout) {
  auto* bytes = static_cast<std::byte*>(base);
  BatchView v;
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

int64_t BatchView::num_nodes() const {
  int64_t n = 0;
  for (int h = 0; h <= num_hops; ++h) n += num_nodes_per_hop[h];
  return n;
}

int64_t BatchView::num_edges() const {
  int64_t n = 0;
  for (int h = 0; h < num_hops; ++h) n += num_edges_per_hop[h];
  return n;
}

std::array<BatchArray, kNumBatchArrays> BatchArrays(const BatchView& v, int64_t num_nodes, int64_t num_edges,
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

BatchBuffer::BatchBuffer(const BatchLayout& layout) : layout_(layout), bytes_(layout.total_bytes) {}

void CopyBatchGraph(const BatchView& from, const BatchView& to) {
  std::copy_n(from.num_nodes_per_hop, from.num_hops + 1, to.num_nodes_per_hop);
  std::copy_n(from.num_edges_per_hop, from.num_hops, to.num_edges_per_hop);
  std::copy_n(from.node_ids, from.num_nodes(), to.node_ids);
  std::copy_n(from.edge_src, from.num_edges(), to.edge_src);
  std::copy_n(from.edge_dst, from.num_edges(), to.edge_dst);
}

}  // namespace gnnd
