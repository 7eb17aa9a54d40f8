// The CPU slot backend: a session's slots in one POSIX shared-memory segment that the trainer maps
// (server/sessions/slot_segment.h), filled ahead by the host producer (server/sessions/host_slots.h, on the daemon's
// shared worker pool) and delivered in step order.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "server/sessions/host_slots.h"
#include "server/sessions/producer.h"
#include "server/sessions/slot_backend.h"
#include "server/sessions/slot_segment.h"

namespace gnnd {

class CpuSlots final : public SlotBackend {
 public:
  // Batches are made on `workers` (its threads() at most); the segment gets permission bits `mode`.
  static absl::StatusOr<std::unique_ptr<CpuSlots>> Create(const SessionPlan& plan, std::unique_ptr<TaskRunner> workers,
                                                          mode_t mode, const std::string& instance = kDefaultInstance);
  ~CpuSlots() override;

  absl::Status Describe(v1::SessionOpened& opened) override;
  void Attached() override;
  absl::Status StartEpoch(uint64_t epoch, const EpochSeeds& seeds) override;
  absl::StatusOr<PollResult> Poll(v1::BatchReady& ready, BatchTimes& times) override;
  void Release(int slot) override;
  void Stop() override;
  ProducerTimes times() const override;

 private:
  CpuSlots() = default;

  std::unique_ptr<TaskRunner> workers_;  // before producer_: it posts here until gone
  std::function<void()> wake_;
  std::unique_ptr<SlotSegment> segment_;
  std::optional<HostSlots> slots_;  // in segment_

  // The producer of the running epoch: replaced only by the polling thread (StartEpoch, Poll), under
  // mutex_, so Release and Stop from other threads never see it go away.
  mutable std::mutex mutex_;
  std::unique_ptr<CpuProducer> producer_;
  bool stopped_ = false;
  ProducerTimes finished_;  // of the epochs whose producers are gone
};

}  // namespace gnnd
