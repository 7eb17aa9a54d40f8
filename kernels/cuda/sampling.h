// Sampling phase of the CUDA backend: for one hop, how many in-neighbors each frontier node contributes
// (the shared rule, common/batch/sampling.h), their offsets, and the sampled neighbors themselves.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <variant>

#include "absl/status/status.h"
#include "common/batch/sampling.h"
#include "common/batch/spec.h"
#include "kernels/cuda/dedup.h"
#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

// The draw policies of common/batch/sampling.h as a hop's kernels read them, one a relation (the CPU's are
// kernels/cpu/draw.h, the same rules): each has its count and sample kernels, chosen once a hop.
struct UniformSource {
  neighbors::Rule rule;  // SamplingSpec::neighbors
};
// The weighted rule: the relation's weights in CSC order (device-visible).
struct WeightedSource {
  const float* weights = nullptr;
  bool positive = false;  // every weight > 0: a node's candidates are its in-edges (none counted)
  neighbors::Rule rule;   // SamplingSpec::neighbors
};
// The temporal rule: each in-edge's time, edge_times[position in the dataset's CSC] or node_times[source id];
// each subgraph's seed time; "last"'s tie-breaking ids (edge_ids[position], null: the position); the
// relation's time order (by CSC position), all device-visible.
struct TemporalSource {
  const int64_t* edge_times = nullptr;
  const int64_t* node_times = nullptr;
  const int64_t* seed_times = nullptr;
  const int64_t* edge_ids = nullptr;
  temporal::Rule rule;
  const uint32_t* order = nullptr;
};
// LABOR-0 (namespace labor): the relation's source type (in r_t's counter), the dependency, the slot's
// edge_weight array of the relation (each sampled edge's weight beside its edge_dst), and the hop's bound of
// the relation's edges, past which `overflow` (device-visible) is set and the hop's edges are left out.
struct LaborSource {
  labor::Dependency dependency;
  uint32_t src_type = 0;
  float* edge_weight = nullptr;
  int64_t max_edges = 0;
  int32_t* overflow = nullptr;
};
using DrawSource = std::variant<UniformSource, WeightedSource, TemporalSource, LaborSource>;

// A relation's CSC as a hop reads it (one per relation: cuda_sampler.h), and where its lists are cached; its draw
// policy.
struct FrontierSource {
  const int64_t* indptr = nullptr;
  const void* indices = nullptr;
  v1::IndexDType index_dtype = v1::INDEX_DTYPE_INT64;
  HotView hot;
  CscPlacement csc = CscPlacement::kDevice;
  uint32_t relation = 0;  // in the draw's counter
  int64_t id_offset = 0;  // added to each sampled id (a typed batch's table holds global ids)
  // A disjoint batch: each frontier node's subgraph (the destination type's batch array in the slot), and
  // the source type's node count (a sampled source's key is id_offset + subgraph * src_nodes + id). Null:
  // not disjoint.
  const int64_t* subgraphs = nullptr;
  int64_t src_nodes = 0;
  DrawSource draw;
};
// A link batch's excluded edges as the sampling kernels read them (common/batch/link_rule.h: exclusion
// inside the draw): the (destination, source) pairs, sorted and distinct (EdgeExclusions), and scratch for
// each frontier node's excluded positions in its in-neighbor list. Null dst: nothing excluded.
struct DeviceExclusions {
  const int64_t* dst = nullptr;  // device memory
  const int64_t* src = nullptr;
  int64_t count = 0;
  // The excluded positions of one hop at most: every excluded pair's parallel edges (the caller counts
  // them, ExcludedPositions); the scratch below holds max_positions.
  int64_t positions_bound = 0;
  int64_t max_positions = 0;
  int64_t* counts = nullptr;     // per frontier node and one more: its excluded positions
  int64_t* offsets = nullptr;    // their exclusive scan
  int64_t* positions = nullptr;  // each node's, ascending, from its offset
};

// Samples one hop around the frontier `state` gives (of at most `frontier` nodes, ids in `node_ids`) from
// `source`: edge destinations into edge_dst (after state->total_edges), sources into `sampled` and the ids
// it adds to the node table into w.keys (from `keys_at`); the hop's edge count is then w.offsets[frontier].
// `keys_at`: where in w.keys (in elements of the dedup's id type) this hop's keys start.
// With `excluded`, no excluded edge is drawn and a node still gets min(fanout, in-degree - excluded).
// `hop_edges` (device memory): where the sampling kernel also writes the hop's edge count (no launch of its own).
// `edge_pos` (null: none): where each sampled edge's position in the relation's CSC goes, beside edge_dst.
absl::Status SampleFrontier(Workspace& w, const HopState* state, const FrontierSource& source, int64_t frontier,
                            int hop, int32_t fanout, const IdRange& ids, const int64_t* node_ids, int64_t* sampled,
                            int64_t keys_at, int32_t* edge_dst, int64_t* edge_pos, int64_t* hop_edges,
                            cudaStream_t stream, const DeviceExclusions& excluded = {});

}  // namespace gnnd::cuda
