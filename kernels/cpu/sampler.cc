#include "kernels/cpu/sampler.h"

#include <algorithm>
#include <boost/sort/spreadsort/integer_sort.hpp>
#include <chrono>
#include <cstring>
#include <utility>

#include "common/base/status.h"
#include "common/batch/sampling.h"
#include "kernels/cpu/draw.h"

namespace gnnd {

CpuSampler::CpuSampler(const GraphData& graph, const SamplingSpec& spec, uint64_t seed)
    : graph_(graph),
      spec_(spec),
      seed_(seed),
      local_(graph.schema.node_types.size()),
      fresh_index_(graph.schema.node_types.size()),
      reset_(graph.schema.node_types.size()),
      time_orders_(graph.schema.relations.size(), nullptr),
      sampled_(graph.schema.relations.size()),
      entries_(graph.schema.relations.size()) {}

namespace {

// The (relation, time array) of each time order `spec` draws through.
std::vector<std::pair<int, int>> TimeOrdersOf(const GraphData& graph, const SamplingSpec& spec) {
  std::vector<std::pair<int, int>> orders;
  for (size_t r = 0; r < graph.schema.relations.size() && spec.temporal(); ++r) {
    const int times = spec.TimeArrayOf(static_cast<int>(r), graph.schema);
    if (times >= 0) orders.emplace_back(static_cast<int>(r), times);
  }
  return orders;
}

}  // namespace

uint64_t CpuSampler::DrawPreparationBytes(const GraphData& graph, const SamplingSpec& spec) {
  uint64_t bytes = 0;
  for (const auto& [r, times] : TimeOrdersOf(graph, spec)) bytes += graph.time_orders->BytesToBuild(graph, r, times);
  return bytes;
}

absl::Status CpuSampler::PrepareDraws(const GraphData& graph, const SamplingSpec& spec) {
  for (const auto& [r, times] : TimeOrdersOf(graph, spec)) {
    GNND_RETURN_IF_ERROR(graph.time_orders->Get(graph, r, times).status());
  }
  return absl::OkStatus();
}

CpuSampler::Draw CpuSampler::DrawOf(int relation) {
  const RelationSchema& r = graph_.schema.relations[relation];
  if (spec_.labor.active) {
    return LaborRule{
        .key = labor_key_, .dependency = spec_.labor.dependency, .source_type = static_cast<uint32_t>(r.src_type)};
  }
  const int times = spec_.TimeArrayOf(relation, graph_.schema);  // -1 too for a relation never sampled through
  if (times >= 0) {
    TemporalRule temporal{.rule = spec_.time.rule};
    (spec_.time.node_level ? temporal.node_times : temporal.edge_times) =
        static_cast<const int64_t*>(graph_.arrays.data[times]);
    if (r.edge_ids >= 0) temporal.edge_ids = static_cast<const int64_t*>(graph_.arrays.data[r.edge_ids]);
    const uint32_t*& order = time_orders_[relation];
    if (order == nullptr) order = *graph_.time_orders->Get(graph_, relation, times);  // PrepareDraws'
    temporal.order = order;
    return temporal;
  }
  if (const int weight = spec_.WeightOf(relation); weight >= 0) {
    return WeightedRule{.weights = static_cast<const float*>(graph_.arrays.data[r.edge_attrs[weight].array]),
                        .rule = spec_.neighbors};
  }
  return UniformRule{.rule = spec_.neighbors};
}

template <typename Index>
void CpuSampler::SampleRelation(int relation, int hop, const SamplingKey& key, uint64_t batch_index,
                                const BatchView& out, int64_t frontier_begin, int64_t frontier_end,
                                std::vector<int64_t>& sampled) {
  std::visit(
      [&](const auto& policy) {
        DrawFrontier<Index>(policy, relation, hop, key, batch_index, out, frontier_begin, frontier_end, sampled);
      },
      DrawOf(relation));
}

template <typename Index, typename Policy>
void CpuSampler::DrawFrontier(const Policy& policy, int relation, int hop, const SamplingKey& key, uint64_t batch_index,
                              const BatchView& out, int64_t frontier_begin, int64_t frontier_end,
                              std::vector<int64_t>& sampled) {
  const RelationSchema& r = graph_.schema.relations[relation];
  const auto* indptr = static_cast<const int64_t*>(graph_.arrays.data[r.indptr]);
  const BatchView::Relation& edges = out.relations[relation];
  int64_t num_edges = 0;
  for (int h = 0; h < hop; ++h) num_edges += edges.num_edges_per_hop[h];
  const int64_t hop_begin = num_edges;
  const int64_t* dst_ids = out.types[r.dst_type].node_ids;
  const EdgeExclusions* excluded = excluded_.empty() || excluded_[relation].empty() ? nullptr : &excluded_[relation];
  const int64_t* subgraphs = out.types[r.dst_type].batch;  // a disjoint batch's
  NodeDraw<Index> n{.batch_index = batch_index,
                    .hop = static_cast<uint32_t>(hop + 1),
                    .relation = static_cast<uint32_t>(relation),
                    .indices = static_cast<const Index*>(graph_.arrays.data[r.indices]),
                    .fanout = spec_.fanouts[relation][hop]};
  std::vector<int64_t>& offsets = draw_.offsets;
  for (int64_t v = frontier_begin; v < frontier_end && n.fanout != 0; ++v) {
    n.node = dst_ids[v];
    const int64_t subgraph = subgraphs == nullptr ? 0 : subgraphs[v];
    n.key = subgraphs == nullptr ? key : SubgraphKey(key, static_cast<uint64_t>(subgraph));
    if (!seed_times_.empty()) n.seed_time = seed_times_[subgraph];  // a temporal batch's subgraph times
    DrawNode(policy, n, indptr, excluded == nullptr ? std::span<const int64_t>() : excluded->Of(n.node), draw_,
             offsets);
    const auto k = static_cast<int64_t>(offsets.size());
    if constexpr (Policy::kMayOutgrowHop) {
      if (!edges.max_edges_per_hop.empty() && k > edges.max_edges_per_hop[hop] - (num_edges - hop_begin)) {
        sampled.clear();  // this attempt leaves the relation's hop empty, and the batch is drawn again
        if (!labor_overflowed_) {
          labor_overflow_relation_ = relation;
          labor_overflow_hop_ = hop;
        }
        labor_overflowed_ = true;
        return;
      }
    }
    if constexpr (requires { policy.EdgeWeight(n); }) {
      if (edges.edge_weight != nullptr) std::fill_n(edges.edge_weight + num_edges, k, policy.EdgeWeight(n));
    }
    for (int64_t i = 0; i < k; ++i) {
      const int64_t source = n.indices[n.first + offsets[i]];
      sampled.push_back(subgraphs == nullptr ? source : NodeKey(r.src_type, subgraph, source));
      if (edges.e_id != nullptr) edges.e_id[num_edges + i] = n.first + offsets[i];  // GatherEdgeRows maps them
    }
    std::fill_n(edges.edge_dst + num_edges, k, static_cast<int32_t>(v));
    num_edges += k;
  }
}

template <typename Index>
void CpuSampler::InduceEdges(int relation, const BatchView& out) {
  const RelationSchema& r = graph_.schema.relations[relation];
  const auto* indptr = static_cast<const int64_t*>(graph_.arrays.data[r.indptr]);
  const auto* indices = static_cast<const Index*>(graph_.arrays.data[r.indices]);
  const auto& sources = local_[r.src_type];
  const BatchView::Relation& edges = out.relations[relation];
  const int64_t* dst_ids = out.types[r.dst_type].node_ids;
  int64_t k = 0;
  for (int64_t v = 0; v < num_nodes_[r.dst_type]; ++v) {
    for (int64_t p = indptr[dst_ids[v]]; p < indptr[dst_ids[v] + 1]; ++p) {
      const auto source = sources.find(static_cast<int64_t>(indices[p]));
      if (source == sources.end()) continue;
      edges.edge_src[k] = LocalIndex(r.src_type, source->second);
      edges.edge_dst[k] = static_cast<int32_t>(v);
      if (edges.e_id != nullptr) edges.e_id[k] = p;  // a CSC position until GatherEdgeRows
      ++k;
    }
  }
  std::fill_n(edges.num_edges_per_hop, spec_.num_hops(), 0);
  edges.num_edges_per_hop[0] = static_cast<int32_t>(k);
}

void CpuSampler::Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds, const BatchView& out,
                        SampleTimes* times, std::span<const int64_t> seed_times) {
  const auto start = std::chrono::steady_clock::now();
  SampleGraph(epoch, batch_index, seeds, out, seed_times);
  const auto sampled = std::chrono::steady_clock::now();
  Gather(out);
  if (times != nullptr) {
    times->sample = std::chrono::duration<double>(sampled - start).count();
    times->gather = std::chrono::duration<double>(std::chrono::steady_clock::now() - sampled).count();
  }
}

void CpuSampler::SampleGraph(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds, const BatchView& out,
                             std::span<const int64_t> seed_times) {
  if (spec_.temporal()) {  // each subgraph's time: given, or its seed's own
    if (spec_.time.seed_times_given) {
      seed_times_.assign(seed_times.begin(), seed_times.end());
    } else {
      const auto* node_times =
          static_cast<const int64_t*>(graph_.arrays.data[graph_.schema.node_types[spec_.seed_type].node_time]);
      seed_times_.clear();
      for (int64_t id : seeds) seed_times_.push_back(node_times[id]);
    }
    std::copy(seed_times_.begin(), seed_times_.end(), out.types[spec_.seed_type].seed_time);
  }
  seeds_by_type_.assign(graph_.schema.node_types.size(), {});
  seeds_by_type_[spec_.seed_type] = seeds;
  SampleFrom(epoch, batch_index, seeds_by_type_, out);
}

void CpuSampler::SampleLinkGraph(uint64_t epoch, uint64_t batch_index, std::span<const std::span<const int64_t>> hop0,
                                 std::span<const EdgeExclusions> excluded, const BatchView& out,
                                 std::span<const int64_t> subgraph_times) {
  excluded_ = excluded;
  seed_times_.assign(subgraph_times.begin(), subgraph_times.end());
  SampleFrom(epoch, batch_index, hop0, out);
  excluded_ = {};
}

void CpuSampler::SampleFrom(uint64_t epoch, uint64_t batch_index, std::span<const std::span<const int64_t>> hop0,
                            const BatchView& out) {
  // A LABOR batch that outgrows a hop's bound is drawn again under the next attempt's key (sampling.h, labor).
  status_ = absl::OkStatus();
  for (uint32_t attempt = 0; attempt < (spec_.labor.active ? labor::kMaxAttempts : 1); ++attempt) {
    labor_key_ = labor::Key(seed_, epoch, attempt);
    labor_overflowed_ = false;
    SampleAttempt(epoch, batch_index, hop0, out);
    if (!labor_overflowed_) return;
  }
  // Every attempt outgrew a bound: the last one's hop is empty, a biased batch. It fails instead (a batch
  // without a relation's edges would train silently on a different graph).
  const std::vector<int64_t>& bounds = out.relations[labor_overflow_relation_].max_edges_per_hop;
  status_ = LaborOutgrownError(graph_.schema.relations[labor_overflow_relation_].key(), labor_overflow_hop_,
                               bounds.empty() ? -1 : bounds[labor_overflow_hop_]);
}

void CpuSampler::SampleAttempt(uint64_t epoch, uint64_t batch_index, std::span<const std::span<const int64_t>> hop0,
                               const BatchView& out) {
  const DatasetSchema& schema = graph_.schema;
  const size_t types = schema.node_types.size(), relations = schema.relations.size();
  const int hops = spec_.num_hops();
  const SamplingKey key = MakeSamplingKey(seed_, epoch, RandomPurpose::kNeighbors);
  // Erase the last batch's entries one by one: absl's clear() frees a large table, and refilling a fresh one
  // page-faults (measured: a third of the time went to zeroing pages).
  for (size_t t = 0; t < types; ++t) {
    for (int64_t node : reset_[t]) local_[t].erase(node);
    fresh_index_[t].clear();
  }
  // Hop 0: each type's seeds (a node batch's seed type alone, a link batch's endpoint types).
  std::vector<int64_t>& num_nodes = num_nodes_;
  std::vector<int64_t>& frontier_begin = frontier_begin_;
  std::vector<int64_t>& frontier_end = frontier_end_;
  num_nodes.assign(types, 0);
  frontier_begin.assign(types, 0);
  frontier_end.assign(types, 0);
  for (size_t t = 0; t < types; ++t) {
    for (size_t i = 0; i < hop0[t].size(); ++i) {
      out.types[t].node_ids[i] = hop0[t][i];
      local_[t].emplace(NodeKey(t, static_cast<int64_t>(i), hop0[t][i]), static_cast<int32_t>(i));
      if (out.types[t].batch != nullptr) out.types[t].batch[i] = static_cast<int64_t>(i);  // a subgraph per seed
    }
    num_nodes[t] = frontier_end[t] = static_cast<int64_t>(hop0[t].size());
    out.types[t].num_nodes_per_hop[0] = static_cast<int32_t>(num_nodes[t]);
  }

  for (int hop = 0; hop < hops; ++hop) {
    // 1. Every relation's draws around its destination type's frontier.
    for (size_t r = 0; r < relations; ++r) {
      sampled_[r].clear();
      const int dst = schema.relations[r].dst_type;
      if (schema.relations[r].index_dtype == DType::kInt32) {
        SampleRelation<int32_t>(static_cast<int>(r), hop, key, batch_index, out, frontier_begin[dst], frontier_end[dst],
                                sampled_[r]);
      } else {
        SampleRelation<int64_t>(static_cast<int>(r), hop, key, batch_index, out, frontier_begin[dst], frontier_end[dst],
                                sampled_[r]);
      }
    }
    // 2. Per type, the sources first reached at this hop, sorted by id, get the next local indices. Each
    // source's entry is looked up once: a new one's stays -1 - g, its index read through fresh_index_.
    for (size_t t = 0; t < types; ++t) {
      fresh_.clear();
      const auto first = static_cast<int32_t>(fresh_index_[t].size());  // this hop's first g
      for (size_t r = 0; r < relations; ++r) {
        if (schema.relations[r].src_type != static_cast<int>(t)) continue;
        entries_[r].resize(sampled_[r].size());
        for (size_t e = 0; e < sampled_[r].size(); ++e) {
          const int32_t g = first + static_cast<int32_t>(fresh_.size());
          const auto [entry, added] = local_[t].try_emplace(sampled_[r][e], -1 - g);
          if (added) fresh_.push_back({sampled_[r][e], g});
          entries_[r][e] = entry->second;
        }
      }
      // By (subgraph, id): NodeKey orders so. Keys are distinct and not negative: a radix sort by them.
      boost::sort::spreadsort::integer_sort(
          fresh_.begin(), fresh_.end(), [](const Fresh& f, unsigned shift) { return f.key >> shift; },
          [](const Fresh& a, const Fresh& b) { return a.key < b.key; });
      fresh_index_[t].resize(first + fresh_.size());
      const int64_t n = schema.node_types[t].num_nodes;
      for (const Fresh& f : fresh_) {
        int64_t u = f.key;
        fresh_index_[t][f.g] = static_cast<int32_t>(num_nodes[t]);
        if (out.types[t].batch != nullptr) {
          out.types[t].batch[num_nodes[t]] = u / n;
          u %= n;
        }
        out.types[t].node_ids[num_nodes[t]++] = u;
      }
      out.types[t].num_nodes_per_hop[hop + 1] = static_cast<int32_t>(fresh_.size());
      frontier_begin[t] = frontier_end[t];
      frontier_end[t] = num_nodes[t];
    }
    // 3. Relabel the sources.
    for (size_t r = 0; r < relations; ++r) {
      const BatchView::Relation& edges = out.relations[r];
      int64_t begin = 0;
      for (int h = 0; h < hop; ++h) begin += edges.num_edges_per_hop[h];
      const int type = schema.relations[r].src_type;
      for (size_t e = 0; e < sampled_[r].size(); ++e) edges.edge_src[begin + e] = LocalIndex(type, entries_[r][e]);
      edges.num_edges_per_hop[hop] = static_cast<int32_t>(sampled_[r].size());
    }
  }
  if (spec_.induced) {
    for (size_t r = 0; r < relations; ++r) {
      if (schema.relations[r].index_dtype == DType::kInt32) {
        InduceEdges<int32_t>(static_cast<int>(r), out);
      } else {
        InduceEdges<int64_t>(static_cast<int>(r), out);
      }
    }
  }
  for (size_t t = 0; t < types; ++t) {
    reset_[t].resize(static_cast<size_t>(num_nodes[t]));
    for (int64_t i = 0; i < num_nodes[t]; ++i) {
      reset_[t][i] = NodeKey(t, out.types[t].batch == nullptr ? 0 : out.types[t].batch[i], out.types[t].node_ids[i]);
    }
  }
  GatherEdgeRows(graph_, out);
}

void CopyRows(const void* table, const int64_t* ids, int64_t n, size_t row_bytes, void* out,
              const std::vector<bool>* skip) {
  // Rows are read a few ahead of their copy: a random row's lines miss, and no hardware prefetcher sees the next
  // row coming (one thread's gather of products' 400 B rows: 1.17 x, run BG).
  constexpr int64_t kAhead = 8;
  constexpr uintptr_t kLine = 64;
  const auto* from = static_cast<const std::byte*>(table);
  auto* to = static_cast<std::byte*>(out);
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n && (skip == nullptr || !(*skip)[ids[i + kAhead]])) {  // no reads of rows not copied
      const auto row = reinterpret_cast<uintptr_t>(from + ids[i + kAhead] * row_bytes);
      for (uintptr_t line = row & ~(kLine - 1); line < row + row_bytes; line += kLine) {
        __builtin_prefetch(reinterpret_cast<const void*>(line));
      }
    }
    if (skip != nullptr && (*skip)[ids[i]]) continue;
    std::memcpy(to + i * row_bytes, from + ids[i] * row_bytes, row_bytes);
  }
}

void GatherEdgeRows(const GraphData& graph, const BatchView::Relation& edges, int relation, int64_t begin,
                    int64_t end) {
  for (const BatchView::EdgeRows& rows : edges.attrs) {
    CopyRows(graph.arrays.data[rows.array], edges.e_id + begin, end - begin, rows.row_bytes,
             static_cast<std::byte*>(rows.data) + begin * rows.row_bytes);
  }
  const auto* ids = static_cast<const int64_t*>(graph.arrays.data[graph.schema.relations[relation].edge_ids]);
  for (int64_t k = begin; k < end; ++k) edges.e_id[k] = ids[edges.e_id[k]];
}

void GatherEdgeRows(const GraphData& graph, const BatchView& out) {
  for (size_t r = 0; r < out.relations.size(); ++r) {
    if (out.relations[r].e_id == nullptr) continue;
    GatherEdgeRows(graph, out.relations[r], static_cast<int>(r), 0, out.num_edges(static_cast<int>(r)));
  }
}

void CpuSampler::Gather(const BatchView& out) const {
  GatherFeatures(out);
  GatherNodeAttributes(out);
  GatherLabels(out);
}

void CpuSampler::GatherNodeAttributes(const BatchView& out) const {
  for (size_t t = 0; t < out.types.size(); ++t) {
    const BatchView::Type& view = out.types[t];
    const int64_t n = out.num_nodes(static_cast<int>(t));
    for (const BatchView::EdgeRows& rows : view.attrs) {
      CopyRows(graph_.arrays.data[rows.array], view.node_ids, n, rows.row_bytes, rows.data);
    }
  }
}

void CpuSampler::GatherFeatures(const BatchView& out) const {
  const DatasetSchema& schema = graph_.schema;
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const NodeTypeSchema& type = schema.node_types[t];
    const BatchView::Type& view = out.types[t];
    // Features on storage (not in memory) are read by the producer's second stage instead.
    if (view.features == nullptr || type.features < 0 || graph_.arrays.data[type.features] == nullptr) continue;
    // A batch larger than its slot's rows (slots sized by the batches) gets what fits: it is not delivered.
    const int64_t n = std::min(out.num_nodes(static_cast<int>(t)), view.feature_rows);
    CopyRows(graph_.arrays.data[type.features], view.node_ids, n, type.feature_row_bytes(), view.features);
  }
}

void CpuSampler::GatherLabels(const BatchView& out) const {
  const DatasetSchema& schema = graph_.schema;
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const BatchView::Type& view = out.types[t];
    if (view.labels == nullptr || schema.node_types[t].labels < 0) continue;
    const auto* labels = static_cast<const int64_t*>(graph_.arrays.data[schema.node_types[t].labels]);
    for (int64_t i = 0; i < view.num_nodes_per_hop[0]; ++i) view.labels[i] = labels[view.node_ids[i]];
  }
}

void CpuSampler::Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds,
                        const HomogeneousView& out, SampleTimes* times) {
  Sample(epoch, batch_index, seeds, AsBatchView(out), times);
}

void CpuSampler::SampleGraph(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds,
                             const HomogeneousView& out) {
  SampleGraph(epoch, batch_index, seeds, AsBatchView(out));
}

}  // namespace gnnd
