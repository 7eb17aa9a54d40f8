// GPU sessions of a dataset whose features are on storage, for every batch kind. The host's two-stage
// producer (server/sessions/host_slots.h: sampled W batches ahead, rows read through the dataset's RowCache by exact
// look-ahead) fills pinned host staging slots in step order; each array's filled part is copied into the
// session's GPU slot, and the rows a homogeneous dataset's GPU hot tier holds (never read from storage) are
// then gathered from it on the GPU. Sampling runs on the host because the cache that needs the id lists ahead
// is there; with a GPU tier and a host cache serving most rows it was the bound while one task did it (now
// several planners: producer.h). Batches are byte for byte those of every other path.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/base/thread_pool.h"
#include "common/batch/batch_schema.h"
#include "kernels/cuda/device_dataset.h"
#include "server/sessions/host_slots.h"
#include "server/sessions/producer.h"
#include "server/sessions/slot_backend.h"
#include "server/sessions/slot_sampler.h"

namespace gnnd {

class StagedSlotSampler final : public SlotSampler {
 public:
  // A session of `plan` on storage; `graph` is the dataset on the session's GPU (a homogeneous dataset's hot
  // tier holds the rows marked in `held`, or none). The host stages run on `workers`.
  static absl::StatusOr<std::unique_ptr<StagedSlotSampler>> Create(const SessionPlan& plan,
                                                                   const cuda::DeviceGraph& graph,
                                                                   std::shared_ptr<const std::vector<bool>> held,
                                                                   std::unique_ptr<TaskRunner> workers);
  ~StagedSlotSampler() override;

  size_t slot_bytes() const override { return slot_bytes_; }
  // Copies the staged batch that Ready() found into `slot`, then gathers its hot rows there.
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds, const SeedBatch& device_seeds,
                      char* slot, cudaStream_t stream) override;
  absl::Status Prepare(char* /*slot*/, cudaStream_t /*stream*/) override { return absl::OkStatus(); }
  // The counts are the host's (staged): nothing to copy back.
  std::vector<std::pair<size_t, int>> HopArrays() const override { return {}; }
  void SetCounts(const int32_t* /*hops*/, v1::BatchReady& ready) const override { ready.MergeFrom(filled_); }
  absl::Status StartEpoch(uint64_t epoch, const EpochSeeds& seeds, cudaStream_t stream) override;
  absl::StatusOr<bool> Ready(int64_t step) override;
  absl::Status Filled(int slot) override;
  void Stop() override;
  bool runs_in_slice() const override { return false; }

 private:
  StagedSlotSampler() = default;

  BatchSchema schema_;
  size_t slot_bytes_ = 0;
  cuda::HotView hot_;
  int64_t num_nodes_ = 0;
  size_t row_bytes_ = 0;
  std::unique_ptr<TaskRunner> workers_;
  std::function<void()> wake_;
  void* staging_ = nullptr;  // pinned: num_slots host slots (freed after producer_, which writes them)
  std::optional<HostSlots> staged_;
  // Staging slots being copied to the GPU, in step order, with their batches' counts (the polling thread's);
  // the counts of the last one complete.
  std::deque<std::pair<int, v1::BatchReady>> copying_;
  v1::BatchReady filled_;

  std::mutex mutex_;  // producer_ (Stop comes from any thread)
  std::unique_ptr<CpuProducer> producer_;
  bool stopped_ = false;
  std::optional<CpuProducer::Ready> next_;  // staged, not yet copied (the polling thread's)
};

}  // namespace gnnd
