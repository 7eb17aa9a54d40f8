#include <thrust/binary_search.h>
#include <thrust/execution_policy.h>

#include <cub/cub.cuh>
#include <type_traits>

#include "common/batch/link_rule.h"
#include "kernels/cuda/dedup.h"
#include "kernels/cuda/node_table.cuh"
#include "kernels/cuda/sampling.h"

namespace gnnd::cuda {
namespace {

// counts[i] = how many in-neighbors frontier node i contributes; counts[bound] = 0 closes the scan.
// Also keeps where each frontier node's in-neighbor list starts and its degree (`lists`, `degrees`), so
// the sampling kernel reads indptr once per node, not twice (with the CSC in host memory each read
// crosses PCIe), and reads a hot node's list from the hot tier's copy in GPU memory when there is one.
// Calls f(position) for each position of `list` (degree entries, sorted by source) whose source `node`
// excludes, ascending (sources ascend, and so do their positions). Both lookups are link_rule.h's
// SourceRange: the node's entries in the sorted excluded destinations, then each source's in the list.
template <typename Index, typename F>
__device__ void ForExcludedPositions(const DeviceExclusions& ex, int64_t node, const Index* list, int64_t degree,
                                     F&& f) {
  const int64_t pairs[2] = {0, ex.count};  // the excluded destinations as a one-node CSC
  int64_t first = 0, last = 0;
  SourceRange(pairs, ex.dst, node, 0, &first, &last);
  const int64_t range[2] = {0, degree};  // the list as a one-node CSC
  for (int64_t e = first; e < last; ++e) {
    int64_t begin = 0, end = 0;
    SourceRange(range, list, ex.src[e], 0, &begin, &end);
    for (int64_t p = begin; p < end; ++p) f(p);
  }
}

// Where frontier node `node`'s in-neighbor list is: its first entry (in the dataset's CSC, or the hot tier's
// copy), its degree, and its first position in the dataset's CSC (a hot node's read from its indptr).
template <typename Index>
struct InList {
  const Index* list;
  int64_t degree;
  int64_t dataset_first;
};
template <typename Index>
__device__ InList<Index> LocateList(int64_t node, const int64_t* indptr, const Index* indices, const HotView& hot) {
  const int32_t r = hot.adjacency_indptr == nullptr ? -1 : hot.rank[node];
  const int64_t* ptr = indptr + node;
  const Index* list = indices;
  if (r >= 0) {
    ptr = hot.adjacency_indptr[r % hot.num_parts] + r / hot.num_parts;
    list = static_cast<const Index*>(hot.adjacency[r % hot.num_parts]);
  }
  const int64_t first = ptr[0];
  return {list + first, ptr[1] - first, r >= 0 ? indptr[node] : first};
}

// With `firsts`, also each node's first position in the dataset's CSC.
// With `weights` (the weighted rule: `firsts` then set too), a node's count is of its positive-weight edges.
template <typename Index>
__global__ void CountKernel(const HopState* state, const int64_t* node_ids, const int64_t* indptr, const Index* indices,
                            HotView hot, int32_t fanout, int64_t* counts, const void** lists, int64_t* degrees,
                            int64_t* firsts, const float* weights, int64_t bound, DeviceExclusions ex,
                            neighbors::Rule rule) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i > bound) return;
  const int64_t v = state->frontier_begin + i;
  int64_t k = 0;
  if (i < bound && v < state->frontier_end) {
    const int64_t node = node_ids[v];
    const InList<Index> in = LocateList(node, indptr, indices, hot);
    const int64_t degree = in.degree;
    lists[i] = in.list;
    degrees[i] = degree;
    if (firsts != nullptr) firsts[i] = in.dataset_first;
    const float* w = weights == nullptr ? nullptr : weights + in.dataset_first;
    int64_t candidates = degree;
    if (w != nullptr) {
      candidates = 0;
      for (int64_t p = 0; p < degree; ++p) candidates += w[p] > 0;
    }
    int64_t excluded = 0;
    if (ex.dst != nullptr) {
      ForExcludedPositions(ex, node, in.list, degree, [&](int64_t p) {
        ++excluded;
        candidates -= w == nullptr || w[p] > 0;
      });
      ex.counts[i] = excluded;
    }
    k = DrawCount(candidates, fanout, rule);
  } else if (ex.dst != nullptr) {
    ex.counts[i] = 0;
  }
  counts[i] = k;
}

// LABOR-0 (sampling.h, namespace labor) as kernels read it: LaborSource's, with the hop's fanout.
struct LaborArgs {
  labor::Dependency dependency;
  uint32_t source_type;
  int32_t fanout;
  float* weights;     // the relation's edge_weight array in the slot
  int64_t max_edges;  // the hop's bound
  int32_t* overflow;  // set when the hop's edges would exceed it (null: not a LABOR hop)
  // The count kernel hands each node's kept positions to the sample kernel, which then reads neither the node's
  // list nor a variate again.
  uint32_t* kept;                 // the positions, kept_room of them, each node's in a run from
  int64_t* kept_at;               // its run's start (-1: none, the sample kernel draws the node again)
  unsigned long long* kept_used;  // the runs' total (zeroed before the count kernel)
  int64_t kept_room;
};
// The stream of X_t at 1-based `hop` of the batch `batch` describes: each lane takes it once, not once a source.
__device__ __forceinline__ labor::Stream LaborStream(const BatchArgs* batch, const LaborArgs& labor, uint32_t hop) {
  return labor::StreamOf(batch->labor_key, labor.dependency, batch->batch_index, hop, labor.source_type);
}

// A LABOR warp walks its node's list kLaborReads chunks of 32 at a time, reading every entry of them before it
// tests any: a hub's list (thousands of in-edges) is one warp's, and its time is the reads' latency unless
// several are in flight.
inline constexpr int kLaborReads = 4;
// A node's kept positions the count kernel holds in shared memory for the sample kernel (more: drawn again).
inline constexpr int kKeptRoom = 64;
template <typename Index>
__device__ __forceinline__ void ReadLaborChunks(const Index* list, int64_t degree, int64_t start, int lane,
                                                int64_t (&sources)[kLaborReads]) {
#pragma unroll
  for (int j = 0; j < kLaborReads; ++j) {
    const int64_t p = start + j * kWarp + lane;
    sources[j] = p < degree ? static_cast<int64_t>(list[p]) : 0;
  }
}

// LABOR-0's count, a warp a node: how many of its allowed in-edges it keeps (the CPU's loop in
// kernels/cpu/draw.h, the lanes over the list), and which: up to kKeptRoom positions, in list order, handed to the
// sample kernel in a run of LaborArgs::kept claimed with one atomic (the run's place differs between launches, the
// batch does not). Its excluded in-edges (a link batch's, few) are counted, and their keeps taken back, by the
// first lane; such a node hands nothing on.
template <typename Index>
__global__ void LaborCountKernel(const BatchArgs* batch, const HopState* state, const int64_t* node_ids,
                                 const int64_t* indptr, const Index* indices, HotView hot, uint32_t hop,
                                 int64_t* counts, const void** lists, int64_t* degrees, int64_t* firsts, int64_t bound,
                                 DeviceExclusions ex, LaborArgs labor) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (i > bound) return;
  const int64_t v = state->frontier_begin + i;
  if (i == bound || v >= state->frontier_end) {
    if (lane == 0) {
      counts[i] = 0;
      if (ex.dst != nullptr) ex.counts[i] = 0;
    }
    return;
  }
  const int64_t node = node_ids[v];
  const InList<Index> in = LocateList(node, indptr, indices, hot);
  int64_t excluded = 0;
  if (ex.dst != nullptr) {
    if (lane == 0) ForExcludedPositions(ex, node, in.list, in.degree, [&](int64_t) { ++excluded; });
    excluded = __shfl_sync(0xffffffffu, excluded, 0);
  }
  const uint64_t threshold = labor::Threshold(in.degree - excluded, labor.fanout);
  __shared__ uint32_t kept_here[kThreads / kWarp][kKeptRoom];
  uint32_t* mine = kept_here[threadIdx.x / kWarp];
  int64_t kept = 0;              // the same in every lane
  if (threshold > UINT32_MAX) {  // every allowed in-edge, in list order: the sample kernel walks the list
    kept = in.degree - excluded;
  } else {
    const labor::Stream stream = LaborStream(batch, labor, hop);
    for (int64_t start = 0; start < in.degree; start += kLaborReads * kWarp) {
      int64_t sources[kLaborReads];
      ReadLaborChunks(in.list, in.degree, start, lane, sources);
#pragma unroll
      for (int j = 0; j < kLaborReads; ++j) {
        const int64_t p = start + j * kWarp + lane;
        const bool keep =
            p < in.degree && labor::Keeps(labor::Variate(stream, static_cast<uint64_t>(sources[j])), threshold);
        const unsigned keeps = __ballot_sync(0xffffffffu, keep);
        const int64_t at = kept + __popc(keeps & ((1u << lane) - 1));
        if (keep && at < kKeptRoom) mine[at] = static_cast<uint32_t>(p);
        kept += __popc(keeps);
      }
    }
    if (ex.dst != nullptr) {  // the excluded ones' keeps taken back; their positions stay in `mine` (not handed on)
      int64_t back = 0;
      if (lane == 0) {
        ForExcludedPositions(ex, node, in.list, in.degree, [&](int64_t p) {
          back += labor::Keeps(labor::Variate(stream, static_cast<uint64_t>(in.list[p])), threshold);
        });
      }
      kept -= __shfl_sync(0xffffffffu, back, 0);
    }
  }
  // Hand the positions on where they all fit here and in the hop's room; a link batch's node with exclusions,
  // or one that keeps every in-edge, is drawn again by the sample kernel.
  int64_t at = -1;
  if (lane == 0 && ex.dst == nullptr && threshold <= UINT32_MAX && kept <= kKeptRoom && in.degree <= UINT32_MAX) {
    at = static_cast<int64_t>(atomicAdd(labor.kept_used, static_cast<unsigned long long>(kept)));
    if (at + kept > labor.kept_room) at = -1;
  }
  at = __shfl_sync(0xffffffffu, at, 0);
  __syncwarp();
  if (at >= 0) {
    for (int64_t q = lane; q < kept; q += kWarp) labor.kept[at + q] = mine[q];
  }
  if (lane == 0) {
    counts[i] = kept;
    lists[i] = in.list;
    degrees[i] = in.degree;
    labor.kept_at[i] = at;
    if (firsts != nullptr) firsts[i] = in.dataset_first;
    if (ex.dst != nullptr) ex.counts[i] = excluded;
  }
}

// A disjoint batch's subgraphs (FrontierSource's) and the temporal rule's times (TemporalSource's), as kernels
// read them.
struct TimeArgs {
  const int64_t* subgraphs;  // per batch node of the frontier's type: its subgraph (null: not disjoint)
  const int64_t* edge_times;
  const int64_t* node_times;
  const int64_t* seed_times;  // per subgraph
  const int64_t* edge_ids;
  temporal::Rule rule;
  const uint32_t* order;  // the relation's time order, by dataset CSC position
  // In-edge p of a list whose first entry is the dataset CSC's `first`: its source is read only for node times.
  template <typename Index>
  __device__ int64_t TimeOf(int64_t first, int64_t p, const Index* list) const {
    return edge_times != nullptr ? edge_times[first + p] : node_times[list[p]];
  }
};

// A group of kGroup lanes as a mask of its own lanes from bit 0, and its lanes in the calling lane's warp.
template <int kGroup>
inline constexpr unsigned kGroupBits = kGroup == kWarp ? 0xffffffffu : (1u << kGroup) - 1;
template <int kGroup>
__device__ unsigned GroupLanes() {
  return kGroupBits<kGroup> << (threadIdx.x % kWarp / kGroup * kGroup);
}

// The temporal rule's count, a thread a node: its candidates are the prefix of its time order no newer than its
// subgraph's seed (temporal::CandidateCount: a binary search), kept in `candidates` for the draw; less the
// excluded ones among them (a link batch's, few) for its count.
template <typename Index>
__global__ void TemporalCountKernel(const HopState* state, const int64_t* node_ids, const int64_t* indptr,
                                    const Index* indices, HotView hot, int32_t fanout, int64_t* counts,
                                    const void** lists, int64_t* degrees, int64_t* firsts, int64_t* candidates,
                                    int64_t bound, DeviceExclusions ex, TimeArgs time) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i > bound) return;
  const int64_t v = state->frontier_begin + i;
  if (i == bound || v >= state->frontier_end) {
    counts[i] = 0;
    if (ex.dst != nullptr) ex.counts[i] = 0;
    return;
  }
  const int64_t node = node_ids[v];
  const InList<Index> in = LocateList(node, indptr, indices, hot);
  const int64_t seed_time = time.seed_times[time.subgraphs[v]];
  auto time_of = [&](int64_t o) { return time.TimeOf(in.dataset_first, o, in.list); };
  const temporal::Candidates c =
      temporal::CandidatesOf(time.order + in.dataset_first, in.degree, seed_time, time.rule, time_of);
  int64_t m = c.end - c.first;
  lists[i] = in.list;
  degrees[i] = in.degree;
  firsts[i] = in.dataset_first;
  if (ex.dst != nullptr) {
    int64_t excluded = 0;
    ForExcludedPositions(ex, node, in.list, in.degree, [&](int64_t p) {
      ++excluded;
      m -= temporal::Eligible(time_of(p), seed_time, time.rule);
    });
    ex.counts[i] = excluded;
  }
  candidates[i] = c.end;
  counts[i] = SampleCount(m, fanout);
}

// Each frontier node's excluded positions, ascending, from its offset.
template <typename Index>
__global__ void ExcludedPositionsKernel(const HopState* state, const int64_t* node_ids, const void* const* lists,
                                        const int64_t* degrees, int64_t bound, DeviceExclusions ex) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= bound || state->frontier_begin + i >= state->frontier_end || ex.counts[i] == 0) return;
  int64_t* out = ex.positions + ex.offsets[i];
  ForExcludedPositions(ex, node_ids[state->frontier_begin + i], static_cast<const Index*>(lists[i]), degrees[i],
                       [&](int64_t p) { *out++ = p; });
}

// Whether position p is none of a node's `count` excluded positions (ascending): a binary search.
__device__ bool NotExcluded(const int64_t* excluded, int64_t count, int64_t p) {
  return !thrust::binary_search(thrust::seq, excluded, excluded + count, p);
}

// The sampling kernels give each frontier node a group of kGroup lanes and shared memory for the
// positions its first lane draws (up to kPickRoom; more go through global memory) and for a short list
// read whole. With the CSC in GPU memory a group is 8 lanes: several nodes per warp, so more nodes' draws
// (a chain of dependent steps) run at once. With indices in host memory it is a warp: each read of a list over PCIe
// is then one 128-byte request rather than four of 32 (measured: 8 lanes were 18 % slower there).
inline constexpr int kPickRoom = 32;
inline constexpr int kListRoom = 64;
// A read of a scattered neighbor id moves one 32-byte sector (over PCIe when the CSC is in host memory).
inline constexpr int64_t kSectorBytes = 32;

// What a hop's sampling kernel reads and writes (SampleFrontier fills it from the workspace).
// Each relation draws with its own counter (`relation`) and gives sources as global ids (id_offset + id).
// With `edge_pos`, each edge's position in the CSC goes there beside its edge_dst.
template <typename Key>
struct SampleArgs {
  const BatchArgs* batch;
  const HopState* state;
  const int64_t* node_ids;
  const void* const* lists;
  const int64_t* degrees;
  const int64_t* firsts;
  const int64_t* candidates;  // the temporal rule's, per frontier node
  uint32_t hop;
  uint32_t relation;
  int64_t id_offset;
  int64_t src_nodes;  // a disjoint batch's source type's node count (its keys: id_offset + subgraph * src_nodes + id)
  const int64_t* offsets;
  int64_t bound;
  int64_t* sampled;
  int32_t* edge_dst;
  int64_t* edge_pos;
  const float* weights;
  bool weights_positive;
  neighbors::Rule neighbors;  // the uniform and weighted rules', for the hop's fanout (ForFanout)
  NodeTable<Key> table;
  Key* keys;
  DeviceExclusions ex;
  int64_t* hop_edges;
  TimeArgs time;
  LaborArgs labor;
};

// One frontier node as its lane group sees it.
template <typename Index, int kGroup>
struct GroupNode {
  int64_t i;     // in the frontier
  int64_t node;  // its id
  const Index* list;
  int64_t degree;
  int64_t k;         // edges it contributes
  int64_t* out;      // their sources, from its offset
  int64_t subgraph;  // a disjoint batch's (else 0)
  SamplingKey key;   // its draws' (a disjoint batch's subgraph's own)
  int lane;          // in the group
  int group;         // in the block
  int first_lane;    // the group's, in the warp
  unsigned lanes;    // the group's, as a warp mask
};

// The frame both sampling kernels share: finds the group's node, calls draw(node, emit), where emit(p, at,
// neighbor) writes edge p's source (the list's entry `at`), its CSC position and its table insert, then
// writes the node's edge destinations. Each sampled id also goes into the node table; the one insert that
// adds it writes it into `keys` at its edge's position, for the dedup phase to sort (node_table.cuh, dedup.h).
template <typename Index, int kGroup, typename Key, typename Draw>
__device__ __forceinline__ void SampleGroupNode(const SampleArgs<Key>& a, Draw&& draw) {
  GroupNode<Index, kGroup> n;
  n.i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kGroup;
  n.lane = threadIdx.x % kGroup;
  n.group = threadIdx.x / kGroup;
  n.first_lane = threadIdx.x % kWarp / kGroup * kGroup;
  n.lanes = GroupLanes<kGroup>();
  if (a.labor.overflow != nullptr && a.offsets[a.bound] > a.labor.max_edges) {  // LABOR: drawn again, this hop empty
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      *a.hop_edges = 0;
      *a.labor.overflow = 1;
    }
    return;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *a.hop_edges = a.offsets[a.bound];
  if (n.i >= a.bound) return;
  const int64_t v = a.state->frontier_begin + n.i;
  if (v >= a.state->frontier_end) return;
  n.node = a.node_ids[v];
  n.subgraph = a.time.subgraphs == nullptr ? 0 : a.time.subgraphs[v];
  n.key = a.time.subgraphs == nullptr ? a.batch->key : SubgraphKey(a.batch->key, static_cast<uint64_t>(n.subgraph));
  n.list = static_cast<const Index*>(a.lists[n.i]);
  n.degree = a.degrees[n.i];
  const int64_t offset = a.offsets[n.i];
  n.k = a.offsets[n.i + 1] - offset;
  n.out = a.sampled + offset;
  int64_t* positions = a.edge_pos == nullptr ? nullptr : a.edge_pos + a.state->total_edges + offset;
  auto emit = [&](int64_t p, int64_t at, int64_t neighbor) {
    if (positions != nullptr) positions[p] = a.firsts[n.i] + at;
    neighbor += a.id_offset + n.subgraph * a.src_nodes;
    n.out[p] = neighbor;
    bool added = false;
    a.table.Insert(static_cast<Key>(neighbor), &added);
    if (added) a.keys[offset + p] = static_cast<Key>(neighbor);
  };
  draw(n, emit);
  int32_t* dst = a.edge_dst + a.state->total_edges + offset;
  for (int64_t p = n.lane; p < n.k; p += kGroup) dst[p] = static_cast<int32_t>(v);
}

// The uniform rule: the group's first lane draws the positions (the shared rule), the group reads the
// neighbors; a node that keeps all its in-neighbors is copied by the group, coalesced. A list no longer
// than the k sectors its scattered reads would touch is read whole, coalesced, while the positions are
// drawn (EMOGI's merged reads: fewer, fuller transactions).
template <typename Index, int kGroup, typename Key>
__global__ void SampleKernel(SampleArgs<Key> a) {
  constexpr int kNodesPerBlock = kThreads / kGroup;
  __shared__ uint32_t picks[kNodesPerBlock][kPickRoom];
  __shared__ Index cached[kNodesPerBlock][kListRoom];
  SampleGroupNode<Index, kGroup>(a, [&](const GroupNode<Index, kGroup>& n, auto&& emit) {
    const int64_t excluded = a.ex.dst == nullptr ? 0 : a.ex.offsets[n.i + 1] - a.ex.offsets[n.i];
    const int64_t k = n.k, degree = n.degree;
    if (excluded > 0 || a.neighbors.replace) {  // around a link batch's excluded in-edges (k < degree), or replacing
      if (n.lane == 0) {
        ChooseAllowedPositions(n.key, a.batch->batch_index, a.hop, a.relation, static_cast<uint64_t>(n.node), degree,
                               excluded > 0 ? a.ex.positions + a.ex.offsets[n.i] : nullptr, excluded, k, n.out,
                               int64_t{0}, a.neighbors);
      }
      __syncwarp(n.lanes);
      for (int64_t p = n.lane; p < k; p += kGroup) emit(p, n.out[p], n.list[n.out[p]]);
    } else if (k == degree) {
      for (int64_t p = n.lane; p < degree; p += kGroup) emit(p, p, n.list[p]);
    } else {
      const bool whole = degree <= kListRoom && degree * static_cast<int64_t>(sizeof(Index)) <= k * kSectorBytes;
      if (whole) {
        for (int64_t p = n.lane; p < degree; p += kGroup) cached[n.group][p] = n.list[p];
      }
      const bool in_shared = k <= kPickRoom && degree <= UINT32_MAX;
      const uint64_t id = static_cast<uint64_t>(n.node);
      if (in_shared) {  // the group draws the Philox blocks side by side, its first lane inserts the draws in order
        uint32_t* mine = picks[n.group];
        for (int64_t i = 2 * n.lane; i < k; i += 2 * kGroup) {
          Philox4x32 words{};
          mine[i] =
              static_cast<uint32_t>(FloydDraw(n.key, a.batch->batch_index, a.hop, a.relation, id, degree, k, i, words));
          if (i + 1 < k) {
            mine[i + 1] = static_cast<uint32_t>(
                FloydDraw(n.key, a.batch->batch_index, a.hop, a.relation, id, degree, k, i + 1, words));
          }
        }
        __syncwarp(n.lanes);
        if (n.lane == 0) {
          for (int64_t i = 0; i < k; ++i) FloydInsert(mine, degree, k, i, mine[i]);
        }
      } else if (n.lane == 0) {
        ChoosePositions(n.key, a.batch->batch_index, a.hop, a.relation, id, degree, k, n.out);
      }
      __syncwarp(n.lanes);
      for (int64_t p = n.lane; p < k; p += kGroup) {
        const int64_t at = in_shared ? static_cast<int64_t>(picks[n.group][p]) : n.out[p];
        emit(p, at, whole ? cached[n.group][at] : n.list[at]);
      }
    }
  });
}

// The weighted rule over `weights` (sampling.h: the k smallest draws), a warp a node wherever the CSC is:
// a node's draws are a chain over its list, a chunk at a time, and the longest lists set the kernel's
// time (measured on the papers-sized graph: 8-lane groups drew at 1.58 / 1.35 x the uniform rule's time,
// a warp at 1.29 / 1.13). The lanes take one position each a chunk (a list no longer than a warp) or four
// consecutive ones (one Philox block), their weights read a chunk ahead. The first chunk's k smallest draws are taken
// out one at a time (the warp's least key, ties to the earlier position) into the node's sorted list (shared memory;
// `sampled` for k > kPickRoom); later draws below the k-th so far go in one by one in lane order: the rule defines the
// list independently of the order draws arrive in. A float estimate of each key skips the exact one when it is
// certainly above the k-th. A fanout that takes every candidate takes them in list order, each lane's place
// counted from the chunk's ballot. Its own kernel, held to 64 registers (four blocks a multiprocessor).
template <typename Index, typename Key>
__global__ void __launch_bounds__(kThreads, 4) WeightedSampleKernel(SampleArgs<Key> a) {
  constexpr int kGroup = kWarp;
  constexpr int kNodesPerBlock = kThreads / kGroup;
  __shared__ uint64_t best_draws[kNodesPerBlock][kPickRoom];
  SampleGroupNode<Index, kGroup>(a, [&](const GroupNode<Index, kGroup>& n, auto&& emit) {
    const int64_t k = n.k, degree = n.degree, lane = n.lane;
    const int64_t excluded = a.ex.dst == nullptr ? 0 : a.ex.offsets[n.i + 1] - a.ex.offsets[n.i];
    const float* w = a.weights + a.firsts[n.i];
    const int64_t* excluded_at = excluded > 0 ? a.ex.positions + a.ex.offsets[n.i] : nullptr;
    auto allowed = [&](int64_t p) { return NotExcluded(excluded_at, excluded, p); };
    auto candidate = [&](int64_t p) { return w[p] > 0 && allowed(p); };
    if (a.neighbors.replace) {  // one lane draws (replacement::ChooseWeighted, a pass over the list), the group reads
      if (lane == 0 && k > 0) {
        replacement::ChooseWeighted(
            n.key, a.batch->batch_index, a.hop, a.relation, static_cast<uint64_t>(n.node), degree,
            [&](int64_t p) { return candidate(p) ? w[p] : 0.0f; }, k, n.out);
      }
      __syncwarp(n.lanes);
      for (int64_t p = lane; p < k; p += kGroup) emit(p, n.out[p], n.list[n.out[p]]);
      return;
    }
    bool all = k == degree - excluded;  // does the fanout take every candidate? (k counts them then)
    if (k > 0 && !a.weights_positive) {
      int64_t candidates = 0;
      for (int64_t c = 0; c < degree && candidates <= k; c += kGroup) {
        const unsigned mask = __ballot_sync(n.lanes, c + lane < degree && candidate(c + lane));
        candidates += __popc(mask);
      }
      all = candidates == k;
    }
    if (all) {
      int64_t taken = 0;
      for (int64_t c = 0; c < degree && taken < k; c += kGroup) {
        const int64_t p = c + lane;
        const bool yes = p < degree && candidate(p);
        const unsigned mask = __ballot_sync(n.lanes, yes);
        if (yes) emit(taken + __popc(mask & ((1u << lane) - 1)), p, n.list[p]);
        taken += __popc(mask);
      }
      return;
    }
    uint64_t* best = k <= kPickRoom ? best_draws[n.group] : reinterpret_cast<uint64_t*>(n.out);
    int64_t count = 0;  // lane 0 keeps the list; the others learn its length after each chunk
    uint64_t threshold = UINT64_MAX;
    // kPer positions a lane a chunk: a lane of a short list computes one key, not four.
    auto draw_chunks = [&](auto per_lane) {
      constexpr int kPer = decltype(per_lane)::value;
      float ahead[kPer];  // the next chunk's weights of this lane's positions
      auto read_weights = [&](int64_t first) {
        for (int j = 0; j < kPer; ++j) ahead[j] = first + j < degree ? w[first + j] : 0.0f;
      };
      read_weights(kPer * lane);
      for (int64_t c = 0; c < degree; c += kPer * kGroup) {
        const int64_t first = c + kPer * lane;
        float weight[kPer];
        for (int j = 0; j < kPer; ++j) weight[j] = ahead[j];
        read_weights(first + kPer * kGroup);
        Philox4x32 block{};
        if (first < degree) {
          block = WeightedWords(n.key, a.batch->batch_index, a.hop, a.relation, static_cast<uint64_t>(n.node),
                                static_cast<uint32_t>(first >> 2));
        }
        uint32_t words[kPer];
        for (int j = 0; j < kPer; ++j) {
          if constexpr (kPer == 4) {
            words[j] = block.v[j];
          } else {
            const int at = static_cast<int>(first & 3);
            words[j] = at == 0 ? block.v[0] : at == 1 ? block.v[1] : at == 2 ? block.v[2] : block.v[3];
          }
        }
        // A fast estimate of -ln U (error below 1e-6 (1 + its value)) skips a key that is certainly above the
        // k-th smallest so far; the others get their exact key.
        const float limit = __uint_as_float(static_cast<uint32_t>(threshold >> 32));
        uint64_t draws[kPer];
        for (int j = 0; j < kPer; ++j) {
          const int64_t p = first + j;
          draws[j] = UINT64_MAX;
          if (p < degree && weight[j] > 0 && (excluded == 0 || allowed(p))) {
            const float estimate = -__logf((static_cast<float>(words[j]) + 0.5f) * 0x1p-32f);
            if (threshold == UINT64_MAX || estimate * (1 - 0x1p-16f) - 0x1p-16f <= limit * weight[j]) {
              draws[j] = WeightedDrawOf(words[j], static_cast<uint32_t>(p), weight[j]);
            }
          }
        }
        if (count == 0) {
          // The list is empty: its entries are the chunk's smallest draws, taken out in order. Keys' bits (32
          // of the 64) compare as the draws do; among equal ones the lowest lane, then the lowest j, has the
          // earlier position. An absent draw's bits are all ones, above every key.
          uint32_t bits[kPer];
          for (int j = 0; j < kPer; ++j) bits[j] = static_cast<uint32_t>(draws[j] >> 32);
          while (count < k) {
            uint32_t mine = bits[0];
            for (int j = 1; j < kPer; ++j) mine = min(mine, bits[j]);
            const uint32_t least = __reduce_min_sync(n.lanes, mine);
            if (least == UINT32_MAX) break;
            const unsigned holders = __ballot_sync(n.lanes, mine == least);
            if (lane == __ffs(holders) - 1) {
              bool done = false;
              for (int j = 0; j < kPer; ++j) {
                if (!done && bits[j] == least) {
                  best[count] = draws[j];
                  bits[j] = UINT32_MAX;
                  done = true;
                }
              }
            }
            ++count;
          }
        } else {
          for (int j = 0; j < kPer; ++j) {  // the few below the k-th so far go in one by one, in lane order
            unsigned mask = __ballot_sync(n.lanes, draws[j] < threshold);
            while (mask != 0) {
              const int from = __ffs(mask) - 1;
              const uint64_t that = __shfl_sync(n.lanes, draws[j], from);
              if (lane == 0) KeepSmallest(that, k, best, &count);
              mask &= mask - 1;
            }
            count = __shfl_sync(n.lanes, count, 0);
            __syncwarp(n.lanes);
            if (count == k) threshold = best[k - 1];
          }
        }
        __syncwarp(n.lanes);
        if (count == k) threshold = best[k - 1];
      }
    };
    if (degree <= kGroup) {
      draw_chunks(std::integral_constant<int, 1>{});
    } else {
      draw_chunks(std::integral_constant<int, 4>{});
    }
    __syncwarp(n.lanes);
    for (int64_t q = lane; q < k; q += kGroup) {
      const int64_t p = DrawPosition(best[q]);
      emit(q, p, n.list[p]);
    }
  });
}

// The temporal rule (sampling.h) over a node's time order, a thread a node: its candidates are the first
// `candidates` entries (TemporalCountKernel), less the excluded ones (their positions, from
// ExcludedPositionsKernel, turned into their ranks in place by temporal::RankOf); ChooseTemporalRanks
// (link_rule.h) picks k of the allowed ranks; each rank's order entry is its position, and the positions go out
// ascending. The CPU draw (kernels/cpu/draw.h) is the same steps.
template <typename Index, typename Key>
__global__ void TemporalSampleKernel(SampleArgs<Key> a) {
  SampleGroupNode<Index, 1>(a, [&](const GroupNode<Index, 1>& n, auto&& emit) {
    const int64_t k = n.k;
    if (k == 0) return;
    const TimeArgs& t = a.time;
    const int64_t first = a.firsts[n.i], end = a.candidates[n.i];
    const uint32_t* order = t.order + first;
    auto time_of = [&](int64_t o) { return t.TimeOf(first, o, n.list); };
    auto id_of = [&](int64_t o) { return t.edge_ids != nullptr ? t.edge_ids[first + o] : o; };
    const temporal::Candidates candidates{
        temporal::FirstCandidate(order, end, t.seed_times[n.subgraph], t.rule, time_of), end};
    const int64_t excluded = a.ex.dst == nullptr ? 0 : a.ex.offsets[n.i + 1] - a.ex.offsets[n.i];
    int64_t* ranks = excluded > 0 ? a.ex.positions + a.ex.offsets[n.i] : nullptr;
    for (int64_t j = 0; j < excluded; ++j) {
      const int64_t p = ranks[j];
      ranks[j] = temporal::RankOf(order, n.degree, time_of(p), id_of(p), time_of, id_of);
    }
    SortAscending(ranks, excluded);
    int64_t* picks = n.out;  // ranks, then positions, then (emit) the sources
    ChooseTemporalRanks(n.key, a.batch->batch_index, a.hop, a.relation, static_cast<uint64_t>(n.node),
                        t.rule.strategy == TemporalStrategy::kLast, candidates, ranks, excluded, k, picks);
    for (int64_t q = 0; q < k; ++q) picks[q] = order[picks[q]];
    SortAscending(picks, k);
    for (int64_t q = 0; q < k; ++q) {
      const int64_t p = picks[q];
      emit(q, p, n.list[p]);
    }
  });
}

// LABOR-0's draw, a warp a node: the positions the count kernel handed on, or else (a node keeping every in-edge,
// more than kKeptRoom, or with excluded ones) the lanes take the list kLaborReads chunks of 32 at a time, each
// keeping its position by the rule (not excluded, r_t below the threshold). The kept ones go out in list order (a
// ballot gives each its place), with their weight.
template <typename Index, typename Key>
__global__ void LaborSampleKernel(SampleArgs<Key> a) {
  SampleGroupNode<Index, kWarp>(a, [&](const GroupNode<Index, kWarp>& n, auto&& emit) {
    if (n.k == 0) return;
    const int64_t excluded = a.ex.dst == nullptr ? 0 : a.ex.offsets[n.i + 1] - a.ex.offsets[n.i];
    const int64_t* excluded_positions = excluded > 0 ? a.ex.positions + a.ex.offsets[n.i] : nullptr;
    const uint64_t threshold = labor::Threshold(n.degree - excluded, a.labor.fanout);
    const float weight = labor::Weight(n.degree - excluded, a.labor.fanout);
    float* weights = a.labor.weights + a.state->total_edges + a.offsets[n.i];
    const int64_t kept_at = a.labor.kept_at[n.i];
    if (kept_at >= 0) {  // the count kernel's positions
      for (int64_t q = n.lane; q < n.k; q += kWarp) {
        const int64_t p = a.labor.kept[kept_at + q];
        emit(q, p, n.list[p]);
        weights[q] = weight;
      }
      return;
    }
    const labor::Stream stream = LaborStream(a.batch, a.labor, a.hop);
    int64_t base = 0;
    for (int64_t start = 0; start < n.degree; start += kLaborReads * kWarp) {
      int64_t sources[kLaborReads];
      ReadLaborChunks(n.list, n.degree, start, n.lane, sources);
      bool keeps[kLaborReads];
#pragma unroll
      for (int j = 0; j < kLaborReads; ++j) {
        const int64_t p = start + j * kWarp + n.lane;
        keeps[j] = p < n.degree && (excluded == 0 || NotExcluded(excluded_positions, excluded, p)) &&
                   (threshold > UINT32_MAX ||
                    labor::Keeps(labor::Variate(stream, static_cast<uint64_t>(sources[j])), threshold));
      }
#pragma unroll
      for (int j = 0; j < kLaborReads; ++j) {
        const unsigned kept = __ballot_sync(n.lanes, keeps[j]);
        if (keeps[j]) {
          const int64_t q = base + __popc(kept & ((1u << n.lane) - 1));
          emit(q, start + j * kWarp + n.lane, sources[j]);
          weights[q] = weight;
        }
        base += __popc(kept);
      }
    }
  });
}

// One hop of `source` drawn by its policy `draw`: the count kernel and the sample kernel of that policy.
template <typename Draw>
absl::Status SampleWith(const Draw& draw, Workspace& w, const HopState* state, const FrontierSource& source,
                        int64_t frontier, int hop, int32_t fanout, const IdRange& ids, const int64_t* node_ids,
                        int64_t* sampled, int64_t keys_at, int32_t* edge_dst, int64_t* edge_pos, int64_t* hop_edges,
                        cudaStream_t stream, const DeviceExclusions& excluded) {
  constexpr bool kWeighted = std::is_same_v<Draw, WeightedSource>, kTemporal = std::is_same_v<Draw, TemporalSource>,
                 kLabor = std::is_same_v<Draw, LaborSource>;
  const float* weights = nullptr;
  bool weights_positive = false;
  neighbors::Rule rule;
  TimeArgs time{source.subgraphs, nullptr, nullptr, nullptr, nullptr, {}, nullptr};
  LaborArgs labor{{}, 0, fanout, nullptr, 0, nullptr, nullptr, nullptr, nullptr, 0};
  if constexpr (kWeighted) {
    weights = draw.weights;
    weights_positive = draw.positive;
    rule = draw.rule.ForFanout(fanout);
  } else if constexpr (std::is_same_v<Draw, UniformSource>) {
    rule = draw.rule.ForFanout(fanout);
  } else if constexpr (kTemporal) {
    time = {source.subgraphs, draw.edge_times, draw.node_times, draw.seed_times, draw.edge_ids, draw.rule, draw.order};
  } else if constexpr (kLabor) {
    labor = {draw.dependency, draw.src_type, fanout,          draw.edge_weight,  draw.max_edges,
             draw.overflow,   w.labor_kept,  w.labor_kept_at, w.labor_kept_used, w.max_edges};
  }
  return DispatchIndex(source.index_dtype, [&](auto index) -> absl::Status {
    using Index = decltype(index);
    const auto* indices = static_cast<const Index*>(source.indices);
    const bool firsts = edge_pos != nullptr || kWeighted;
    if constexpr (kLabor) {
      GNND_CUDA(cudaMemsetAsync(w.labor_kept_used, 0, sizeof(*w.labor_kept_used), stream),
                "clear LABOR's kept positions");
      GNND_LAUNCH(LaborCountKernel<Index>, Blocks((frontier + 1) * kWarp), kThreads, 0, stream, w.args, state, node_ids,
                  source.indptr, indices, source.hot, static_cast<uint32_t>(hop + 1), w.counts, w.lists, w.degrees,
                  firsts ? w.firsts : nullptr, frontier, excluded, labor);
    } else if constexpr (kTemporal) {
      GNND_LAUNCH(TemporalCountKernel<Index>, Blocks(frontier + 1), kThreads, 0, stream, state, node_ids, source.indptr,
                  indices, source.hot, fanout, w.counts, w.lists, w.degrees, w.firsts, w.candidates, frontier, excluded,
                  time);
    } else {
      GNND_LAUNCH(CountKernel<Index>, Blocks(frontier + 1), kThreads, 0, stream, state, node_ids, source.indptr,
                  indices, source.hot, fanout, w.counts, w.lists, w.degrees, firsts ? w.firsts : nullptr,
                  weights_positive ? nullptr : weights, frontier, excluded, rule);
    }
    GNND_RETURN_IF_ERROR(w.temp.Run("scan counts", [&](void* d, size_t& n) {
      return cub::DeviceScan::ExclusiveSum(d, n, w.counts, w.offsets, frontier + 1, stream);
    }));
    if (excluded.dst != nullptr) {
      GNND_RETURN_IF_ERROR(w.temp.Run("scan excluded positions", [&](void* d, size_t& n) {
        return cub::DeviceScan::ExclusiveSum(d, n, excluded.counts, excluded.offsets, frontier + 1, stream);
      }));
      GNND_LAUNCH(ExcludedPositionsKernel<Index>, Blocks(frontier), kThreads, 0, stream, state, node_ids, w.lists,
                  w.degrees, frontier, excluded);
    }
    return DispatchKey(ids, [&](auto key) -> absl::Status {
      using Key = decltype(key);
      const SampleArgs<Key> args{w.args,
                                 state,
                                 node_ids,
                                 w.lists,
                                 w.degrees,
                                 w.firsts,
                                 w.candidates,
                                 static_cast<uint32_t>(hop + 1),
                                 source.relation,
                                 source.id_offset,
                                 source.src_nodes,
                                 w.offsets,
                                 frontier,
                                 sampled,
                                 edge_dst,
                                 edge_pos,
                                 weights,
                                 weights_positive,
                                 rule,
                                 TableOf<Key>(w),
                                 reinterpret_cast<Key*>(w.keys) + keys_at,
                                 excluded,
                                 hop_edges,
                                 time,
                                 labor};
      if constexpr (kLabor) {
        GNND_LAUNCH((LaborSampleKernel<Index, Key>), Blocks(frontier * kWarp), kThreads, 0, stream, args);
      } else if constexpr (kTemporal) {
        GNND_LAUNCH((TemporalSampleKernel<Index, Key>), Blocks(frontier), kThreads, 0, stream, args);
      } else if constexpr (kWeighted) {
        GNND_LAUNCH((WeightedSampleKernel<Index, Key>), Blocks(frontier * kWarp), kThreads, 0, stream, args);
      } else if (source.csc == CscPlacement::kDevice) {
        GNND_LAUNCH((SampleKernel<Index, 8, Key>), Blocks(frontier * 8), kThreads, 0, stream, args);
      } else {
        GNND_LAUNCH((SampleKernel<Index, kWarp, Key>), Blocks(frontier * kWarp), kThreads, 0, stream, args);
      }
      return absl::OkStatus();
    });
  });
}

}  // namespace

absl::Status SampleFrontier(Workspace& w, const HopState* state, const FrontierSource& source, int64_t frontier,
                            int hop, int32_t fanout, const IdRange& ids, const int64_t* node_ids, int64_t* sampled,
                            int64_t keys_at, int32_t* edge_dst, int64_t* edge_pos, int64_t* hop_edges,
                            cudaStream_t stream, const DeviceExclusions& excluded) {
  if (excluded.dst != nullptr && excluded.positions_bound > excluded.max_positions) {
    return absl::ResourceExhaustedError("a link batch's excluded positions exceed their scratch");
  }
  return std::visit(
      [&](const auto& draw) {
        return SampleWith(draw, w, state, source, frontier, hop, fanout, ids, node_ids, sampled, keys_at, edge_dst,
                          edge_pos, hop_edges, stream, excluded);
      },
      source.draw);
}

}  // namespace gnnd::cuda
