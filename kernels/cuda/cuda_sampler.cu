#include <thrust/binary_search.h>
#include <thrust/execution_policy.h>

#include <algorithm>
#include <cub/cub.cuh>

#include "absl/strings/str_cat.h"
#include "common/batch/sampling.h"
#include "kernels/cuda/cuda_sampler.h"
#include "kernels/cuda/node_table.cuh"
#include "kernels/cuda/sampling.h"

namespace gnnd::cuda {

struct BatchState {
  int64_t num_nodes[kMaxCudaTypes];  // of each type, so far
  int64_t frontier_begin[kMaxCudaTypes], frontier_end[kMaxCudaTypes];
  int64_t fresh[kMaxCudaTypes];             // nodes each type gains at the current hop
  int64_t total_edges[kMaxCudaRelations];   // of each relation, hops before the current one
  int64_t hop_edges[kMaxCudaRelations];     // of each relation, the current hop
  unsigned long long extra[kMaxCudaTypes];  // of each type, the current hop's new nodes past its sort (outgrown)
  int32_t outgrown;                         // a hop of this batch wrote keys past its sort
  int32_t labor_overflow;                   // a LABOR hop of this batch outgrew its edge bound (left empty)
  int64_t seen[kMaxHops];                   // each hop's largest key extent, over every batch (FitSorts)
};

namespace {

// A batch's report bits (CudaSampler::Report, Outgrown).
constexpr int32_t kSortOutgrown = 1, kLaborOverflow = 2;

// Where a batch's arrays are and how global ids map to types (one launch's arguments).
struct KernelArgs {
  int num_types = 0, num_relations = 0;
  // The node table's key of each type's first node (the last: every key). A node's key is type_offset[t] + id,
  // a disjoint batch's type_offset[t] + subgraph * type_nodes[t] + id.
  int64_t type_offset[kMaxCudaTypes + 1];
  int64_t type_nodes[kMaxCudaTypes];
  bool disjoint = false;
  int64_t* batch[kMaxCudaTypes];             // a disjoint batch's subgraph arrays
  int64_t* seed_time = nullptr;              // a temporal batch's seed times (the seed type's)
  const int64_t* seed_node_times = nullptr;  // the seed type's node times, where the seeds come without
  int64_t type_base[kMaxCudaTypes];          // each type's first entry in w.node_slots
  int64_t* node_ids[kMaxCudaTypes];
  int32_t* num_nodes_per_hop[kMaxCudaTypes];
  int32_t* edge_src[kMaxCudaRelations];
  int32_t* num_edges_per_hop[kMaxCudaRelations];
  int32_t dst_type[kMaxCudaRelations];
  int64_t segment[kMaxCudaRelations];  // where each relation's keys start in this hop's buffer
};

__device__ int64_t FirstIndex() { return blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; }
__device__ int64_t Stride() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__device__ int TypeOf(const KernelArgs& a, uint64_t id) {
  int t = 0;
  while (t + 1 < a.num_types && static_cast<uint64_t>(a.type_offset[t + 1]) <= id) ++t;
  return t;
}

// Each relation's view of the next hop: its destination type's frontier and its own edges so far; its hop's
// edges start at 0. Done by the kernel that moved the frontiers (no launch of its own).
__device__ void PrepareRelations(BatchState* state, HopState* rel_states, const KernelArgs& a) {
  for (int r = 0; r < a.num_relations; ++r) {
    const int t = a.dst_type[r];
    rel_states[r] = {state->num_nodes[t], state->frontier_begin[t], state->frontier_end[t], state->total_edges[r]};
    state->hop_edges[r] = 0;
  }
}

// A batch's dedup counters at its start (a batch before may have failed half-way).
__device__ void StartCounts(BatchState* state) {
  state->outgrown = 0;
  state->labor_overflow = 0;
  for (int t = 0; t < kMaxCudaTypes; ++t) state->extra[t] = 0;
}

// The seeds become their type's first nodes, in their order (a repeated seed maps to its first index).
template <typename Key>
__global__ void InitKernel(const BatchArgs* args, BatchState* state, HopState* rel_states, NodeTable<Key> table,
                           uint32_t* node_slots, KernelArgs a, int seed_type, int64_t max_seeds) {
  const int64_t num_seeds = args->num_seeds;
  for (int64_t i = FirstIndex(); i < max_seeds && i < num_seeds; i += Stride()) {
    const int64_t id = args->seeds[i];
    a.node_ids[seed_type][i] = id;
    if (a.disjoint) a.batch[seed_type][i] = i;  // each seed its own subgraph
    if (a.seed_time != nullptr)
      a.seed_time[i] = args->seed_times != nullptr ? args->seed_times[i] : a.seed_node_times[id];
    bool added = false;
    const int64_t subgraph_base = a.disjoint ? i * a.type_nodes[seed_type] : 0;
    const uint64_t s = table.Insert(static_cast<Key>(a.type_offset[seed_type] + subgraph_base + id), &added);
    atomicMin(&table.Local(s), static_cast<uint32_t>(i));
    node_slots[a.type_base[seed_type] + i] = static_cast<uint32_t>(s);
  }
  if (FirstIndex() != 0) return;
  for (int t = 0; t < a.num_types; ++t) {
    const int64_t n = t == seed_type ? num_seeds : 0;
    state->num_nodes[t] = state->frontier_end[t] = n;
    state->frontier_begin[t] = state->fresh[t] = 0;
    a.num_nodes_per_hop[t][0] = static_cast<int32_t>(n);
  }
  for (int r = 0; r < a.num_relations; ++r) state->total_edges[r] = 0;
  StartCounts(state);
  PrepareRelations(state, rel_states, a);
}

// A link batch's hop 0: each type's num_hop0[t] distinct ids, already at the start of its node_ids (a disjoint
// batch's each in its own subgraph, entry i of every type in subgraph i).
template <typename Key>
__global__ void LinkInitKernel(const int64_t* num_hop0, BatchState* state, HopState* rel_states, NodeTable<Key> table,
                               uint32_t* node_slots, KernelArgs a, int64_t max_hop0) {
  for (int t = 0; t < a.num_types; ++t) {
    const int64_t n = num_hop0[t];
    for (int64_t i = FirstIndex(); i < max_hop0 && i < n; i += Stride()) {
      bool added = false;
      const int64_t subgraph_base = a.disjoint ? i * a.type_nodes[t] : 0;
      if (a.disjoint) a.batch[t][i] = i;
      const uint64_t s = table.Insert(static_cast<Key>(a.node_ids[t][i] + subgraph_base + a.type_offset[t]), &added);
      table.Local(s) = static_cast<uint32_t>(i);
      node_slots[a.type_base[t] + i] = static_cast<uint32_t>(s);
    }
  }
  if (FirstIndex() != 0) return;
  for (int t = 0; t < a.num_types; ++t) {
    state->num_nodes[t] = state->frontier_end[t] = num_hop0[t];
    state->frontier_begin[t] = state->fresh[t] = 0;
    a.num_nodes_per_hop[t][0] = static_cast<int32_t>(num_hop0[t]);
  }
  for (int r = 0; r < a.num_relations; ++r) state->total_edges[r] = 0;
  StartCounts(state);
  PrepareRelations(state, rel_states, a);
}

// Where this hop's keys (and sampled sources) end in their buffers: every relation's were written below its segment's
// start plus its edges, so below the last relation's (the host-side bound may be several times more).
__device__ int64_t HopKeysEnd(const BatchState* state, const KernelArgs& a, int64_t bound) {
  const int last = a.num_relations - 1;
  return min(bound, a.segment[last] + state->hop_edges[last]);
}

// The first of sorted[0, n) that is at least `value`.
template <typename Key>
__device__ int64_t FirstAtLeast(const Key* sorted, int64_t n, Key value) {
  return thrust::lower_bound(thrust::seq, sorted, sorted + n, value) - sorted;
}

// The hop's new ids at their edges' positions in `keys` (global ids, types in order; the sentinel elsewhere):
// `sorted` holds keys[0, sort_len) sorted. Position i of type t there gets local index num_nodes[t] + (i - the
// first position of type t). Keys past the sort (a hop that outgrew it, keys[sort_len, end)) get the indices after
// their type's sorted ones in any order: the batch stays whole and its nodes leave the table at its end (it is
// sampled again: Outgrown). Also puts the sentinel back into `keys`.
template <typename Key>
__global__ void AssignKernel(BatchState* state, int64_t bound, int64_t sort_len, const Key* sorted, Key* keys,
                             NodeTable<Key> table, uint32_t* node_slots, KernelArgs a, Key sentinel) {
  const int64_t end = HopKeysEnd(state, a, bound), sorted_end = min(end, sort_len);
  for (int64_t i = FirstIndex(); i < end; i += Stride()) {
    const bool in_order = i < sorted_end;
    const Key key = in_order ? sorted[i] : keys[i];
    keys[i] = sentinel;
    if (key == sentinel) continue;
    const int t = TypeOf(a, key);
    const Key first_id = static_cast<Key>(a.type_offset[t]), end_id = static_cast<Key>(a.type_offset[t + 1]);
    const int64_t lo = t == 0 ? 0 : FirstAtLeast(sorted, in_order ? i : sorted_end, first_id);
    int64_t rank = i - lo;
    if (!in_order) {
      rank = FirstAtLeast(sorted, sorted_end, end_id) - lo + static_cast<int64_t>(atomicAdd(state->extra + t, 1ull));
    } else if (i + 1 == sorted_end || sorted[i + 1] >= end_id) {
      state->fresh[t] = rank + 1;  // the type's last new node in order
    }
    const int64_t local = state->num_nodes[t] + rank;
    const uint64_t s = table.Find(key);
    table.Local(s) = static_cast<uint32_t>(local);
    const int64_t within = static_cast<int64_t>(key - first_id);
    if (a.disjoint) {  // sorted by (subgraph, id), as the CPU appends them
      a.node_ids[t][local] = within % a.type_nodes[t];
      a.batch[t][local] = within / a.type_nodes[t];
    } else {
      a.node_ids[t][local] = within;
    }
    node_slots[a.type_base[t] + local] = static_cast<uint32_t>(s);
  }
}

// Relabels each relation's sources through the table. The last block then records the hop's counts (and whether it
// outgrew its sort), moves every type's frontier to its new nodes and prepares the relations' next hop.
template <typename Key>
__global__ void RelabelKernel(BatchState* state, HopState* rel_states, int64_t bound, int64_t sort_len,
                              const int64_t* sampled, NodeTable<Key> table, KernelArgs a, int hop,
                              uint32_t* blocks_done) {
  const int64_t end = HopKeysEnd(state, a, bound);
  for (int64_t e = FirstIndex(); e < end; e += Stride()) {
    int r = 0;
    while (r + 1 < a.num_relations && a.segment[r + 1] <= e) ++r;
    const int64_t p = e - a.segment[r];
    if (p >= state->hop_edges[r]) continue;
    a.edge_src[r][state->total_edges[r] + p] =
        static_cast<int32_t>(table.Local(table.Find(static_cast<Key>(sampled[e]))));
  }
  if (!LastBlockDone(blocks_done) || threadIdx.x != 0) return;
  for (int r = 0; r < a.num_relations; ++r) {
    a.num_edges_per_hop[r][hop] = static_cast<int32_t>(state->hop_edges[r]);
    state->total_edges[r] += state->hop_edges[r];
  }
  if (end > sort_len) state->outgrown = 1;
  state->seen[hop] = max(state->seen[hop], end);
  for (int t = 0; t < a.num_types; ++t) {
    state->fresh[t] += static_cast<int64_t>(state->extra[t]);
    state->extra[t] = 0;
    a.num_nodes_per_hop[t][hop + 1] = static_cast<int32_t>(state->fresh[t]);
    state->frontier_begin[t] = state->num_nodes[t];
    state->num_nodes[t] += state->fresh[t];
    state->frontier_end[t] = state->num_nodes[t];
    state->fresh[t] = 0;
  }
  PrepareRelations(state, rel_states, a);
}

// Empties the slots of the batch's nodes, so the next batch starts with an empty table: each type's nodes of
// this batch only (a batch holds a few times fewer than the bound its launch is sized by).
// Also reports whether the batch outgrew a sort or a LABOR bound (to `report` unless null: kSortOutgrown,
// kLaborOverflow).
template <typename Key>
__global__ void ClearKernel(const BatchState* state, const uint32_t* node_slots, NodeTable<Key> table, KernelArgs a,
                            int32_t* report) {
  if (report != nullptr && FirstIndex() == 0) {
    *report = (state->outgrown != 0 ? kSortOutgrown : 0) | (state->labor_overflow != 0 ? kLaborOverflow : 0);
  }
  for (int t = 0; t < a.num_types; ++t) {
    const uint32_t* taken = node_slots + a.type_base[t];
    for (int64_t i = FirstIndex(); i < state->num_nodes[t]; i += Stride()) {
      table.slots[taken[i]] = {NodeTable<Key>::kEmpty, kNoLocal};
    }
  }
}

// An induced batch's edges of one relation (common/batch/sampling.h, induced), a warp per destination node up to
// `bound`. With `offsets` null: each node's count into counts[v] (0 past the batch's nodes and at `bound`, for an
// exclusive scan over bound + 1). Else: its edges from offsets[v], a ballot keeping the CSC order across lanes, and
// the relation's count (offsets[bound]) where the gather and the trainer read it (hop 0's, the others 0).
template <typename Key, typename Index>
__global__ void InducedKernel(BatchState* state, int relation, int dst_type, int64_t bound, const int64_t* node_ids,
                              const int64_t* indptr, const Index* indices, NodeTable<Key> table, int64_t src_offset,
                              int64_t* counts, const int64_t* offsets, int32_t* edge_src, int32_t* edge_dst,
                              int64_t* e_id, int32_t* num_edges_per_hop, int hops) {
  const int lane = threadIdx.x % kWarp;
  const int64_t n = state->num_nodes[dst_type];
  if (FirstIndex() == 0) {
    if (offsets == nullptr) {
      counts[bound] = 0;
    } else {
      state->total_edges[relation] = offsets[bound];
      for (int h = 0; h < hops; ++h) num_edges_per_hop[h] = h == 0 ? static_cast<int32_t>(offsets[bound]) : 0;
    }
  }
  for (int64_t v = FirstIndex() / kWarp; v < bound; v += Stride() / kWarp) {  // the same v on a warp's lanes
    int64_t at = offsets == nullptr ? 0 : offsets[v];
    if (v < n) {
      const int64_t end = indptr[node_ids[v] + 1];
      for (int64_t base = indptr[node_ids[v]]; base < end; base += kWarp) {
        const int64_t p = base + lane;
        const uint32_t local = p < end ? table.LocalOf(static_cast<Key>(src_offset + indices[p])) : kNoLocal;
        const unsigned found = __ballot_sync(0xffffffffu, local != kNoLocal);
        if (offsets != nullptr && local != kNoLocal) {
          const int64_t k = at + __popc(found & ((1u << lane) - 1));
          edge_src[k] = static_cast<int32_t>(local);
          edge_dst[k] = static_cast<int32_t>(v);
          if (e_id != nullptr) e_id[k] = p;  // a CSC position until EdgeIdsKernel
        }
        at += __popc(found);
      }
    }
    if (offsets == nullptr && lane == 0) counts[v] = at;
  }
}

// e_id[k] = ids[e_id[k]] for the relation's edges: positions in its CSC become stored ids.
__global__ void EdgeIdsKernel(const int64_t* ids, const int64_t* count, int64_t bound, int64_t* e_id) {
  const int64_t n = min(*count, bound);
  for (int64_t k = FirstIndex(); k < n; k += Stride()) e_id[k] = ids[e_id[k]];
}

KernelArgs MakeArgs(const DeviceGraph& graph, const SamplingSpec& spec, const BatchView& view,
                    const std::vector<int64_t>& type_offset, const std::vector<int64_t>& type_base) {
  const DatasetSchema& schema = graph.schema;
  KernelArgs a;
  a.num_types = static_cast<int>(schema.node_types.size());
  a.num_relations = static_cast<int>(schema.relations.size());
  a.disjoint = spec.disjoint;
  for (int t = 0; t <= a.num_types; ++t) a.type_offset[t] = type_offset[t];
  for (int t = 0; t < a.num_types; ++t) {
    a.type_base[t] = type_base[t];
    a.type_nodes[t] = schema.node_types[t].num_nodes;
    a.node_ids[t] = view.types[t].node_ids;
    a.num_nodes_per_hop[t] = view.types[t].num_nodes_per_hop;
    a.batch[t] = view.types[t].batch;
  }
  if (spec.temporal() && !spec.link()) {  // a link batch's subgraph times come with its hop 0
    a.seed_time = view.types[spec.seed_type].seed_time;
    const int node_time = schema.node_types[spec.seed_type].node_time;
    if (node_time >= 0) a.seed_node_times = static_cast<const int64_t*>(graph.arrays[node_time]);
  }
  for (int r = 0; r < a.num_relations; ++r) {
    a.edge_src[r] = view.relations[r].edge_src;
    a.num_edges_per_hop[r] = view.relations[r].num_edges_per_hop;
    a.dst_type[r] = schema.relations[r].dst_type;
    a.segment[r] = 0;
  }
  return a;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaSampler>> CudaSampler::Create(const DeviceGraph& graph, const SamplingSpec& spec,
                                                                 uint64_t seed, const BatchLayout& layout,
                                                                 Options options) {
  const DatasetSchema& schema = graph.schema;
  if (schema.node_types.size() > kMaxCudaTypes || schema.relations.size() > kMaxCudaRelations) {
    return absl::UnimplementedError(absl::StrCat("the CUDA backend samples typed graphs of up to ", kMaxCudaTypes,
                                                 " node types and ", kMaxCudaRelations, " relations; this one has ",
                                                 schema.node_types.size(), " and ", schema.relations.size()));
  }
  auto s = std::unique_ptr<CudaSampler>(new CudaSampler());
  s->graph_ = graph;
  s->spec_ = spec;
  s->seed_ = seed;
  s->options_ = options;
  if (layout.types.size() != schema.node_types.size() || layout.relations.size() != schema.relations.size() ||
      layout.num_hops != spec.num_hops()) {
    return absl::InternalError("a CUDA sampler's layout does not match its dataset and spec");
  }
  s->layout_ = layout;
  s->time_orders_.assign(schema.relations.size(), nullptr);
  for (size_t r = 0; r < schema.relations.size() && spec.temporal(); ++r) {
    const int times = spec.TimeArrayOf(static_cast<int>(r), schema);
    if (times < 0 || std::all_of(spec.fanouts[r].begin(), spec.fanouts[r].end(), [](int32_t f) { return f == 0; })) {
      continue;  // never sampled through
    }
    if (graph.dataset == nullptr) return absl::InternalError("a temporal sampler's graph has no dataset to order");
    GNND_ASSIGN_OR_RETURN(s->time_orders_[r], graph.dataset->TimeOrder(static_cast<int>(r), times));
  }
  const BatchCapacity& capacity = layout.capacity;
  // Keys: a type's nodes after the types before it, a disjoint batch's once per subgraph (a seed, or a link
  // batch's endpoint).
  const int64_t subgraphs = spec.link() ? spec.MaxSubgraphs() : layout.capacity.max_seeds;
  const int64_t copies = spec.disjoint ? std::max<int64_t>(subgraphs, 1) : 1;
  int64_t keys = 0;
  for (const NodeTypeSchema& t : schema.node_types) {
    s->type_offset_.push_back(keys);
    keys += copies * t.num_nodes;
  }
  s->type_offset_.push_back(keys);
  s->ids_ = IdRange::ForNodes(keys);
  if (options.wide_ids) s->ids_.narrow = false;
  // One workspace for the whole batch: the node table and slots hold every type's nodes, the key buffer a
  // hop's edges of every relation, the per-node scratch the largest frontier of any relation.
  HomogeneousCapacity whole;
  whole.max_seeds = capacity.max_seeds;
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    s->type_base_.push_back(whole.max_nodes);
    whole.max_nodes += capacity.max_nodes[t];
  }
  for (const BatchCapacity::Hop& hop : capacity.hops) {
    HopBound& bound = whole.hops.emplace_back();
    for (size_t r = 0; r < schema.relations.size(); ++r) {
      bound.frontier = std::max(bound.frontier, hop.frontier[schema.relations[r].dst_type]);
      bound.edges += hop.edges[r];
    }
  }
  int device = 0, shared = 0;
  GNND_CUDA(cudaGetDevice(&device), "query the current device");
  GNND_CUDA(cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlock, device),
            "query the shared memory per block");
  s->gather_.shared_bytes_limit = static_cast<size_t>(shared);
  s->gather_.shifted = options.shifted_gather;
  GNND_ASSIGN_OR_RETURN(s->workspace_, Workspace::Create(whole, s->ids_.narrow, spec.induced, spec.labor.active));
  GNND_CUDA(cudaMalloc(&s->state_, sizeof(BatchState)), "allocate the typed sampler's state");
  GNND_CUDA(cudaMemset(s->state_, 0, sizeof(BatchState)), "clear the typed sampler's state");
  for (int hop = 0; hop < layout.num_hops; ++hop) s->sort_lengths_.push_back(s->HopEdgeBound(hop));
  GNND_CUDA(cudaMalloc(&s->rel_states_, sizeof(HopState) * kMaxCudaRelations), "allocate the typed sampler's state");
  GNND_RETURN_IF_ERROR(ResetDedup(*s->workspace_, s->ids_, nullptr));
  GNND_CUDA(cudaStreamSynchronize(nullptr), "prepare the sampler's buffers");
  return s;
}

CudaSampler::~CudaSampler() {
  graphs_.Drop();
  if (state_ != nullptr) cudaFree(state_);
  if (rel_states_ != nullptr) cudaFree(rel_states_);
  for (const Report& r : reports_) cudaFreeHost(r.host);
}

DrawSource CudaSampler::DrawSourceOf(int r, const BatchView& view, const BatchCapacity::Hop& hop,
                                     const int64_t* link_subgraph_times) const {
  const RelationSchema& rel = graph_.schema.relations[r];
  const auto array = [&](int i) { return static_cast<const int64_t*>(graph_.arrays[i]); };
  if (spec_.labor.active) {
    return LaborSource{.dependency = spec_.labor.dependency,
                       .src_type = static_cast<uint32_t>(rel.src_type),
                       .edge_weight = view.relations[r].edge_weight,
                       .max_edges = hop.edges[r],
                       .overflow = &state_->labor_overflow};
  }
  if (const int times = spec_.TimeArrayOf(r, graph_.schema); times >= 0) {  // -1: an untimed source type too
    TemporalSource temporal{.seed_times = spec_.link() ? link_subgraph_times : view.types[spec_.seed_type].seed_time,
                            .edge_ids = rel.edge_ids >= 0 ? array(rel.edge_ids) : nullptr,
                            .rule = spec_.time.rule,
                            .order = time_orders_[r]};
    (spec_.time.node_level ? temporal.node_times : temporal.edge_times) = array(times);
    return temporal;
  }
  if (const int weight = spec_.WeightOf(r); weight >= 0) {
    const int weights = rel.edge_attrs[weight].array;
    return WeightedSource{.weights = static_cast<const float*>(graph_.arrays[weights]),
                          .positive = graph_.positive[weights] != 0,
                          .rule = spec_.neighbors};
  }
  return UniformSource{.rule = spec_.neighbors};
}

absl::Status CudaSampler::EnqueueSampling(void* out, cudaStream_t stream, int32_t* report, const int64_t* num_hop0,
                                          std::span<const DeviceExclusions> excluded,
                                          const int64_t* link_subgraph_times) {
  const DatasetSchema& schema = graph_.schema;
  const BatchView view = BatchView::At(out, layout_);
  const BatchCapacity& capacity = layout_.capacity;
  Workspace& w = *workspace_;
  KernelArgs args = MakeArgs(graph_, spec_, view, type_offset_, type_base_);
  int64_t total_nodes = 0;
  for (int64_t n : capacity.max_nodes) total_nodes += n;
  return DispatchKey(ids_, [&](auto key) -> absl::Status {
    using Key = decltype(key);
    const NodeTable<Key> table = TableOf<Key>(w);
    if (num_hop0 == nullptr) {
      GNND_LAUNCH(InitKernel<Key>, Blocks(capacity.max_seeds), kThreads, 0, stream, w.args, state_, rel_states_, table,
                  w.node_slots, args, spec_.seed_type, capacity.max_seeds);
    } else {
      const int64_t max_hop0 = *std::max_element(spec_.max_hop0.begin(), spec_.max_hop0.end());
      GNND_LAUNCH(LinkInitKernel<Key>, StrideBlocks(max_hop0), kThreads, 0, stream, num_hop0, state_, rel_states_,
                  table, w.node_slots, args, max_hop0);
    }
    for (int hop = 0; hop < spec_.num_hops(); ++hop) {
      const BatchCapacity::Hop& bound = capacity.hops[hop];
      int64_t hop_bound = 0;
      for (size_t r = 0; r < schema.relations.size(); ++r) {
        args.segment[r] = hop_bound;
        hop_bound += bound.edges[r];
      }
      for (size_t r = 0; r < schema.relations.size(); ++r) {
        const RelationSchema& rel = schema.relations[r];
        const int64_t frontier = bound.frontier[rel.dst_type];
        if (frontier == 0 || bound.edges[r] == 0) continue;  // nothing to draw: its hop_edges stay 0
        const DeviceRelation& csc = graph_.relations[r];
        // A hot tier holds in-neighbor lists only for a one-relation dataset's (HotTier's adjacency).
        FrontierSource source{.indptr = csc.indptr,
                              .indices = csc.indices,
                              .index_dtype = csc.index_dtype,
                              .hot = graph_.types[rel.dst_type].hot,
                              .csc = graph_.csc,
                              .relation = static_cast<uint32_t>(r),
                              .id_offset = type_offset_[rel.src_type],
                              .draw = DrawSourceOf(static_cast<int>(r), view, bound, link_subgraph_times)};
        if (spec_.disjoint) {
          source.subgraphs = view.types[rel.dst_type].batch;
          source.src_nodes = schema.node_types[rel.src_type].num_nodes;
        }
        GNND_RETURN_IF_ERROR(SampleFrontier(
            w, rel_states_ + r, source, frontier, hop, spec_.fanouts[r][hop], ids_, view.types[rel.dst_type].node_ids,
            w.sampled + args.segment[r], args.segment[r], view.relations[r].edge_dst, view.relations[r].e_id,
            &state_->hop_edges[r], stream, excluded.empty() ? DeviceExclusions{} : excluded[r]));
      }
      const int64_t edges_bound = HopEdgeBound(hop), sort_len = sort_lengths_[hop];
      Key* keys = reinterpret_cast<Key*>(w.keys);
      Key* sorted = reinterpret_cast<Key*>(w.sorted_keys);
      GNND_RETURN_IF_ERROR(w.temp.Run("sort new nodes", [&](void* d, size_t& n) {
        return cub::DeviceRadixSort::SortKeys(d, n, keys, sorted, sort_len, 0, ids_.end_bit, stream);
      }));
      GNND_LAUNCH(AssignKernel<Key>, StrideBlocks(sort_len), kThreads, 0, stream, state_, edges_bound, sort_len, sorted,
                  keys, table, w.node_slots, args, static_cast<Key>(ids_.sentinel));
      GNND_LAUNCH(RelabelKernel<Key>, StrideBlocks(edges_bound), kThreads, 0, stream, state_, rel_states_, edges_bound,
                  sort_len, w.sampled, table, args, hop, w.blocks_done);
    }
    for (size_t r = 0; r < schema.relations.size() && spec_.induced; ++r) {  // the table still holds the batch
      GNND_RETURN_IF_ERROR(EnqueueInduced(static_cast<int>(r), view, table, stream));
    }
    GNND_LAUNCH(ClearKernel<Key>, StrideBlocks(total_nodes), kThreads, 0, stream, state_, w.node_slots, table, args,
                report);
    return absl::OkStatus();
  });
}

template <typename Key>
absl::Status CudaSampler::EnqueueInduced(int relation, const BatchView& view, const NodeTable<Key>& table,
                                         cudaStream_t stream) {
  const RelationSchema& rel = graph_.schema.relations[relation];
  const BatchView::Relation& edges = view.relations[relation];
  const DeviceRelation& csc = graph_.relations[relation];
  const int64_t bound = layout_.capacity.max_nodes[rel.dst_type];
  Workspace& w = *workspace_;
  return DispatchIndex(csc.index_dtype, [&](auto index) -> absl::Status {
    using Index = decltype(index);
    const auto induced_kernel = InducedKernel<Key, Index>;
    const auto launch = [&](const int64_t* offsets) -> absl::Status {
      GNND_LAUNCH(induced_kernel, StrideBlocks(bound * kWarp), kThreads, 0, stream, state_, relation, rel.dst_type,
                  bound, view.types[rel.dst_type].node_ids, csc.indptr, static_cast<const Index*>(csc.indices), table,
                  type_offset_[rel.src_type], w.counts, offsets, edges.edge_src, edges.edge_dst, edges.e_id,
                  edges.num_edges_per_hop, spec_.num_hops());
      return absl::OkStatus();
    };
    GNND_RETURN_IF_ERROR(launch(nullptr));
    GNND_RETURN_IF_ERROR(w.temp.Run("scan an induced batch's edge counts", [&](void* d, size_t& n) {
      return cub::DeviceScan::ExclusiveSum(d, n, w.counts, w.offsets, bound + 1, stream);
    }));
    return launch(w.offsets);
  });
}

absl::Status CudaSampler::SampleLinkGraph(uint64_t epoch, uint64_t batch_index, const int64_t* num_hop0,
                                          std::span<const DeviceExclusions> excluded, void* out, cudaStream_t stream,
                                          const int64_t* subgraph_times) {
  if (spec_.seed_type != -1) return absl::InternalError("SampleLinkGraph on a node batch's sampler");
  if (spec_.temporal() && subgraph_times == nullptr) return absl::InternalError("a temporal link batch's times");
  if (!excluded.empty() && excluded.size() != graph_.schema.relations.size()) {
    return absl::InternalError("a link batch's exclusions: one per relation");
  }
  const BatchArgs args{nullptr, 0, MakeSamplingKey(seed_, epoch, RandomPurpose::kNeighbors), batch_index};
  GNND_ASSIGN_OR_RETURN(Report* const report, ReportOf(out));
  return RunAttempts(args, epoch, stream, report, [&]() -> absl::Status {
    if (needs_reset_) GNND_RETURN_IF_ERROR(ResetDedup(*workspace_, ids_, stream));
    needs_reset_ = true;
    GNND_RETURN_IF_ERROR(
        EnqueueSampling(out, stream, report == nullptr ? nullptr : report->device, num_hop0, excluded, subgraph_times));
    needs_reset_ = false;
    return options_.rows_on_host ? absl::OkStatus() : EnqueueGather(out, stream);
  });
}

absl::Status CudaSampler::RunAttempts(BatchArgs args, uint64_t epoch, cudaStream_t stream, Report* report,
                                      const std::function<absl::Status()>& enqueue) {
  if (options_.fit_sorts && batches_++ == options_.fit_sorts_after) GNND_RETURN_IF_ERROR(FitSorts(stream));
  uint32_t attempt = 0;  // the batch's first, or the one Outgrown chose for it
  if (report != nullptr) {
    if (report->again && report->epoch == epoch && report->batch_index == args.batch_index) attempt = report->attempt;
    report->epoch = epoch;
    report->batch_index = args.batch_index;
    report->attempt = attempt;
    report->again = false;
  }
  if (!spec_.labor.active || options_.fit_sorts) {  // one enqueue: a LABOR batch's outcome is read at delivery
    args.labor_key = labor::Key(seed_, epoch, attempt);
    GNND_RETURN_IF_ERROR(SetBatchArgs(*workspace_, args, stream));
    return enqueue();
  }
  for (; attempt < labor::kMaxAttempts; ++attempt) {
    report->attempt = attempt;
    args.labor_key = labor::Key(seed_, epoch, attempt);
    GNND_RETURN_IF_ERROR(SetBatchArgs(*workspace_, args, stream));
    GNND_RETURN_IF_ERROR(enqueue());
    GNND_CUDA(cudaStreamSynchronize(stream), "sample a LABOR batch");
    if ((*reinterpret_cast<volatile int32_t*>(report->host) & kLaborOverflow) == 0) return absl::OkStatus();
  }
  return LaborOutgrownError("a relation", -1, -1);  // the last attempt's outgrown hop is empty (as the CPU's)
}

absl::StatusOr<CudaSampler::Report*> CudaSampler::ReportOf(const void* out) {
  if (!options_.fit_sorts && !spec_.labor.active) return nullptr;
  for (Report& r : reports_) {
    if (r.out == out) return &r;
  }
  Report r{out};
  GNND_CUDA(cudaHostAlloc(&r.host, sizeof(int32_t), cudaHostAllocMapped), "allocate a batch's report");
  *r.host = 0;
  const cudaError_t mapped = cudaHostGetDevicePointer(&r.device, r.host, 0);
  if (mapped != cudaSuccess) {
    cudaFreeHost(r.host);
    GNND_CUDA(mapped, "map a batch's report");
  }
  reports_.push_back(r);
  return &reports_.back();
}

absl::StatusOr<bool> CudaSampler::Outgrown(const void* out) {
  if (!options_.fit_sorts) return false;  // nothing deferred: Sample drew every attempt it needed
  for (Report& r : reports_) {
    if (r.out != out) continue;
    const int32_t bits = *reinterpret_cast<volatile int32_t*>(r.host);
    *r.host = 0;  // read once: a second call for the same batch repeats the answer
    if ((bits & kSortOutgrown) != 0) {
      GNND_RETURN_IF_ERROR(FitSorts(nullptr));  // the batch is complete: its extents are in `seen`
      r.again = true;                           // the same attempt in the refitted sorts
    }
    if ((bits & kLaborOverflow) != 0) {
      if (r.attempt + 1 == labor::kMaxAttempts) {  // the last attempt's outgrown hop is empty: it fails (as the CPU's)
        r.again = false;
        return LaborOutgrownError("a relation", -1, -1);
      }
      ++r.attempt;  // drawn again under the next attempt's key
      r.again = true;
    }
    return r.again;
  }
  return false;
}

absl::Status CudaSampler::FitSorts(cudaStream_t stream) {
  if (stream != nullptr) GNND_CUDA(cudaStreamSynchronize(stream), "wait for the batches to fit the sorts to");
  const size_t hops = sort_lengths_.size();
  int64_t seen[kMaxHops] = {};
  GNND_CUDA(cudaMemcpy(seen, state_->seen, sizeof(int64_t) * hops, cudaMemcpyDeviceToHost),
            "read how far each hop's keys reached");
  const double margin = std::max(options_.fit_sorts_margin, 1.0);
  bool changed = false;
  for (size_t hop = 0; hop < hops; ++hop) {
    const auto fitted = static_cast<int64_t>(static_cast<double>(seen[hop]) * margin) + options_.fit_sorts_slack;
    const int64_t length = std::clamp<int64_t>(fitted, 1, HopEdgeBound(static_cast<int>(hop)));
    changed |= length != sort_lengths_[hop];
    sort_lengths_[hop] = length;
  }
  if (changed) graphs_.Drop();  // captured with the old lengths
  return absl::OkStatus();
}

int64_t CudaSampler::HopEdgeBound(int hop) const {
  int64_t edges = 0;
  for (int64_t e : layout_.capacity.hops[hop].edges) edges += e;
  return std::max<int64_t>(edges, 1);
}

int64_t CudaSampler::MaxFrontier() const {
  int64_t most = 0;
  for (const BatchCapacity::Hop& hop : layout_.capacity.hops) {
    for (int64_t f : hop.frontier) most = std::max(most, f);
  }
  return most;
}

absl::Status CudaSampler::EnqueueGather(void* out, cudaStream_t stream) {
  const DatasetSchema& schema = graph_.schema;
  const BatchView view = BatchView::At(out, layout_);
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const NodeTypeSchema& type = schema.node_types[t];
    if (view.types[t].features != nullptr) {
      const RowSource rows{static_cast<const char*>(graph_.types[t].features), type.num_nodes, type.feature_row_bytes(),
                           graph_.types[t].hot};
      // Rows past the slot's (slots sized by the batches) are not written: such a batch is not delivered.
      GNND_RETURN_IF_ERROR(GatherRows(view.types[t].node_ids, &state_->num_nodes[t], layout_.capacity.FeatureRows(t),
                                      rows, gather_, view.types[t].features, stream));
    }
    if (view.types[t].labels != nullptr) {
      const RowSource labels{
          reinterpret_cast<const char*>(graph_.types[t].labels), type.num_nodes, sizeof(int64_t), {}};
      GNND_RETURN_IF_ERROR(GatherRows(view.types[t].node_ids, &workspace_->args->num_seeds, layout_.capacity.max_seeds,
                                      labels, gather_, view.types[t].labels, stream));
    }
    for (const BatchView::EdgeRows& rows : view.types[t].attrs) {  // node attributes: every node's row
      const RowSource source{static_cast<const char*>(graph_.arrays[rows.array]), type.num_nodes, rows.row_bytes, {}};
      GNND_RETURN_IF_ERROR(GatherRows(view.types[t].node_ids, &state_->num_nodes[t], layout_.capacity.max_nodes[t],
                                      source, gather_, rows.data, stream));
    }
  }
  // Edge data: each attribute's rows at the CSC positions sampling left in e_id, then e_id the stored ids.
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    const BatchView::Relation& edges = view.relations[r];
    if (edges.e_id == nullptr) continue;
    const RelationSchema& rel = schema.relations[r];
    const int64_t bound = layout_.capacity.max_edges[r];
    for (const BatchView::EdgeRows& rows : edges.attrs) {
      const RowSource source{static_cast<const char*>(graph_.arrays[rows.array]), rel.num_edges, rows.row_bytes, {}};
      GNND_RETURN_IF_ERROR(GatherRows(edges.e_id, &state_->total_edges[r], bound, source, gather_, rows.data, stream));
    }
    GNND_LAUNCH(EdgeIdsKernel, StrideBlocks(bound), kThreads, 0, stream,
                static_cast<const int64_t*>(graph_.arrays[rel.edge_ids]), &state_->total_edges[r], bound, edges.e_id);
  }
  return absl::OkStatus();
}

absl::Status CudaSampler::Prepare(void* out, cudaStream_t stream) {
  if (!options_.use_graphs || stream == nullptr) return absl::OkStatus();
  GNND_ASSIGN_OR_RETURN(Report* const report, ReportOf(out));
  return graphs_
      .For(
          out, stream, [&] { return EnqueueSampling(out, stream, report == nullptr ? nullptr : report->device); },
          [&] { return EnqueueGather(out, stream); })
      .status();
}

absl::Status CudaSampler::Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> device_seeds, void* out,
                                 cudaStream_t stream, cudaEvent_t sampled, std::span<const int64_t> device_seed_times) {
  const int64_t num_seeds = static_cast<int64_t>(device_seeds.size());
  if (num_seeds > layout_.capacity.max_seeds) return absl::InvalidArgumentError("more seeds than the batch capacity");
  if (spec_.time.seed_times_given && device_seed_times.size() != device_seeds.size()) {
    return absl::InternalError("a temporal batch's seeds came without their times");
  }
  const BatchArgs args{device_seeds.data(), num_seeds, MakeSamplingKey(seed_, epoch, RandomPurpose::kNeighbors),
                       batch_index, spec_.time.seed_times_given ? device_seed_times.data() : nullptr};
  GNND_ASSIGN_OR_RETURN(Report* const report, ReportOf(out));
  return RunAttempts(args, epoch, stream, report, [&]() -> absl::Status {
    if (needs_reset_) GNND_RETURN_IF_ERROR(ResetDedup(*workspace_, ids_, stream));
    needs_reset_ = true;  // until this batch's sampling is enqueued whole
    bool enqueued = false;
    const absl::Status status = graphs_.Run(
        out, stream, options_.use_graphs,
        [&] { return EnqueueSampling(out, stream, report == nullptr ? nullptr : report->device); },
        [&] { return EnqueueGather(out, stream); }, !options_.rows_on_host, sampled, &enqueued);
    if (enqueued) needs_reset_ = false;
    return status;
  });
}

}  // namespace gnnd::cuda
