#include "common/batch/layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/base/limits.h"
#include "common/base/status.h"
#include "common/batch/sampling.h"

namespace gnnd {
namespace {
// A one-type capacity as common/batch/batch.h has it; a link batch's hop-0 bound as its seeds.
HomogeneousCapacity ToHomogeneousCapacity(const BatchCapacity& c, int seed_type) {
  HomogeneousCapacity h;
  h.max_seeds = seed_type >= 0 ? c.max_seeds : c.hops.empty() ? 0 : c.hops[0].frontier[0];
  h.max_nodes = c.max_nodes[0];
  h.max_edges = c.max_edges[0];
  if (!c.feature_rows.empty()) h.max_feature_rows = c.feature_rows[0];
  for (const BatchCapacity::Hop& hop : c.hops) {
    h.hops.push_back({hop.frontier[0], hop.edges[0], hop.nodes_after.empty() ? 0 : hop.nodes_after[0]});
  }
  return h;
}
}  // namespace

HomogeneousLayout HomogeneousLayoutOf(const BatchLayout& layout) {
  const BatchLayout::TypeArrays& a = layout.types[0];
  HomogeneousLayout h = HomogeneousLayout::Make(ToHomogeneousCapacity(layout.capacity, layout.seed_type),
                                                layout.num_hops, a.feature_row_bytes);
  h.total_bytes = layout.total_bytes;  // the slot's stride: the arrays after API 1.0's (edge data, pairs) too
  return h;
}

BatchLayout AsBatchLayout(const HomogeneousLayout& layout) {
  BatchLayout typed;
  typed.num_hops = layout.num_hops;
  typed.seed_type = 0;
  const HomogeneousCapacity& c = layout.capacity;
  typed.capacity.max_nodes = {c.max_nodes};
  typed.capacity.max_edges = {c.max_edges};
  typed.capacity.max_seeds = c.max_seeds;
  if (c.max_feature_rows >= 0) typed.capacity.feature_rows = {c.max_feature_rows};
  for (const HopBound& hop : c.hops) typed.capacity.hops.push_back({{hop.frontier}, {hop.edges}, {hop.nodes_after}});
  typed.types.push_back(
      {layout.node_ids, layout.num_nodes_per_hop, layout.features, layout.labels, layout.feature_row_bytes});
  typed.relations.push_back({layout.edge_src, layout.edge_dst, layout.num_edges_per_hop, SIZE_MAX, {}});
  typed.total_bytes = layout.total_bytes;
  return typed;
}

BatchView AsBatchView(const HomogeneousView& view) {
  BatchView typed;
  typed.num_hops = view.num_hops;
  typed.types.push_back({view.node_ids, view.num_nodes_per_hop, view.features, view.labels, view.feature_rows});
  typed.relations.push_back({view.edge_src, view.edge_dst, view.num_edges_per_hop, nullptr, {}});
  return typed;
}

std::vector<BatchView> AsBatchViews(const std::vector<HomogeneousView>& views) {
  std::vector<BatchView> typed;
  for (const HomogeneousView& view : views) typed.push_back(AsBatchView(view));
  return typed;
}

absl::StatusOr<BatchCapacity> ComputeBatchCapacity(const SamplingSpec& spec, const DatasetSchema& schema,
                                                   const std::vector<int64_t>& max_in_degree) {
  const size_t types = schema.node_types.size(), relations = schema.relations.size();
  BatchCapacity c;
  c.max_nodes.assign(types, 0);
  c.max_edges.assign(relations, 0);
  std::vector<int64_t> frontier(types, 0);
  std::vector<bool> distinct(types, true);  // frontier entries are distinct nodes (all but repeated seeds)
  // A disjoint batch's subgraphs each hold a node at most once: bounds per subgraph, times their count.
  const int64_t copies = spec.disjoint ? spec.MaxSubgraphs() : 1;
  const auto type_nodes = [&](size_t t) { return SaturatingMul(schema.node_types[t].num_nodes, copies); };
  if (spec.seed_type >= 0) {
    const int64_t seed_nodes = schema.node_types[spec.seed_type].num_nodes;
    c.max_seeds = spec.seeds_may_repeat ? spec.batch_size : std::min(spec.batch_size, seed_nodes);
    frontier[spec.seed_type] = c.max_seeds;
    c.max_nodes[spec.seed_type] = c.max_seeds;
    distinct[spec.seed_type] = !spec.seeds_may_repeat || spec.disjoint;
  } else {  // a link batch: its endpoints at hop 0 (distinct, or a disjoint batch's each in its subgraph)
    for (size_t t = 0; t < types; ++t) {
      frontier[t] = c.max_nodes[t] =
          spec.disjoint ? spec.max_hop0[t] : std::min(spec.max_hop0[t], schema.node_types[t].num_nodes);
    }
  }
  for (size_t r = 0; r < relations && spec.temporal(); ++r) {
    if (spec.TimeArrayOf(static_cast<int>(r), schema) >= 0 && max_in_degree[r] > int64_t{UINT32_MAX}) {
      return absl::InvalidArgumentError(absl::StrCat("temporal sampling through ", schema.relations[r].key(),
                                                     ": a node has ", max_in_degree[r],
                                                     " in-edges, and time orders hold lists below 2^32"));
    }
  }
  for (int hop = 0; hop < spec.num_hops(); ++hop) {
    std::vector<int64_t> reached(types, 0);
    BatchCapacity::Hop& bound = c.hops.emplace_back();
    bound.frontier = frontier;
    for (size_t r = 0; r < relations; ++r) {
      const RelationSchema& rel = schema.relations[r];
      const int32_t fanout = spec.fanouts[r][hop];
      const int64_t per_node = DrawCount(max_in_degree[r], fanout, spec.neighbors);
      // LABOR keeps per_node in-edges a node on average, up to all: a bound on the hop (sampling.h, labor).
      int64_t edges = spec.labor.active ? LaborHopEdges(frontier[rel.dst_type], per_node, max_in_degree[r])
                                        : SaturatingMul(frontier[rel.dst_type], per_node);
      // Distinct destinations draw each edge once at most (where draws are distinct).
      if (distinct[rel.dst_type] && spec.neighbors.Distinct())
        edges = std::min(edges, SaturatingMul(rel.num_edges, copies));
      bound.edges.push_back(edges);
      c.max_edges[r] = SaturatingAdd(c.max_edges[r], edges);
      reached[rel.src_type] = SaturatingAdd(reached[rel.src_type], edges);
    }
    for (size_t t = 0; t < types; ++t) {
      frontier[t] = std::min(reached[t], type_nodes(t));
      distinct[t] = true;
      const int64_t cap = t == static_cast<size_t>(spec.seed_type) && spec.seeds_may_repeat && !spec.disjoint
                              ? SaturatingAdd(c.max_seeds, schema.node_types[t].num_nodes - 1)
                              : type_nodes(t);
      c.max_nodes[t] = std::min(SaturatingAdd(c.max_nodes[t], frontier[t]), cap);
    }
    bound.nodes_after = c.max_nodes;
  }
  for (size_t r = 0; r < relations && spec.induced; ++r) {  // every in-edge of every node, at most (sampling.h)
    const RelationSchema& rel = schema.relations[r];
    const int64_t induced = std::min(rel.num_edges, SaturatingMul(c.max_nodes[rel.dst_type], max_in_degree[r]));
    c.max_edges[r] = std::max(c.max_edges[r], induced);
  }
  constexpr int64_t kLimit = (int64_t{1} << 31) - 1;  // local indices and per-hop counts are int32
  if (schema.format_version == 1 && (c.max_nodes[0] > kLimit || c.max_edges[0] > kLimit)) {
    return absl::InvalidArgumentError(absl::StrCat("a batch could hold ", c.max_nodes[0], " nodes and ", c.max_edges[0],
                                                   " edges, beyond the int32 layout: lower batch_size or fanouts"));
  }
  for (size_t t = 0; t < types; ++t) {
    if (c.max_nodes[t] > kLimit) {
      return absl::InvalidArgumentError(absl::StrCat("a batch could hold ", c.max_nodes[t], " '",
                                                     schema.node_types[t].name,
                                                     "' nodes, beyond the int32 layout: lower batch_size or fanouts"));
    }
  }
  for (size_t r = 0; r < relations; ++r) {
    if (c.max_edges[r] > kLimit) {
      return absl::InvalidArgumentError(absl::StrCat("a batch could hold ", c.max_edges[r], " ",
                                                     schema.relations[r].key(),
                                                     " edges, beyond the int32 layout: lower batch_size or fanouts"));
    }
  }
  return c;
}

absl::Status LaborOutgrownError(absl::string_view relation, int hop, int64_t bound) {
  return absl::ResourceExhaustedError(absl::StrCat(
      "LABOR: ", relation, " kept more edges", hop >= 0 ? absl::StrCat(" at hop ", hop + 1) : "",
      " than the batch holds", bound >= 0 ? absl::StrCat(" (", bound, ")") : "", " in each of ", labor::kMaxAttempts,
      " draws: its destinations share sources, which LABOR keeps or drops together; sample it with a lower fanout "
      "or without labor"));
}

int64_t LaborHopEdges(int64_t frontier, int64_t expected, int64_t most) {
  const int64_t mean = SaturatingMul(frontier, expected);
  const auto margin = static_cast<int64_t>(8 * std::sqrt(static_cast<double>(mean))) + 256;
  return std::min(SaturatingMul(frontier, most), SaturatingAdd(SaturatingAdd(mean, mean / 2), margin));
}

DatasetSchema HomogeneousSchema(int64_t num_nodes, int64_t num_edges) {
  DatasetSchema schema;
  schema.format_version = 1;
  NodeTypeSchema& nodes = schema.node_types.emplace_back();
  nodes.name = "node";
  nodes.num_nodes = num_nodes;
  RelationSchema& edges = schema.relations.emplace_back();
  edges.src = edges.dst = "node";
  edges.name = "to";
  edges.num_edges = num_edges;
  schema.num_nodes = num_nodes;
  return schema;
}

absl::StatusOr<HomogeneousCapacity> ComputeHomogeneousCapacity(const SamplingSpec& spec, int64_t num_nodes,
                                                               int64_t num_edges, int64_t max_in_degree) {
  GNND_ASSIGN_OR_RETURN(const BatchCapacity c,
                        ComputeBatchCapacity(spec, HomogeneousSchema(num_nodes, num_edges), {max_in_degree}));
  return ToHomogeneousCapacity(c, spec.seed_type);
}

namespace {
// Each relation's edge data, placed after the layout's arrays so far.
void PlaceEdgeData(const SamplingSpec& spec, const DatasetSchema& schema, BatchLayout& l) {
  ArrayPlacer placer(l.total_bytes);
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const RelationSchema& rel = schema.relations[r];
    if (!spec.CarriesEdgeData(static_cast<int>(r), rel.edge_ids >= 0)) continue;
    BatchLayout::RelationArrays& a = l.relations[r];
    const size_t edges = static_cast<size_t>(l.capacity.max_edges[r]);
    a.e_id = placer.Place(sizeof(int64_t) * edges);
    for (int i : spec.EdgeAttributesOf(static_cast<int>(r))) {
      const EdgeAttributeSchema& attr = rel.edge_attrs[i];
      const size_t row = static_cast<size_t>(std::max<int64_t>(attr.dim, 1)) * DTypeSize(attr.dtype);
      a.attrs.push_back({attr.array, placer.Place(row * edges), row});
    }
  }
  l.total_bytes = placer.end();
}

// Each type's node attributes (all of them: PyG's batches carry every node attribute), after the layout's
// arrays so far; the rows of as many nodes as the type's node_ids hold.
void PlaceNodeData(const DatasetSchema& schema, BatchLayout& l) {
  ArrayPlacer placer(l.total_bytes);
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const size_t nodes = static_cast<size_t>(l.capacity.max_nodes[t]);
    for (const EdgeAttributeSchema& attr : schema.node_types[t].node_attrs) {
      const size_t row = static_cast<size_t>(std::max<int64_t>(attr.dim, 1)) * DTypeSize(attr.dtype);
      l.types[t].attrs.push_back({attr.array, placer.Place(row * nodes), row});
    }
  }
  l.total_bytes = placer.end();
}

// A disjoint batch's subgraph arrays, after the layout's arrays so far: each type's batch (every node's
// subgraph), and a temporal node batch's seed times.
void PlaceSubgraphData(const SamplingSpec& spec, BatchLayout& l) {
  if (!spec.disjoint) return;
  ArrayPlacer placer(l.total_bytes);
  for (size_t t = 0; t < l.types.size(); ++t) {
    l.types[t].batch = placer.Place(sizeof(int64_t) * static_cast<size_t>(l.capacity.max_nodes[t]));
    if (spec.temporal() && static_cast<int>(t) == spec.seed_type) {
      l.types[t].seed_time = placer.Place(sizeof(int64_t) * static_cast<size_t>(l.capacity.max_seeds));
    }
  }
  l.total_bytes = placer.end();
}

// A LABOR batch's edge weights, after the layout's arrays so far.
void PlaceLaborWeights(const SamplingSpec& spec, BatchLayout& l) {
  if (!spec.labor.active) return;
  ArrayPlacer placer(l.total_bytes);
  for (size_t r = 0; r < l.relations.size(); ++r) {
    l.relations[r].edge_weight = placer.Place(sizeof(float) * static_cast<size_t>(l.capacity.max_edges[r]));
  }
  l.total_bytes = placer.end();
}
}  // namespace

BatchLayout BatchLayout::Make(const BatchCapacity& capacity, const SamplingSpec& spec, const DatasetSchema& schema) {
  BatchLayout l = MakeWithoutEdgeData(capacity, spec, schema);
  PlaceEdgeData(spec, schema, l);
  PlaceNodeData(schema, l);
  PlaceSubgraphData(spec, l);
  PlaceLaborWeights(spec, l);
  return l;
}

BatchLayout BatchLayout::MakeWithoutEdgeData(const BatchCapacity& capacity, const SamplingSpec& spec,
                                             const DatasetSchema& schema) {
  if (schema.format_version == 1) {
    const NodeTypeSchema& nodes = schema.node_types[0];
    BatchLayout l =
        AsBatchLayout(HomogeneousLayout::Make(ToHomogeneousCapacity(capacity, spec.seed_type), spec.num_hops(),
                                              nodes.features >= 0 ? nodes.feature_row_bytes() : 0));
    l.seed_type = spec.seed_type;
    l.homogeneous = true;
    l.capacity = capacity;
    TypeArrays& a = l.types[0];
    if (nodes.features < 0) a.features = SIZE_MAX;
    if (spec.seed_type != 0 || nodes.labels < 0) a.labels = SIZE_MAX;
    return l;
  }
  BatchLayout l;
  l.num_hops = spec.num_hops();
  l.seed_type = spec.seed_type;
  l.capacity = capacity;
  ArrayPlacer placer;
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const NodeTypeSchema& type = schema.node_types[t];
    TypeArrays& a = l.types.emplace_back();
    const size_t nodes = static_cast<size_t>(capacity.max_nodes[t]);
    a.node_ids = placer.Place(sizeof(int64_t) * nodes);
    a.num_nodes_per_hop = placer.Place(sizeof(int32_t) * (l.num_hops + 1));
    if (type.features >= 0) {
      a.feature_row_bytes = type.feature_row_bytes();
      a.features = placer.Place(a.feature_row_bytes * static_cast<size_t>(capacity.FeatureRows(t)));
    }
    if (static_cast<int>(t) == spec.seed_type && type.labels >= 0) {
      a.labels = placer.Place(sizeof(int64_t) * capacity.max_seeds);
    }
  }
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    RelationArrays& a = l.relations.emplace_back();
    const size_t edges = static_cast<size_t>(capacity.max_edges[r]);
    a.edge_src = placer.Place(sizeof(int32_t) * edges);
    a.edge_dst = placer.Place(sizeof(int32_t) * edges);
    a.num_edges_per_hop = placer.Place(sizeof(int32_t) * l.num_hops);
  }
  l.total_bytes = placer.end();
  return l;
}

BatchView BatchView::At(void* base, const BatchLayout& layout) {
  auto* bytes = static_cast<std::byte*>(base);
  BatchView v;
  v.num_hops = layout.num_hops;
  for (size_t t = 0; t < layout.types.size(); ++t) {
    const BatchLayout::TypeArrays& a = layout.types[t];
    v.types.push_back(
        {reinterpret_cast<int64_t*>(bytes + a.node_ids), reinterpret_cast<int32_t*>(bytes + a.num_nodes_per_hop),
         a.features == SIZE_MAX ? nullptr : bytes + a.features,
         a.labels == SIZE_MAX ? nullptr : reinterpret_cast<int64_t*>(bytes + a.labels), layout.capacity.FeatureRows(t),
         a.batch == SIZE_MAX ? nullptr : reinterpret_cast<int64_t*>(bytes + a.batch),
         a.seed_time == SIZE_MAX ? nullptr : reinterpret_cast<int64_t*>(bytes + a.seed_time)});
    for (const BatchLayout::EdgeRows& rows : a.attrs)
      v.types.back().attrs.push_back({bytes + rows.offset, rows.array, rows.row_bytes});
  }
  for (const BatchLayout::RelationArrays& a : layout.relations) {
    BatchView::Relation& r = v.relations.emplace_back();
    r.edge_src = reinterpret_cast<int32_t*>(bytes + a.edge_src);
    r.edge_dst = reinterpret_cast<int32_t*>(bytes + a.edge_dst);
    r.num_edges_per_hop = reinterpret_cast<int32_t*>(bytes + a.num_edges_per_hop);
    if (a.e_id != SIZE_MAX) r.e_id = reinterpret_cast<int64_t*>(bytes + a.e_id);
    if (a.edge_weight != SIZE_MAX) r.edge_weight = reinterpret_cast<float*>(bytes + a.edge_weight);
    for (const BatchCapacity::Hop& hop : layout.capacity.hops)
      r.max_edges_per_hop.push_back(hop.edges[v.relations.size() - 1]);
    for (const BatchLayout::EdgeRows& rows : a.attrs)
      r.attrs.push_back({bytes + rows.offset, rows.array, rows.row_bytes});
  }
  return v;
}

int64_t BatchView::num_nodes(int type) const {
  int64_t n = 0;
  for (int h = 0; h <= num_hops; ++h) n += types[type].num_nodes_per_hop[h];
  return n;
}

int64_t BatchView::num_edges(int relation) const {
  int64_t n = 0;
  for (int h = 0; h < num_hops; ++h) n += relations[relation].num_edges_per_hop[h];
  return n;
}

namespace {
BatchSchema TypedBatchSchema(const BatchLayout& layout, const DatasetSchema& schema) {
  BatchSchema s;
  const int hops = layout.num_hops;
  auto count = [&s](std::string name, int64_t capacity) {
    s.counts.push_back(std::move(name));
    s.capacity.push_back(capacity);
    return static_cast<int>(s.counts.size() - 1);
  };
  const int node_hops = count("node_hops", hops + 1), edge_hops = count("edge_hops", hops);
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const std::string& name = schema.node_types[t].name;
    const BatchLayout::TypeArrays& a = layout.types[t];
    const int64_t cap = layout.capacity.max_nodes[t];
    const int nodes = count(name + ".nodes", cap);
    for (int h = 0; h <= hops; ++h) count(absl::StrCat(name, ".nodes_hop", h), cap);
    s.arrays.push_back({name + ".node_ids", DType::kInt64, {}, nodes, a.node_ids});
    s.arrays.push_back({name + ".num_nodes_per_hop", DType::kInt32, {}, node_hops, a.num_nodes_per_hop});
    if (a.features != SIZE_MAX) {
      const NodeTypeSchema& type = schema.node_types[t];
      const int64_t rows = layout.capacity.FeatureRows(t);
      s.arrays.push_back(
          {name + ".features", type.feature_dtype, {type.feature_dim}, nodes, a.features, rows < cap ? rows : -1});
    }
    if (static_cast<int>(t) == layout.seed_type) {
      const int seeds = count(name + ".seeds", layout.capacity.max_seeds);
      if (a.labels != SIZE_MAX) s.arrays.push_back({name + ".labels", DType::kInt64, {}, seeds, a.labels});
    }
  }
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const std::string key = schema.relations[r].key();
    const BatchLayout::RelationArrays& a = layout.relations[r];
    const int64_t cap = layout.capacity.max_edges[r];
    const int edges = count(key + ".edges", cap);
    for (int h = 0; h < hops; ++h) count(absl::StrCat(key, ".edges_hop", h), cap);
    s.arrays.push_back({key + ".edge_src", DType::kInt32, {}, edges, a.edge_src});
    s.arrays.push_back({key + ".edge_dst", DType::kInt32, {}, edges, a.edge_dst});
    s.arrays.push_back({key + ".num_edges_per_hop", DType::kInt32, {}, edge_hops, a.num_edges_per_hop});
  }
  s.slot_bytes = layout.total_bytes;
  return s;
}

std::vector<int64_t> TypedBatchCounts(const BatchView& view, int seed_type) {
  const int hops = view.num_hops;
  std::vector<int64_t> counts = {hops + 1, hops};
  for (size_t t = 0; t < view.types.size(); ++t) {
    counts.push_back(view.num_nodes(static_cast<int>(t)));
    for (int h = 0; h <= hops; ++h) counts.push_back(view.types[t].num_nodes_per_hop[h]);
    if (static_cast<int>(t) == seed_type) counts.push_back(view.types[t].num_nodes_per_hop[0]);
  }
  for (size_t r = 0; r < view.relations.size(); ++r) {
    counts.push_back(view.num_edges(static_cast<int>(r)));
    for (int h = 0; h < hops; ++h) counts.push_back(view.relations[r].num_edges_per_hop[h]);
  }
  return counts;
}

// Each relation's edge data (a LABOR batch's edge_weight, e_id, then its attributes by name), counted by
// `edges[r]`; `prefix(r)` before each name.
template <typename Prefix>
void AddEdgeDataSchema(const BatchLayout& layout, const DatasetSchema& schema, const std::vector<int>& edges,
                       Prefix prefix, BatchSchema& s) {
  for (size_t r = 0; r < layout.relations.size(); ++r) {
    const BatchLayout::RelationArrays& a = layout.relations[r];
    if (a.edge_weight != SIZE_MAX) {
      s.arrays.push_back({prefix(r) + "edge_weight", DType::kFloat32, {}, edges[r], a.edge_weight});
    }
    if (a.e_id == SIZE_MAX) continue;
    const RelationSchema& rel = schema.relations[r];
    s.arrays.push_back({prefix(r) + "e_id", DType::kInt64, {}, edges[r], a.e_id});
    for (const BatchLayout::EdgeRows& rows : a.attrs) {
      const auto attr = std::find_if(rel.edge_attrs.begin(), rel.edge_attrs.end(),
                                     [&](const EdgeAttributeSchema& e) { return e.array == rows.array; });
      std::vector<int64_t> row_shape;
      if (attr->dim > 0) row_shape.push_back(attr->dim);
      s.arrays.push_back({prefix(r) + attr->name, attr->dtype, std::move(row_shape), edges[r], rows.offset});
    }
  }
}

// Each type's node attributes by name, counted by `nodes(t)`; `prefix(t)` before each name.
template <typename Nodes, typename Prefix>
void AddNodeDataSchema(const BatchLayout& layout, const DatasetSchema& schema, Nodes nodes, Prefix prefix,
                       BatchSchema& s) {
  for (size_t t = 0; t < layout.types.size(); ++t) {
    const std::vector<EdgeAttributeSchema>& attrs = schema.node_types[t].node_attrs;
    for (const BatchLayout::EdgeRows& rows : layout.types[t].attrs) {
      const auto attr =
          std::find_if(attrs.begin(), attrs.end(), [&](const EdgeAttributeSchema& a) { return a.array == rows.array; });
      std::vector<int64_t> row_shape;
      if (attr->dim > 0) row_shape.push_back(attr->dim);
      s.arrays.push_back({prefix(t) + attr->name, attr->dtype, std::move(row_shape), nodes(t), rows.offset});
    }
  }
}

// Each type's subgraph arrays (a disjoint batch's): "batch" counted by its nodes, "seed_time" by the seeds;
// `nodes(t)`, `seeds`: those counts, `prefix(t)` before each name.
template <typename Nodes, typename Prefix>
void AddSubgraphSchema(const BatchLayout& layout, Nodes nodes, int seeds, Prefix prefix, BatchSchema& s) {
  for (size_t t = 0; t < layout.types.size(); ++t) {
    const BatchLayout::TypeArrays& a = layout.types[t];
    if (a.batch != SIZE_MAX) s.arrays.push_back({prefix(t) + "batch", DType::kInt64, {}, nodes(t), a.batch});
    if (a.seed_time != SIZE_MAX) s.arrays.push_back({prefix(t) + "seed_time", DType::kInt64, {}, seeds, a.seed_time});
  }
}

// The pair arrays and their two counts, after a graph's; `prefix` before each array's name.
void AddPairSchema(const PairArrays& pairs, const std::string& prefix, BatchSchema& s) {
  const int pair_count = static_cast<int>(s.counts.size()), positives = pair_count + 1;
  s.counts.push_back("pairs");
  s.capacity.push_back(pairs.max_pairs);
  s.counts.push_back("positives");
  s.capacity.push_back(pairs.max_positives);
  s.arrays.push_back({prefix + "input_id", DType::kInt64, {}, positives, pairs.input_id});
  if (pairs.src_index != SIZE_MAX) {
    s.arrays.push_back({prefix + "src_index", DType::kInt32, {}, positives, pairs.src_index});
    s.arrays.push_back({prefix + "dst_pos_index", DType::kInt32, {}, positives, pairs.dst_pos_index});
    s.arrays.push_back({prefix + "dst_neg_index", DType::kInt32, {pairs.amount}, positives, pairs.dst_neg_index});
  } else {
    s.arrays.push_back({prefix + "edge_label_index", DType::kInt32, {2}, pair_count, pairs.edge_label_index});
    s.arrays.push_back(
        {prefix + "edge_label", pairs.labeled ? DType::kInt64 : DType::kFloat32, {}, pair_count, pairs.edge_label});
  }
  if (pairs.edge_label_time != SIZE_MAX) {
    s.arrays.push_back({prefix + "edge_label_time",
                        DType::kInt64,
                        {},
                        pairs.src_index != SIZE_MAX ? positives : pair_count,
                        pairs.edge_label_time});
  }
}

}  // namespace

BatchSchema BatchSchemaOf(const BatchLayout& layout, const DatasetSchema& schema) {
  BatchSchema s;
  if (layout.homogeneous) {
    const NodeTypeSchema& nodes = schema.node_types[0];
    s = HomogeneousBatchSchema(HomogeneousLayoutOf(layout), nodes.feature_dim, nodes.feature_dtype);
    // No features or labels where the dataset has none (a link batch has no labels either).
    std::erase_if(s.arrays, [&](const BatchArraySchema& a) {
      return (a.name == "labels" && (layout.pairs || nodes.labels < 0)) || (a.name == "features" && nodes.features < 0);
    });
    AddEdgeDataSchema(
        layout, schema, {s.CountNamed("edges")}, [](size_t) { return std::string(); }, s);
    const int node_count = s.CountNamed("nodes");
    AddNodeDataSchema(
        layout, schema, [&](size_t) { return node_count; }, [](size_t) { return std::string(); }, s);
    AddSubgraphSchema(
        layout, [&](size_t) { return node_count; }, s.CountNamed("seeds"), [](size_t) { return std::string(); }, s);
  } else {
    s = TypedBatchSchema(layout, schema);
    std::vector<int> edges;
    for (const RelationSchema& rel : schema.relations) edges.push_back(s.CountNamed(rel.key() + ".edges"));
    AddEdgeDataSchema(
        layout, schema, edges, [&](size_t r) { return schema.relations[r].key() + "."; }, s);
    AddNodeDataSchema(
        layout, schema, [&](size_t t) { return s.CountNamed(schema.node_types[t].name + ".nodes"); },
        [&](size_t t) { return schema.node_types[t].name + "."; }, s);
    const int seeds = layout.seed_type < 0 ? -1 : s.CountNamed(schema.node_types[layout.seed_type].name + ".seeds");
    AddSubgraphSchema(
        layout, [&](size_t t) { return s.CountNamed(schema.node_types[t].name + ".nodes"); }, seeds,
        [&](size_t t) { return schema.node_types[t].name + "."; }, s);
  }
  if (layout.pairs) {
    AddPairSchema(*layout.pairs, layout.homogeneous ? "" : schema.relations[layout.pairs->relation].key() + ".", s);
  }
  s.slot_bytes = layout.total_bytes;
  return s;
}

std::vector<int64_t> BatchCountsOf(const BatchView& view, const BatchLayout& layout, int64_t pairs, int64_t positives) {
  const size_t hops = static_cast<size_t>(view.num_hops);
  std::vector<int64_t> counts = layout.homogeneous ? HomogeneousBatchCounts({view.types[0].num_nodes_per_hop, hops + 1},
                                                                            {view.relations[0].num_edges_per_hop, hops})
                                                   : TypedBatchCounts(view, layout.seed_type);
  if (layout.pairs) {
    counts.push_back(pairs);
    counts.push_back(positives);
  }
  return counts;
}

void CopyBatchGraph(const BatchView& from, const BatchView& to) {
  for (size_t t = 0; t < from.types.size(); ++t) {
    const int64_t nodes = from.num_nodes(static_cast<int>(t));
    std::copy_n(from.types[t].num_nodes_per_hop, from.num_hops + 1, to.types[t].num_nodes_per_hop);
    std::copy_n(from.types[t].node_ids, nodes, to.types[t].node_ids);
    if (from.types[t].batch != nullptr) std::copy_n(from.types[t].batch, nodes, to.types[t].batch);
    if (from.types[t].seed_time != nullptr) {
      std::copy_n(from.types[t].seed_time, from.types[t].num_nodes_per_hop[0], to.types[t].seed_time);
    }
  }
  for (size_t r = 0; r < from.relations.size(); ++r) {
    const int64_t edges = from.num_edges(static_cast<int>(r));
    std::copy_n(from.relations[r].num_edges_per_hop, from.num_hops, to.relations[r].num_edges_per_hop);
    std::copy_n(from.relations[r].edge_src, edges, to.relations[r].edge_src);
    std::copy_n(from.relations[r].edge_dst, edges, to.relations[r].edge_dst);
    if (from.relations[r].edge_weight != nullptr && to.relations[r].edge_weight != nullptr) {
      std::copy_n(from.relations[r].edge_weight, edges, to.relations[r].edge_weight);
    }
    if (from.relations[r].e_id == nullptr || to.relations[r].e_id == nullptr) continue;
    std::copy_n(from.relations[r].e_id, edges, to.relations[r].e_id);
    for (size_t i = 0; i < from.relations[r].attrs.size(); ++i) {
      const BatchView::EdgeRows& rows = from.relations[r].attrs[i];
      std::memcpy(to.relations[r].attrs[i].data, rows.data, rows.row_bytes * static_cast<size_t>(edges));
    }
  }
}

DatasetSchema WithoutNodeData(DatasetSchema schema) {
  for (NodeTypeSchema& type : schema.node_types) {
    type.features = type.labels = -1;
    type.node_attrs.clear();
  }
  return schema;
}

}  // namespace gnnd
