#include "common/wire/batch_proto.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/batch/spec.h"

namespace gnnd {

v1::SlotLayout SlotLayoutToProto(const HomogeneousLayout& layout) {
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
  if (layout.capacity.max_feature_rows >= 0) l.set_max_feature_rows(layout.capacity.max_feature_rows);
  return l;
}

absl::StatusOr<HomogeneousLayout> SlotLayoutFromProto(const v1::SlotLayout& l) {
  if (l.num_hops() < 1 || l.num_hops() > kMaxHops || l.max_nodes() < 0 || l.max_edges() < 0 || l.max_seeds() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("slot layout: ", l.num_hops(), " hops, ", l.max_nodes(), " nodes, ",
                                                   l.max_edges(), " edges, ", l.max_seeds(), " seeds"));
  }
  if (l.has_max_feature_rows() && (l.max_feature_rows() < 0 || l.max_feature_rows() > l.max_nodes())) {
    return absl::InvalidArgumentError(absl::StrCat("slot layout: ", l.max_feature_rows(), " feature rows"));
  }
  HomogeneousCapacity capacity{l.max_seeds(), l.max_nodes(), l.max_edges(), {}};
  if (l.has_max_feature_rows()) capacity.max_feature_rows = l.max_feature_rows();
  HomogeneousLayout layout = HomogeneousLayout::Make(capacity, l.num_hops(), l.feature_row_bytes());
  // The offsets are a pure function of the capacities: what gnnd sent must be what they give. A slot may
  // hold more after them (edge data), so it may be larger.
  if (l.slot_bytes() < layout.total_bytes || l.slot_bytes() % kBatchAlignment != 0 || layout.node_ids != l.node_ids() ||
      layout.num_nodes_per_hop != l.num_nodes_per_hop() || layout.edge_src != l.edge_src() ||
      layout.edge_dst != l.edge_dst() || layout.num_edges_per_hop != l.num_edges_per_hop() ||
      layout.features != l.features() || layout.labels != l.labels()) {
    return absl::InvalidArgumentError("slot layout: offsets do not match the capacities (a gnnd of another version?)");
  }
  layout.total_bytes = l.slot_bytes();
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

v1::BatchSchema BatchSchemaToProto(const BatchSchema& schema) {
  v1::BatchSchema p;
  for (const std::string& c : schema.counts) p.add_counts(c);
  for (int64_t c : schema.capacity) p.add_capacity(c);
  for (const BatchArraySchema& a : schema.arrays) {
    v1::BatchArraySchema& out = *p.add_arrays();
    out.set_name(a.name);
    out.set_dtype(std::string(DTypeName(a.dtype)));
    for (int64_t d : a.row_shape) out.add_row_shape(d);
    out.set_count(a.count);
    out.set_offset(a.offset);
    if (a.rows >= 0) out.set_rows(a.rows);
  }
  p.set_slot_bytes(schema.slot_bytes);
  return p;
}

absl::StatusOr<BatchSchema> BatchSchemaFromProto(const v1::BatchSchema& p) {
  auto bad = [](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("batch schema: ", what)); };
  if (p.counts_size() > kMaxBatchCounts || p.arrays_size() > kMaxBatchArrays) {
    return bad(absl::StrCat(p.counts_size(), " counts and ", p.arrays_size(), " arrays"));
  }
  if (p.capacity_size() != p.counts_size()) return bad("a capacity per count expected");
  BatchSchema s;
  s.slot_bytes = p.slot_bytes();
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < p.counts_size(); ++i) {
    if (p.counts(i).empty() || !names.insert(p.counts(i)).second) {
      return bad(absl::StrCat("counts[", i, "] = ", Quoted(p.counts(i)), " (empty or repeated)"));
    }
    if (p.capacity(i) < 0) return bad(absl::StrCat("capacity[", i, "] = ", p.capacity(i)));
    s.counts.push_back(p.counts(i));
    s.capacity.push_back(p.capacity(i));
  }
  names.clear();
  for (int i = 0; i < p.arrays_size(); ++i) {
    const v1::BatchArraySchema& a = p.arrays(i);
    const std::string where = absl::StrCat("arrays[", i, "] (", Quoted(a.name()), ")");
    if (a.name().empty() || !names.insert(a.name()).second) return bad(where + ": empty or repeated name");
    const std::optional<DType> dtype = DTypeNamed(a.dtype());
    if (!dtype) return bad(absl::StrCat(where, ": dtype ", Quoted(a.dtype()), " is not one this client knows"));
    if (a.count() < 0 || a.count() >= p.counts_size()) return bad(absl::StrCat(where, ": count ", a.count()));
    if (a.row_shape_size() > kMaxRowDims) return bad(absl::StrCat(where, ": ", a.row_shape_size(), " row dims"));
    BatchArraySchema& out = s.arrays.emplace_back();
    out.name = a.name();
    out.dtype = *dtype;
    out.count = a.count();
    out.offset = a.offset();
    if (a.rows() < 0 || a.rows() > p.capacity(a.count())) return bad(absl::StrCat(where, ": rows ", a.rows()));
    if (a.rows() > 0) out.rows = a.rows();
    // The array at its capacity must lie inside the slot; every product checked for overflow.
    uint64_t bytes = DTypeSize(*dtype);
    for (int64_t d : a.row_shape()) {
      if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
        return bad(absl::StrCat(where, ": row dimension ", d));
      }
      out.row_shape.push_back(d);
    }
    uint64_t end = 0;
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(s.Rows(i)), &bytes) ||
        __builtin_add_overflow(bytes, a.offset(), &end) || end > s.slot_bytes) {
      return bad(absl::StrCat(where, ": does not fit in a slot of ", s.slot_bytes, " bytes"));
    }
  }
  return s;
}

}  // namespace gnnd
