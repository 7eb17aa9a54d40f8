// The one place that knows which slot backends this build has.
#include "server/sessions/slot_backend.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/batch/layout.h"
#include "common/wire/batch_proto.h"
#include "server/sessions/cpu_slots.h"
#if GNND_WITH_CUDA
#include "server/sessions/cuda_devices.h"
#else
namespace gnnd {
class CudaDevices {};
}  // namespace gnnd
#endif

namespace gnnd {

absl::StatusOr<std::unique_ptr<SlotBackends>> SlotBackends::Create(const Options& options) {
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<FairPool> workers,
                        FairPool::Create(options.producer_threads, "the CPU producers (producer_threads)"));
  return std::unique_ptr<SlotBackends>(new SlotBackends(options, std::move(workers)));
}

SlotBackends::SlotBackends(const Options& options, std::unique_ptr<FairPool> cpu_workers)
    : options_(options), cpu_workers_(std::move(cpu_workers)) {
#if GNND_WITH_CUDA
  cuda_ = std::make_unique<CudaDevices>(options);
#endif
}

SlotBackends::~SlotBackends() = default;

absl::StatusOr<std::unique_ptr<SlotBackend>> SlotBackends::Create(const SessionPlan& plan) {
  // Each session's host work is its trainer's uid's: no uid holds the pool while another waits.
  std::unique_ptr<TaskRunner> workers = cpu_workers_->QueueFor(plan.trainer_uid);
  if (!plan.device.is_cuda()) {
    return CpuSlots::Create(plan, std::move(workers), options_.slot_mode, options_.instance);
  }
#if GNND_WITH_CUDA
  return cuda_->CreateSlots(plan, std::move(workers));
#else
  return absl::InvalidArgumentError(
      absl::StrCat("open.device = '", plan.device.ToString(), "' (this gnnd was built without CUDA: cpu only)"));
#endif
}

void SetReadyCounts(const BatchView& view, const BatchLayout& layout, int64_t pairs, int64_t positives,
                    v1::BatchReady& ready) {
  if (layout.homogeneous && !layout.pairs) {
    const auto hops = static_cast<size_t>(view.num_hops);
    SetBatchCounts({view.types[0].num_nodes_per_hop, hops + 1}, {view.relations[0].num_edges_per_hop, hops}, ready);
    return;
  }
  for (int64_t c : BatchCountsOf(view, layout, pairs, positives)) ready.add_counts(c);
}

uint64_t SlotBackends::BufferBytes(const SessionPlan& plan) {
  const int staging_slots = plan.staging_slots > 0 ? plan.staging_slots : plan.num_slots;
  const uint64_t staging = plan.device.is_cuda() ? plan.slot_bytes() * staging_slots : 0;  // pinned host slots
  // Features in memory: the pinned host copies of a session made or gathered on the host.
  if (!plan.dataset->features_staged()) {
    return plan.producer == BatchProducer::kSm || plan.auto_over_memory ? 0 : staging;
  }
  const uint64_t window = std::max(plan.dataset->look_ahead, 1);
  // A ring entry: the batch's graph (a link batch's pairs, a few per positive, are small beside it).
  const uint64_t entry = CpuProducer::RingEntryBytes(plan.recipe());
  return window * entry + staging;
}

void SlotBackends::Prepare(const LoadedDataset& dataset) {
#if GNND_WITH_CUDA
  cuda_->Prepare(dataset);
#else
  (void)dataset;
#endif
}

void SlotBackends::AppendStats(v1::Stats& stats) {
#if GNND_WITH_CUDA
  cuda_->AppendStats(stats);
#else
  (void)stats;
#endif
}

void SlotBackends::Forget(const LoadedDataset& dataset) {
#if GNND_WITH_CUDA
  cuda_->Forget(dataset);
#else
  (void)dataset;
#endif
}

}  // namespace gnnd
