#include "common/dataset/time_order.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <numeric>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/dataset/graph.h"

namespace gnnd {

absl::Status BuildTimeOrder(const TimeOrderInput& in, std::span<uint32_t> order, int threads) {
  const int64_t* indptr = in.indptr;
  for (int64_t v = 0; v < in.num_nodes; ++v) {
    if (indptr[v + 1] - indptr[v] > int64_t{UINT32_MAX}) {
      return absl::InvalidArgumentError(absl::StrCat("node ", v, " has ", indptr[v + 1] - indptr[v],
                                                     " in-edges: a time order holds lists below 2^32"));
    }
  }
  if (order.size() != static_cast<size_t>(indptr[in.num_nodes])) {
    return absl::InternalError(
        absl::StrCat("a time order of ", indptr[in.num_nodes], " edges given room for ", order.size()));
  }
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
  return absl::OkStatus();
}

TimeOrderCache::~TimeOrderCache() {
  for (auto& [key, pages] : orders_) {
    if (pages.data != nullptr) ::munmap(pages.data, pages.bytes);
  }
}

absl::StatusOr<const uint32_t*> TimeOrderCache::Get(const GraphData& graph, int relation, int times) {
  std::lock_guard<std::mutex> lock(mutex_);  // a first use builds under it: the next users wait for it
  const RelationSchema& r = graph.schema.relations[relation];
  const auto key = std::make_tuple(relation, times, graph.arrays.data[times], graph.arrays.data[r.indices]);
  if (auto at = orders_.find(key); at != orders_.end()) return static_cast<const uint32_t*>(at->second.data);
  TimeOrderInput in{.indptr = static_cast<const int64_t*>(graph.arrays.data[r.indptr]),
                    .num_nodes = graph.schema.node_types[r.dst_type].num_nodes,
                    .indices = graph.arrays.data[r.indices],
                    .wide_indices = r.index_dtype == DType::kInt64,
                    .edge_ids = r.edge_ids >= 0 ? static_cast<const int64_t*>(graph.arrays.data[r.edge_ids]) : nullptr};
  const auto* values = static_cast<const int64_t*>(graph.arrays.data[times]);
  (times == graph.schema.node_types[r.src_type].node_time ? in.node_times : in.edge_times) = values;
  const size_t edges = static_cast<size_t>(in.indptr[in.num_nodes]), bytes = sizeof(uint32_t) * edges;
  Pages pages{nullptr, std::max<size_t>(bytes, 1)};
  pages.data = ::mmap(nullptr, pages.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages.data == MAP_FAILED) {
    return ErrnoStatus(errno, absl::StrCat("map the time order of ", r.key(), " (", bytes, " bytes)"));
  }
  if (absl::Status built = BuildTimeOrder(in, {static_cast<uint32_t*>(pages.data), edges}, DefaultThreads());
      !built.ok()) {
    ::munmap(pages.data, pages.bytes);
    return built;
  }
  orders_[key] = pages;
  bytes_ += bytes;
  return static_cast<const uint32_t*>(pages.data);
}

uint64_t TimeOrderCache::BytesToBuild(const GraphData& graph, int relation, int times) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const RelationSchema& r = graph.schema.relations[relation];
  if (orders_.contains(std::make_tuple(relation, times, graph.arrays.data[times], graph.arrays.data[r.indices]))) {
    return 0;
  }
  return sizeof(uint32_t) * static_cast<uint64_t>(r.num_edges);
}

uint64_t TimeOrderCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace gnnd
