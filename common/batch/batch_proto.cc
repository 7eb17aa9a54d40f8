#include "common/batch/batch_proto.h"

#include "absl/strings/str_cat.h"
#include "common/batch/batch_schema.h"

namespace gnnd {

v1::SlotLayout SlotLayoutToProto(const BatchLayout& layout) {
  v1::SlotLayout l;
  l.set_slot_bytes(layout.total_bytes);
  l.set_node_ids(layout.node_ids);
  l.set_num_nodes_per_hop(layout.num_nodes_per_hop);
  l.set_edge_src(layout.edge_src);
  l.set_edge_dst(layout.edge_dst);
  l.set_num_edges_per_hop(layout.num_edges_per_hop);
  l.set_features(layout.features);
  l.set_labels(layout.labels);
  l.set_max_nodes(layout.capacity.max_nodes);
  l.set_max_edges(layout.capacity.max_edges);
  l.set_max_seeds(layout.capacity.max_seeds);
  l.set_num_hops(layout.num_hops);
  l.set_feature_row_bytes(layout.feature_row_bytes);
  return l;
}

absl::StatusOr<BatchLayout> SlotLayoutFromProto(const v1::SlotLayout& l) {
  if (l.num_hops() < 1 || l.num_hops() > kMaxHops || l.max_nodes() < 0 || l.max_edges() < 0 || l.max_seeds() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("slot layout: ", l.num_hops(), " hops, ", l.max_nodes(), " nodes, ",
                                                   l.max_edges(), " edges, ", l.max_seeds(), " seeds"));
  }
  BatchCapacity capacity{l.max_seeds(), l.max_nodes(), l.max_edges(), {}};
  BatchLayout layout = BatchLayout::Make(capacity, l.num_hops(), l.feature_row_bytes());
  // The offsets are a pure function of the capacities: what gnnd sent must be what they give.
  if (layout.total_bytes != l.slot_bytes() || layout.node_ids != l.node_ids() ||
      layout.num_nodes_per_hop != l.num_nodes_per_hop() || layout.edge_src != l.edge_src() ||
      layout.edge_dst != l.edge_dst() || layout.num_edges_per_hop != l.num_edges_per_hop() ||
      layout.features != l.features() || layout.labels != l.labels()) {
    return absl::InvalidArgumentError("slot layout: offsets do not match the capacities (a gnnd of another version?)");
  }
  return layout;
}

void SetBatchCounts(std::span<const int32_t> nodes_per_hop, std::span<const int32_t> edges_per_hop,
                    v1::BatchReady& ready) {
  int64_t nodes = 0, edges = 0;
  ready.clear_num_nodes_per_hop();
  ready.clear_num_edges_per_hop();
  for (int32_t n : nodes_per_hop) {
    ready.add_num_nodes_per_hop(n);
    nodes += n;
  }
  for (int32_t e : edges_per_hop) {
    ready.add_num_edges_per_hop(e);
    edges += e;
  }
  ready.set_num_nodes(nodes);
  ready.set_num_edges(edges);
  ready.set_num_seeds(nodes_per_hop.empty() ? 0 : nodes_per_hop[0]);
  ready.clear_counts();
  for (int64_t c : HomogeneousBatchCounts(nodes_per_hop, edges_per_hop)) ready.add_counts(c);
}

}  // namespace gnnd
