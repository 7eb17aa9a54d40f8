// The CPU slot backend: a session's slots in one POSIX shared-memory segment that the trainer maps
// (server/slot_segment.h), filled ahead by a CpuProducer (the reference sampler on the daemon's shared
// worker pool) and delivered in step order.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "common/batch/typed_batch.h"
#include "kernels/cpu/producer.h"
#include "server/slot_backend.h"
#include "server/slot_segment.h"

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

  const GraphData* graph_ = nullptr;
  CpuProducer::FillBatch fill_;
  std::shared_ptr<const CpuProducer::Stages> stages_;  // features on storage: two stages instead of fill_
  std::unique_ptr<TaskRunner> workers_;                // before producer_: it posts here until gone
  std::function<void()> wake_;
  std::unique_ptr<SlotSegment> segment_;
  std::vector<BatchView> views_;             // homogeneous sessions
  std::vector<TypedBatchView> typed_views_;  // typed sessions
  int seed_type_ = 0;
  std::vector<std::byte*> bases_;  // homogeneous and link sessions: each slot's start
  // Link sessions: each slot's (pairs, positives), written by the batch that fills it.
  std::shared_ptr<std::vector<std::pair<int64_t, int64_t>>> link_counts_;

  // The producer of the running epoch: replaced only by the polling thread (StartEpoch, Poll), under
  // mutex_, so Release and Stop from other threads never see it go away.
  mutable std::mutex mutex_;
  std::unique_ptr<CpuProducer> producer_;
  bool stopped_ = false;
  ProducerTimes finished_;  // of the epochs whose producers are gone
};

}  // namespace gnnd
