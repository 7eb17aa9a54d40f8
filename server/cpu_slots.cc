#include "server/cpu_slots.h"

#include "common/base/status.h"
#include "common/batch/batch_proto.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<CpuSlots>> CpuSlots::Create(const SessionPlan& plan, ThreadPool& workers, mode_t mode) {
  auto s = std::unique_ptr<CpuSlots>(new CpuSlots());
  s->graph_ = &plan.dataset->graph;
  s->sampling_ = plan.sampling;
  s->seed_ = plan.seed;
  s->workers_ = &workers;
  s->wake_ = plan.wake;
  const size_t slot_bytes = plan.layout.total_bytes;
  GNND_ASSIGN_OR_RETURN(s->segment_, SlotSegment::Create(slot_bytes * plan.num_slots, mode, plan.trainer_uid));
  for (int k = 0; k < plan.num_slots; ++k) {
    s->views_.push_back(BatchView::At(static_cast<std::byte*>(s->segment_->data()) + k * slot_bytes, plan.layout));
  }
  return s;
}

CpuSlots::~CpuSlots() { Stop(); }

absl::Status CpuSlots::Describe(v1::SessionOpened& opened) {
  opened.set_shm_name(segment_->name());
  return absl::OkStatus();
}

void CpuSlots::Attached() {
  segment_->Unlink();  // mapped by both sides now: nothing is left to clean up after a crash
}

absl::Status CpuSlots::StartEpoch(uint64_t epoch, const EpochSeeds& seeds) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int parallel = workers_->threads();
  producer_ = std::make_unique<CpuProducer>(CpuProducer::Sampling(*graph_, sampling_, seed_, views_, parallel),
                                            static_cast<int>(views_.size()), epoch, seeds, *workers_, parallel, wake_);
  if (stopped_) producer_->Stop();
  return absl::OkStatus();
}

absl::StatusOr<PollResult> CpuSlots::Poll(v1::BatchReady& ready, BatchTimes& times) {
  CpuProducer* producer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    producer = producer_.get();
  }
  if (producer == nullptr) return PollResult::kEpochDone;
  if (const std::optional<CpuProducer::Ready> next = producer->TryNext()) {
    const BatchView& batch = views_[next->slot];
    ready.set_slot(next->slot);
    ready.set_step(next->step);
    times = {next->times.sample + next->times.gather, next->times.sample, next->times.gather};
    SetBatchCounts({batch.num_nodes_per_hop, static_cast<size_t>(batch.num_hops) + 1},
                   {batch.num_edges_per_hop, static_cast<size_t>(batch.num_hops)}, ready);
    return PollResult::kBatch;
  }
  if (!producer->done()) return PollResult::kPending;
  // Every step is handed out (or the session stops): the workers are idle. Keep the times, free them.
  std::lock_guard<std::mutex> lock(mutex_);
  finished_.sample_seconds += producer_->sample_seconds();
  finished_.wait_seconds += producer_->wait_seconds();
  producer_.reset();
  return PollResult::kEpochDone;
}

void CpuSlots::Release(int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (producer_) producer_->Release(slot);
}

void CpuSlots::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  if (producer_) producer_->Stop();
}

ProducerTimes CpuSlots::times() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ProducerTimes t = finished_;
  if (producer_) {
    t.sample_seconds += producer_->sample_seconds();
    t.wait_seconds += producer_->wait_seconds();
  }
  return t;
}

}  // namespace gnnd
