// What a session's open request (v1::OpenSession) asks for, checked once against its dataset: the one
// function gnnd's sessions and `gnnctl sample` both use, so a request gnnctl takes gnnd takes too. Errors
// are INVALID_ARGUMENT naming the field ("open.batch_size = 0 ..."); nothing is allocated.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/limits.h"
#include "common/base/vocabulary.h"
#include "common/batch/batch.h"
#include "common/batch/batch_schema.h"
#include "common/batch/layout.h"
#include "common/batch/link_batch.h"
#include "common/batch/seeds.h"
#include "common/dataset/graph.h"
#include "gnnd/v1/service.pb.h"

namespace gnnd {

struct SlotLimits {
  int default_slots = kDefaultSlots;                     // num_slots = 0 means this many
  uint64_t max_session_bytes = kDefaultMaxSessionBytes;  // all of a session's slots together
  BatchProducer default_producer = BatchProducer::kSm;   // a CUDA session's, where open.producer is empty
};

// A link-prediction session's seed stage (common/batch/link_batch.h).
struct LinkShape {
  LinkSeedSpec seeds;
  int64_t split_size = 0;  // the edge split's edges: the seeds are their positions
  bool labeled = false;    // the split has labels (edge_label is int64)
};

struct SessionShape {
  Device device;
  BatchProducer producer = BatchProducer::kSm;  // a CUDA session's (a CPU session's batches are the host's)
  int split_array = -1;  // the seeds' split: a position in the dataset schema's arrays (-1: seed_ids,
                         // kAllNodesSplit: every node of the seed type)
  int seed_type = 0;     // the node type of the seeds (-1: a link session's)
  // A temporal session's seed times, one per split entry: the split's time array (a position in the dataset
  // schema's arrays), or -1 (the request's seed_times where sampling.time.seed_times_given, else none).
  int split_times_array = -1;
  SeedScheduleSpec schedule;
  int num_slots = 0;
  SamplingSpec sampling;          // what every batch samples
  std::optional<LinkShape> link;  // link sessions (edge_split or seed_edges set)
  BatchLayout layout;             // one slot
  BatchSchema schema;             // the batch as the trainer reads it
  uint64_t slot_bytes = 0;        // of all the slots
};

// open.split "all": every node of the seed type (PyG's input_nodes of a node type alone).
inline constexpr absl::string_view kAllNodesSplitName = "all";
inline constexpr int kAllNodesSplit = -2;

// The seeds of a node session: the request's seed ids, else its split's ids, or for "all" the ids 0..n-1 of
// the seed type, made into `made` (`request` and `made` must outlive the span).
std::span<const int64_t> SplitSeeds(const v1::OpenSession& request, const SessionShape& shape, const GraphData& graph,
                                    std::vector<int64_t>& made);
// A temporal node session's seed times, one per entry of SplitSeeds' (`count` of them): the request's seed_times,
// else its split's time array; empty where the seeds come without (each then at its own node time).
std::span<const int64_t> SplitSeedTimes(const v1::OpenSession& request, const SessionShape& shape,
                                        const GraphData& graph, size_t count);

// `shape`'s layout (from its capacity), schema and slot_bytes.
void LayOutSlots(const GraphData& graph, SessionShape& shape);
// `shape` laid out again with rows[t] rows of node type t's features in a slot (at most its bound).
void SetFeatureRows(const GraphData& graph, std::span<const int64_t> rows, SessionShape& shape);

// `summary`: the graph's (GraphSummary::Of, kept with a loaded dataset). With open.slots_may_grow the slots' bytes
// are not checked against the limit here (the session checks them once sized by its batches).
absl::StatusOr<SessionShape> CheckOpenRequest(const v1::OpenSession& request, const GraphData& graph,
                                              const GraphSummary& summary, const SlotLimits& limits);

}  // namespace gnnd
