#include "common/dataset/time_order.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/base/parallel.h"
#include "common/dataset/graph.h"

namespace gnnd {

absl::StatusOr<std::vector<uint32_t>> BuildTimeOrder(const TimeOrderInput& in, int threads) {
  const int64_t* indptr = in.indptr;
  for (int64_t v = 0; v < in.num_nodes; ++v) {
    if (indptr[v + 1] - indptr[v] > int64_t{UINT32_MAX}) {
      return absl::InvalidArgumentError(absl::StrCat("node ", v, " has ", indptr[v + 1] - indptr[v],
                                                     " in-edges: a time order holds lists below 2^32"));
    }
  }
  std::vector<uint32_t> order(static_cast<size_t>(indptr[in.num_nodes]));
  auto source = [&in](int64_t p) {
    return in.wide_indices ? static_cast<const int64_t*>(in.indices)[p]
                           : int64_t{static_cast<const int32_t*>(in.indices)[p]};
  };
  ParallelFor(in.num_nodes, 4096, threads, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      const int64_t first = indptr[v], degree = indptr[v + 1] - first;
      uint32_t* list = order.data() + first;
      std::iota(list, list + degree, uint32_t{0});
      auto key = [&](uint32_t o) {
        const int64_t p = first + o;
        return std::make_tuple(in.edge_times != nullptr ? in.edge_times[p] : in.node_times[source(p)],
                               in.edge_ids != nullptr ? in.edge_ids[p] : int64_t{o});
      };
      std::sort(list, list + degree, [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    }
  });
  return order;
}

const uint32_t* TimeOrderCache::Get(const GraphData& graph, int relation, int times) {
  std::lock_guard<std::mutex> lock(mutex_);  // a first use builds under it: the next users wait for it
  auto [at, added] = orders_.try_emplace({relation, times});
  if (!added) return at->second.data();
  const RelationSchema& r = graph.schema.relations[relation];
  TimeOrderInput in{.indptr = static_cast<const int64_t*>(graph.arrays.data[r.indptr]),
                    .num_nodes = graph.schema.node_types[r.dst_type].num_nodes,
                    .indices = graph.arrays.data[r.indices],
                    .wide_indices = r.index_dtype == DType::kInt64,
                    .edge_ids = r.edge_ids >= 0 ? static_cast<const int64_t*>(graph.arrays.data[r.edge_ids]) : nullptr};
  const auto* values = static_cast<const int64_t*>(graph.arrays.data[times]);
  (times == graph.schema.node_types[r.src_type].node_time ? in.node_times : in.edge_times) = values;
  absl::StatusOr<std::vector<uint32_t>> built = BuildTimeOrder(in, DefaultThreads());
  if (built.ok()) at->second = *std::move(built);
  return at->second.data();
}

uint64_t TimeOrderCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = 0;
  for (const auto& [key, order] : orders_) total += sizeof(uint32_t) * order.size();
  return total;
}

}  // namespace gnnd
