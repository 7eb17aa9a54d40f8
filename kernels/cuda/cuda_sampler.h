// The CUDA backend: the CPU sampler's rule (kernels/cpu/sampler.h) on the GPU, bit-identical to it, for every
// dataset and batch kind — a homogeneous dataset is its one node type and one relation. One node table
// of global ids (a type's offset plus its id; a disjoint batch's keyed by subgraph too) serves the whole batch. Each
// hop runs every relation's draws (sampling.h) around its destination type's frontier, each into its own segment of one
// key buffer; one sort of that buffer then orders the new nodes by type and by id within a type, the order the rule
// appends them in (dedup.h's table). Every buffer is allocated up front from the layout's capacity (but for a
// 4-byte report an output, at its first batch); Sample() launches work on its stream without waiting for it (but a
// LABOR batch without fitted sorts, and once when the sorts are fitted): counts stay on the device and each launch
// covers a host-side bound. A hop's new ids are written at their edges' positions in the key buffer and sorted
// over the hop's edge bound, or with fitted sorts over a length fitted to the batches seen (a batch draws several
// times fewer edges than its bound allows, and sorting is most of a batch's time): see fit_sorts. A batch's launches
// are the same for every batch into the same output (what varies, the seeds and the draw's key, is written to the
// device first: BatchArgs), so they are captured once per output as two CUDA graphs (sampling, gather) and replayed.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/layout.h"
#include "kernels/cuda/batch_graphs.h"
#include "kernels/cuda/dedup.h"
#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/gather.h"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

// What one kernel launch is told about the batch (passed by value: under the 4 KiB parameter limit).
inline constexpr int kMaxCudaTypes = 16;
inline constexpr int kMaxCudaRelations = 48;

struct BatchState;  // per-type and per-relation sizes on the device (cuda_sampler.cu)
template <typename Key>
struct NodeTable;  // the batch's node table (node_table.cuh)

struct CudaSamplerOptions {
  bool use_graphs = true;  // replay captured CUDA graphs, or launch every kernel each batch (comparisons)
  bool wide_ids = false;   // dedup in 64-bit ids even where 32 bits hold them (tests of that path)
  // Rows that are not multiples of 16 bytes: 16-byte loads shifted through shared memory, or the widest
  // narrower loads that fit (kept for comparison in benchmarks).
  bool shifted_gather = true;
  // Sampling alone: rows, labels, attributes and e_id's stored ids are the host's to write (open.producer
  // "host_gather"; e_id is left as each edge's CSC position).
  bool rows_on_host = false;
  // Fitted sorts: after `fit_sorts_after` batches each hop's sort covers the furthest its keys have reached so far
  // (its edges, for one relation; a typed hop's last relation's edges after the others' bounds) times
  // `fit_sorts_margin` (at least 1), plus `fit_sorts_slack`. A batch that outgrows a hop's length is still written
  // whole, but its nodes past that length are out of order: Outgrown(out) says so once the batch is
  // complete, and the caller samples it again (the lengths, refitted by Outgrown, then hold it). So is a LABOR
  // batch that outgrew a hop's edge bound: with fitted sorts Sample does not wait for it, and sampling it again
  // draws the next attempt (without, Sample waits for each attempt on the host).
  bool fit_sorts = false;
  int fit_sorts_after = 4;
  double fit_sorts_margin = 1.25;
  int64_t fit_sorts_slack = 1024;
};

class CudaSampler {
 public:
  using Options = CudaSamplerOptions;
  // Writes batches into buffers laid out by `layout` (BatchLayout::Make of `spec`, or a homogeneous layout
  // seen as one: AsBatchLayout), its capacity sizing every buffer on the current device. Rows and in-neighbor lists
  // come through each type's hot tier where graph.types[t].hot has one.
  static absl::StatusOr<std::unique_ptr<CudaSampler>> Create(const DeviceGraph& graph, const SamplingSpec& spec,
                                                             uint64_t seed, const BatchLayout& layout,
                                                             Options options = {});
  ~CudaSampler();

  // Enqueues the batch for (epoch, batch_index) around `device_seeds` (ids of the seed type, device memory)
  // on `stream`, writing every array of the buffer at `out` (device memory laid out by layout()).
  // `device_seed_times`: a temporal spec's seed times when it says they are given (one per seed).
  // A LABOR batch that outgrows a hop's bound is drawn again under the next attempt's key (common/batch/sampling.h,
  // labor): by Sample, which waits for each attempt on the host, or with fit_sorts by the caller (Outgrown). After
  // labor::kMaxAttempts the batch fails (LaborOutgrownError), as the CPU sampler's.
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> device_seeds, void* out,
                      cudaStream_t stream, cudaEvent_t sampled = nullptr,
                      std::span<const int64_t> device_seed_times = {});
  // A link batch (spec.seed_type -1, LinkSampling): hop 0 of each type t is the num_hop0[t] ids already at
  // the start of its node_ids in `out` (num_hop0: device memory, one per type), no edge excluded[r] lists is a
  // sampled edge of relation r (excluded: empty, or one per relation; their scratch large enough for any
  // frontier, MaxFrontier()), then every type's feature rows. Launched kernel by kernel (the exclusions change
  // every batch). A disjoint batch's hop-0 entry i of every type is subgraph i; a temporal one's
  // `subgraph_times` (device memory) each subgraph's time (LinkSeeds::subgraph_time).
  absl::Status SampleLinkGraph(uint64_t epoch, uint64_t batch_index, const int64_t* num_hop0,
                               std::span<const DeviceExclusions> excluded, void* out, cudaStream_t stream,
                               const int64_t* subgraph_times = nullptr);
  // With fit_sorts: whether the last batch written to `out` (complete on the GPU) must be sampled again, the same
  // batch and out: it outgrew a hop's fitted sort (its nodes out of order; the lengths are refitted here to hold
  // it), or a LABOR hop's edge bound (the next Sample of it draws the next attempt; the last attempt's is
  // LaborOutgrownError).
  absl::StatusOr<bool> Outgrown(const void* out);
  // The largest frontier of any hop and relation (the exclusions' per-node scratch).
  int64_t MaxFrontier() const;
  const BatchLayout& layout() const { return layout_; }
  const SamplingSpec& spec() const { return spec_; }
  // Captures and instantiates the graphs that Sample launches for `out` on `stream` now, rather than at its
  // first batch (tens of kernels each: work for a setup thread, not for a session's step).
  absl::Status Prepare(void* out, cudaStream_t stream);
  // Whether the batches enqueued from now on leave their rows to the host (Options::rows_on_host): a session
  // under open.producer "auto" may move from one to the other between batches.
  void SetRowsOnHost(bool on) { options_.rows_on_host = on; }

 private:
  CudaSampler() = default;
  // num_hop0 null: a node batch (the seeds of BatchArgs); else a link batch's (SampleLinkGraph).
  // `report`: where the batch reports (Report::device), or null.
  absl::Status EnqueueSampling(void* out, cudaStream_t stream, int32_t* report, const int64_t* num_hop0 = nullptr,
                               std::span<const DeviceExclusions> excluded = {},
                               const int64_t* link_subgraph_times = nullptr);
  absl::Status EnqueueGather(void* out, cudaStream_t stream);
  // Relation r's draw policy in this spec: the one place the CUDA backend picks it (the CPU's: CpuSampler::DrawOf),
  // with what its kernels read of the batch `view` (hop bound `edges`; a temporal link batch's subgraph times).
  DrawSource DrawSourceOf(int r, const BatchView& view, const BatchCapacity::Hop& hop,
                          const int64_t* link_subgraph_times) const;
  // An induced batch's edges of `relation` (SamplingSpec::induced) from the nodes in `table`, over those drawn.
  template <typename Key>
  absl::Status EnqueueInduced(int relation, const BatchView& view, const NodeTable<Key>& table, cudaStream_t stream);
  // What a batch into one output reported (ClearKernel writes its bits) and which attempt it drew.
  struct Report {
    const void* out = nullptr;
    int32_t* host = nullptr;    // mapped host memory: a sort outgrown (1), a LABOR bound (2)
    int32_t* device = nullptr;  // the same, as the kernels see it
    uint64_t epoch = 0, batch_index = 0;
    uint32_t attempt = 0;
    bool again = false;  // Outgrown asked for (epoch, batch_index) again, under `attempt`
  };
  // Runs `enqueue` (a batch under `args`) once, or for a LABOR spec without fitted sorts until no hop outgrew its
  // bound (each attempt under its own key, the host waiting for each).
  absl::Status RunAttempts(BatchArgs args, uint64_t epoch, cudaStream_t stream, Report* report,
                           const std::function<absl::Status()>& enqueue);
  // The report of `out` (null where nothing is reported: neither fitted sorts nor LABOR), made at its first batch
  // (not while a graph is captured).
  absl::StatusOr<Report*> ReportOf(const void* out);
  // Fits each hop's sort length (sort_lengths_) to the furthest its keys have reached (BatchState::seen) once
  // `stream`'s batches are complete; drops the captured graphs when a length changed.
  absl::Status FitSorts(cudaStream_t stream);
  // The edges hop `hop` may draw over every relation (its keys' bound), at least 1.
  int64_t HopEdgeBound(int hop) const;

  DeviceGraph graph_;
  SamplingSpec spec_;
  uint64_t seed_ = 0;
  BatchLayout layout_;
  IdRange ids_;
  Options options_;
  GatherOptions gather_;
  bool needs_reset_ = false;
  std::unique_ptr<Workspace> workspace_;
  BatchState* state_ = nullptr;                   // device memory
  HopState* rel_states_ = nullptr;                // per relation: its destination type's frontier, its edges so far
  std::vector<int64_t> type_offset_, type_base_;  // the node table's key of each type's node 0; its first slot
  std::vector<const uint32_t*> time_orders_;      // per relation: its time order (a temporal spec's), device-visible
  std::vector<int64_t> sort_lengths_;             // per hop: its edge bound until fitted
  int64_t batches_ = 0;                           // enqueued (the sorts are fitted at fit_sorts_after)
  std::deque<Report> reports_;                    // per output (a deque: Report pointers stay valid)
  BatchGraphs graphs_;
};

}  // namespace gnnd::cuda
