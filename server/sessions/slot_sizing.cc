#include "server/sessions/slot_sizing.h"

#include <sys/mman.h>

#include <algorithm>
#include <mutex>

#include "common/base/parallel.h"
#include "common/base/status.h"
#include "server/sessions/host_slots.h"

namespace gnnd {
namespace {

// Anonymous memory for the probe's slots: their bound is large, the pages a batch touches are few.
class ProbeMemory {
 public:
  explicit ProbeMemory(size_t bytes) : bytes_(std::max<size_t>(bytes, 1)) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : static_cast<std::byte*>(p);
  }
  ~ProbeMemory() {
    if (data_ != nullptr) ::munmap(data_, bytes_);
  }
  std::byte* data() const { return data_; }

 private:
  size_t bytes_;
  std::byte* data_;
};

}  // namespace

int64_t RowsWithHeadroom(int64_t nodes, int64_t bound) { return std::min(bound, nodes + nodes / 4 + 64); }

int64_t GrownRows(int64_t needed, int64_t held, int64_t bound) {
  return std::min(bound, std::max(RowsWithHeadroom(needed, bound), held + held / 2));
}

absl::StatusOr<std::vector<int64_t>> SampledFeatureRows(const SessionPlan& plan, const SessionShape& shape,
                                                        const EpochSeeds& seeds,
                                                        const std::function<bool()>& abandoned) {
  const std::vector<int64_t>& bound = shape.layout.capacity.max_nodes;
  const int64_t steps = seeds.num_steps();
  if (steps == 0) return bound;
  // Slots without feature rows: sampling writes the graph, no row is read.
  SessionShape probe_shape = shape;
  SetFeatureRows(plan.dataset->graph, std::vector<int64_t>(bound.size(), 0), probe_shape);
  const int batches = static_cast<int>(std::min<int64_t>(steps, kSizingBatches));
  // Once per open, on every core (a short burst), in no more slots than the session counts.
  const int threads = std::clamp(std::min(DefaultThreads(), plan.num_slots), 1, batches);
  SessionPlan probe = plan;
  probe.SetShape(probe_shape);
  probe.num_slots = threads;
  ProbeMemory memory(probe.slot_bytes() * threads);
  if (memory.data() == nullptr) return absl::ResourceExhaustedError("no memory to sample the session's first batches");
  GNND_ASSIGN_OR_RETURN(const HostSlots slots, HostSlots::CreateOneStage(probe, memory.data(), threads));

  std::mutex mutex;
  std::vector<int> free_slots(threads);
  for (int i = 0; i < threads; ++i) free_slots[i] = i;
  std::vector<int64_t> most(bound.size(), 0);
  absl::Status status;
  int sampled = 0;
  const auto deadline = std::chrono::steady_clock::now() + kSizingTime;
  ParallelFor(batches, 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      int slot;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (status.ok() && abandoned && abandoned()) {
          status = absl::CancelledError("open: the trainer went away while its first batches were sampled");
        }
        if (!status.ok() || (sampled > 0 && std::chrono::steady_clock::now() > deadline)) return;
        slot = free_slots.back();
        free_slots.pop_back();
      }
      // Steps spread over the epoch, the first and the last among them.
      const int64_t step = batches == 1 ? 0 : i * (steps - 1) / (batches - 1);
      const absl::Status filled = slots.FillNow(slot, plan.first_epoch_number, seeds, step, slot);
      const std::vector<int64_t> nodes = filled.ok() ? slots.NodesPerType(slot) : std::vector<int64_t>{};
      std::lock_guard<std::mutex> lock(mutex);
      if (!filled.ok() && status.ok()) status = filled;
      sampled += filled.ok();
      for (size_t t = 0; t < nodes.size(); ++t) most[t] = std::max(most[t], nodes[t]);
      free_slots.push_back(slot);
    }
  });
  GNND_RETURN_IF_ERROR(status);
  for (size_t t = 0; t < most.size(); ++t) most[t] = RowsWithHeadroom(most[t], bound[t]);
  return most;
}

}  // namespace gnnd
