#include "server/sessions/cpu_slots.h"

#include "common/base/status.h"
#include "common/wire/batch_proto.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<CpuSlots>> CpuSlots::Create(const SessionPlan& plan, std::unique_ptr<TaskRunner> workers,
                                                           mode_t mode, const std::string& instance) {
  auto s = std::unique_ptr<CpuSlots>(new CpuSlots());
  s->workers_ = std::move(workers);
  s->wake_ = plan.wake;
  GNND_ASSIGN_OR_RETURN(s->segment_,
                        SlotSegment::Create(plan.slot_bytes() * plan.num_slots, mode, plan.trainer_uid, instance));
  GNND_ASSIGN_OR_RETURN(HostSlots slots,
                        HostSlots::Create(plan, static_cast<std::byte*>(s->segment_->data()), s->workers_->threads()));
  s->slots_.emplace(std::move(slots));
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
  producer_ = slots_->StartEpoch(epoch, seeds, *workers_, workers_->threads(), wake_);
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
  GNND_RETURN_IF_ERROR(producer->status());  // a gather failed (features on storage): the session ends with it
  if (const std::optional<CpuProducer::Ready> next = producer->TryNext()) {
    ready.set_slot(next->slot);
    ready.set_step(next->step);
    times = {next->times.sample + next->times.gather, next->times.sample, next->times.gather};
    slots_->SetCounts(next->slot, ready);
    return PollResult::kBatch;
  }
  if (!producer->done()) return PollResult::kPending;
  // A batch that failed after the check above also ends production: its error, not an epoch's end.
  GNND_RETURN_IF_ERROR(producer->status());
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
