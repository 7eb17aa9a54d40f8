#include "server/sessions/host_gather_part.h"

#include <algorithm>
#include <chrono>

#include "common/base/cuda_check.h"
#include "common/base/status.h"
#include "kernels/cuda/gather.h"

namespace gnnd {
namespace {

// Enqueues the copy of `bytes` at `offset` of a slot between device memory and its host copy.
absl::Status CopyArray(const char* from, char* to, size_t offset, size_t bytes, cudaMemcpyKind kind,
                       cudaStream_t stream) {
  if (offset == SIZE_MAX || bytes == 0) return absl::OkStatus();
  GNND_CUDA(cudaMemcpyAsync(to + offset, from + offset, bytes, kind, stream), "copy a batch's arrays (host_gather)");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HostGatherPart>> HostGatherPart::Create(const SessionPlan& plan,
                                                                       const cuda::DeviceGraph& graph,
                                                                       std::shared_ptr<const std::vector<bool>> held,
                                                                       std::unique_ptr<TaskRunner> workers) {
  auto p = std::unique_ptr<HostGatherPart>(new HostGatherPart());
  p->layout_ = plan.layout;
  p->graph_ = &graph;
  p->tier_ = held != nullptr && graph.types[0].hot.rank != nullptr;
  p->workers_ = std::move(workers);
  GNND_CUDA(cudaMallocHost(&p->copies_, plan.slot_bytes() * plan.num_slots),
            "allocate the pinned host copies of a host_gather session's slots");
  for (int k = 0; k < plan.num_slots; ++k) p->done_.push_back(std::make_unique<std::atomic<bool>>(false));
  p->seconds_.assign(static_cast<size_t>(plan.num_slots), 0.0);
  std::vector<std::shared_ptr<const std::vector<bool>>> held_rows;
  if (p->tier_) held_rows.push_back(std::move(held));
  p->gather_ = std::make_unique<HostRowGather>(plan.dataset->graph, std::move(held_rows));
  return p;
}

HostGatherPart::~HostGatherPart() {
  gather_.reset();
  if (copies_ != nullptr) cudaFreeHost(copies_);
}

absl::Status HostGatherPart::CopyGraphOut(int k, const char* slot, cudaStream_t stream) {
  char* copy = reinterpret_cast<char*>(copies_) + k * layout_.total_bytes;
  const BatchCapacity& c = layout_.capacity;
  const size_t hops = static_cast<size_t>(layout_.num_hops);
  for (size_t t = 0; t < layout_.types.size(); ++t) {
    const BatchLayout::TypeArrays& type = layout_.types[t];
    GNND_RETURN_IF_ERROR(
        CopyArray(slot, copy, type.node_ids, sizeof(int64_t) * c.max_nodes[t], cudaMemcpyDeviceToHost, stream));
    GNND_RETURN_IF_ERROR(
        CopyArray(slot, copy, type.num_nodes_per_hop, sizeof(int32_t) * (hops + 1), cudaMemcpyDeviceToHost, stream));
  }
  for (size_t r = 0; r < layout_.relations.size(); ++r) {
    const BatchLayout::RelationArrays& relation = layout_.relations[r];
    GNND_RETURN_IF_ERROR(
        CopyArray(slot, copy, relation.num_edges_per_hop, sizeof(int32_t) * hops, cudaMemcpyDeviceToHost, stream));
    GNND_RETURN_IF_ERROR(
        CopyArray(slot, copy, relation.e_id, sizeof(int64_t) * c.max_edges[r], cudaMemcpyDeviceToHost, stream));
  }
  done_[k]->store(false, std::memory_order_release);
  return absl::OkStatus();
}

void HostGatherPart::Start(int k, std::function<void()> wake) {
  std::byte* copy = copies_ + k * layout_.total_bytes;
  const auto start = std::chrono::steady_clock::now();
  gather_->Start(BatchView::At(copy, layout_), *workers_, [this, k, start, wake = std::move(wake)] {
    seconds_[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    done_[k]->store(true, std::memory_order_release);
    if (wake) wake();
  });
}

absl::Status HostGatherPart::Upload(int k, char* slot, cudaStream_t stream) {
  const char* copy = reinterpret_cast<const char*>(copies_) + k * layout_.total_bytes;
  const BatchView view = BatchView::At(const_cast<char*>(copy), layout_);
  constexpr cudaMemcpyKind kUp = cudaMemcpyHostToDevice;
  for (size_t t = 0; t < layout_.types.size(); ++t) {
    const BatchLayout::TypeArrays& type = layout_.types[t];
    const int64_t nodes = view.num_nodes(static_cast<int>(t));
    const int64_t rows = std::min(nodes, view.types[t].feature_rows);
    GNND_RETURN_IF_ERROR(CopyArray(copy, slot, type.features, type.feature_row_bytes * rows, kUp, stream));
    if (view.types[t].labels != nullptr) {
      const auto seeds = static_cast<size_t>(view.types[t].num_nodes_per_hop[0]);
      GNND_RETURN_IF_ERROR(CopyArray(copy, slot, type.labels, sizeof(int64_t) * seeds, kUp, stream));
    }
    for (const BatchLayout::EdgeRows& attr : type.attrs) {
      GNND_RETURN_IF_ERROR(CopyArray(copy, slot, attr.offset, attr.row_bytes * nodes, kUp, stream));
    }
    if (t == 0 && tier_ && type.features != SIZE_MAX) {  // the rows the host left to the tier
      const DatasetSchema& schema = graph_->schema;
      const cuda::RowSource tier{nullptr, schema.node_types[0].num_nodes, type.feature_row_bytes, graph_->types[0].hot};
      GNND_RETURN_IF_ERROR(cuda::GatherRows(reinterpret_cast<const int64_t*>(slot + type.node_ids), nullptr, rows, tier,
                                            {}, slot + type.features, stream));
    }
  }
  for (size_t r = 0; r < layout_.relations.size(); ++r) {
    const BatchLayout::RelationArrays& relation = layout_.relations[r];
    const auto edges = static_cast<size_t>(view.num_edges(static_cast<int>(r)));
    GNND_RETURN_IF_ERROR(CopyArray(copy, slot, relation.e_id, sizeof(int64_t) * edges, kUp, stream));
    for (const BatchLayout::EdgeRows& attr : relation.attrs) {
      GNND_RETURN_IF_ERROR(CopyArray(copy, slot, attr.offset, attr.row_bytes * edges, kUp, stream));
    }
  }
  return absl::OkStatus();
}

}  // namespace gnnd
