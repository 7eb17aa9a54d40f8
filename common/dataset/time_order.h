// Time-ordered neighborhoods for the temporal rule (common/batch/sampling.h, namespace temporal): per relation
// and time source, each node's in-list offsets sorted by (time, id) ascending, so a seed's candidates are a
// prefix found by one binary search (temporal::CandidateCount) instead of a pass over the whole list, as PyG and
// GraphBolt keep neighborhoods sorted by time. The CSC keeps its source order (a link batch's exclusions and
// strict negatives search each list by source); this is an index beside it: 4 bytes an edge.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gnnd {

struct GraphData;

// One relation's times: each edge's (edge_times, by CSC position), else its source node's (node_times, by
// source id through indices). Ties are broken by edge_ids (by CSC position), else by in-list offset.
struct TimeOrderInput {
  const int64_t* indptr = nullptr;
  int64_t num_nodes = 0;  // destinations: indptr has num_nodes + 1 entries
  const int64_t* edge_times = nullptr;
  const int64_t* node_times = nullptr;
  const void* indices = nullptr;
  bool wide_indices = false;
  const int64_t* edge_ids = nullptr;
};

// Writes order[indptr[v] + j] = the in-list offset of v's j-th in-edge by (time, id) ascending; `order` holds
// indptr[num_nodes] entries. A list of 2^32 or more in-edges is refused (offsets are 32 bits).
absl::Status BuildTimeOrder(const TimeOrderInput& in, std::span<uint32_t> order, int threads);

// A dataset's time orders, each built on first use and kept for the dataset's life, shared by every sampler
// of it (GraphData::time_orders). Thread-safe. Each lives in pages of its own, so a GPU may register it for
// zero-copy reads.
class TimeOrderCache {
 public:
  ~TimeOrderCache();
  // The order of `relation` by schema array `times`: an int64 edge attribute of it (each edge's time), or
  // its source type's node_time (each source's). Fails only for memory, or a list of 2^32 in-edges or more
  // (which ComputeBatchCapacity refuses before a session samples it).
  absl::StatusOr<const uint32_t*> Get(const GraphData& graph, int relation, int times);
  // The bytes Get would map for that order (4 an edge), or 0 if it is built: what a session that needs it must
  // be able to hold before it is built (it stays with the dataset, shown in its stats as time_order_bytes).
  uint64_t BytesToBuild(const GraphData& graph, int relation, int times) const;
  // The bytes of the orders built so far.
  uint64_t bytes() const;

 private:
  struct Pages {
    void* data = nullptr;
    size_t bytes = 0;  // mapped
  };
  mutable std::mutex mutex_;
  // By (relation, times array, and where that array and the relation's indices are): a copy of a GraphData
  // pointing at other arrays gets its own order.
  std::map<std::tuple<int, int, const void*, const void*>, Pages> orders_;
  uint64_t bytes_ = 0;
};

}  // namespace gnnd
