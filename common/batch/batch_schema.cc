#include "common/batch/batch_schema.h"

#include "absl/strings/str_cat.h"
#include "common/base/status.h"

namespace gnnd {

size_t BatchArraySchema::row_bytes() const {
  size_t bytes = DTypeSize(dtype);
  for (int64_t d : row_shape) bytes *= static_cast<size_t>(d);
  return bytes;
}

int BatchSchema::ArrayNamed(std::string_view name) const {
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (arrays[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int BatchSchema::CountNamed(std::string_view name) const {
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == name) return static_cast<int>(i);
  }
  return -1;
}

BatchSchema HomogeneousBatchSchema(const HomogeneousLayout& layout, int64_t feature_dim, DType feature_dtype) {
  enum Count { kNodes, kEdges, kSeeds, kNodeHops, kEdgeHops };
  const int hops = layout.num_hops;
  BatchSchema s;
  s.counts = {"nodes", "edges", "seeds", "node_hops", "edge_hops"};
  s.capacity = {layout.capacity.max_nodes, layout.capacity.max_edges, layout.capacity.max_seeds, hops + 1, hops};
  for (int h = 0; h <= hops; ++h) {
    s.counts.push_back(absl::StrCat("nodes_hop", h));
    s.capacity.push_back(h == 0 ? layout.capacity.max_seeds : layout.capacity.max_nodes);
  }
  for (int h = 0; h < hops; ++h) {
    s.counts.push_back(absl::StrCat("edges_hop", h));
    s.capacity.push_back(layout.capacity.max_edges);
  }
  const BatchArraySchema arrays[kNumBatchArrays] = {
      {kBatchArrayNames[0], DType::kInt64, {}, kNodes, layout.node_ids},
      {kBatchArrayNames[1], DType::kInt32, {}, kNodeHops, layout.num_nodes_per_hop},
      {kBatchArrayNames[2], DType::kInt32, {}, kEdges, layout.edge_src},
      {kBatchArrayNames[3], DType::kInt32, {}, kEdges, layout.edge_dst},
      {kBatchArrayNames[4], DType::kInt32, {}, kEdgeHops, layout.num_edges_per_hop},
      {kBatchArrayNames[5],
       feature_dtype,
       {feature_dim},
       kNodes,
       layout.features,
       layout.capacity.max_feature_rows >= 0 && layout.capacity.max_feature_rows < layout.capacity.max_nodes
           ? layout.capacity.max_feature_rows
           : -1},
      {kBatchArrayNames[6], DType::kInt64, {}, kSeeds, layout.labels},
  };
  s.arrays.assign(std::begin(arrays), std::end(arrays));
  s.slot_bytes = layout.total_bytes;
  return s;
}

std::vector<int64_t> HomogeneousBatchCounts(std::span<const int32_t> nodes_per_hop,
                                            std::span<const int32_t> edges_per_hop) {
  int64_t nodes = 0, edges = 0;
  for (int32_t n : nodes_per_hop) nodes += n;
  for (int32_t e : edges_per_hop) edges += e;
  std::vector<int64_t> counts = {nodes, edges, nodes_per_hop.empty() ? 0 : nodes_per_hop[0],
                                 static_cast<int64_t>(nodes_per_hop.size()),
                                 static_cast<int64_t>(edges_per_hop.size())};
  counts.insert(counts.end(), nodes_per_hop.begin(), nodes_per_hop.end());
  counts.insert(counts.end(), edges_per_hop.begin(), edges_per_hop.end());
  return counts;
}

absl::Status CheckBatchCounts(const BatchSchema& schema, std::span<const int64_t> counts) {
  if (counts.size() != schema.counts.size()) {
    return absl::InternalError(
        absl::StrCat("gnnd sent ", counts.size(), " counts for a batch of ", schema.counts.size()));
  }
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0 || counts[i] > schema.capacity[i]) {
      return absl::InternalError(
          absl::StrCat("gnnd sent ", schema.counts[i], " = ", counts[i], " (capacity ", schema.capacity[i], ")"));
    }
  }
  return absl::OkStatus();
}

int FirstArrayOverflowing(const BatchSchema& schema, std::span<const int64_t> counts) {
  for (size_t i = 0; i < schema.arrays.size(); ++i) {
    const BatchArraySchema& a = schema.arrays[i];
    if (a.rows >= 0 && counts[a.count] > a.rows) return static_cast<int>(i);
  }
  return -1;
}

uint64_t BatchBytes(const BatchSchema& schema, std::span<const int64_t> counts) {
  uint64_t bytes = 0;
  for (const BatchArraySchema& a : schema.arrays) bytes += a.row_bytes() * static_cast<uint64_t>(counts[a.count]);
  return bytes;
}

}  // namespace gnnd
