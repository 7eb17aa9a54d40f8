// Slots in host memory that the CPU producer (server/sessions/producer.h) fills, for every batch kind: a CPU
// session's (its shared segment) and a GPU session's pinned staging slots when the features are on storage.
// One place knows how a session's batches are made on the host — one stage with the features in memory, two
// (sample ahead, then read the rows) on storage — and what each filled slot's counts are.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/thread_pool.h"
#include "common/batch/layout.h"
#include "common/batch/seeds.h"
#include "server/sessions/producer.h"
#include "server/sessions/slot_backend.h"

namespace gnnd {

class HostSlots {
 public:
  // plan.num_slots slots of plan.slot_bytes() each from `base` (which outlives this object). `held_elsewhere`
  // (features on storage): per node type, the rows a GPU hot tier fills later, neither read nor announced.
  static absl::StatusOr<HostSlots> Create(const SessionPlan& plan, std::byte* base, int max_parallel,
                                          std::vector<std::shared_ptr<const std::vector<bool>>> held_elsewhere = {});
  // One stage whatever the dataset: feature rows in memory gathered (as many as a slot holds), rows on storage
  // not read. For batches made one at a time by FillNow (slot_sizing.h).
  static absl::StatusOr<HostSlots> CreateOneStage(const SessionPlan& plan, std::byte* base, int max_parallel);

  // The producer of one epoch over these slots.
  std::unique_ptr<CpuProducer> StartEpoch(uint64_t epoch, const EpochSeeds& seeds, TaskRunner& workers,
                                          int max_parallel, std::function<void()> on_ready) const;
  // The counts of the batch in `slot` into `ready` (the session's BatchSchema order; a homogeneous node
  // batch's per-hop lists too).
  void SetCounts(int slot, v1::BatchReady& ready) const;
  std::byte* slot(int k) const { return bases_[k]; }
  // Fills `slot` with step `step` of `seeds` now, on the calling thread, with the scratch of sampler `sampler`
  // (in [0, max_parallel)); one-stage slots only.
  absl::Status FillNow(int sampler, uint64_t epoch, const EpochSeeds& seeds, int64_t step, int slot) const;
  // The nodes of each type in the batch in `slot`.
  std::vector<int64_t> NodesPerType(int slot) const;

 private:
  HostSlots() = default;
  static absl::StatusOr<HostSlots> Create(const SessionPlan& plan, std::byte* base, int max_parallel,
                                          std::vector<std::shared_ptr<const std::vector<bool>>> held_elsewhere,
                                          bool two_stages);

  CpuProducer::FillBatch fill_;
  std::shared_ptr<const CpuProducer::Stages> stages_;  // features on storage: two stages instead of fill_
  BatchLayout layout_;
  std::vector<BatchView> views_;   // each slot's arrays
  std::vector<std::byte*> bases_;  // each slot's start
  // Link sessions: each slot's (pairs, positives), written by the batch that fills it.
  std::shared_ptr<std::vector<std::pair<int64_t, int64_t>>> link_counts_;
};

}  // namespace gnnd
