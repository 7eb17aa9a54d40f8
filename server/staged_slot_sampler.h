// GPU sessions of a dataset whose features are on storage. The host's two-stage producer (kernels/cpu/
// producer.h: sampled W batches ahead, rows read through the dataset's RowCache by exact look-ahead) fills
// pinned host staging slots in step order; each is copied into the session's GPU slot, and the rows the
// GPU hot tier holds (never read from storage) are then gathered from it on the GPU. Sampling runs on the
// host because the cache that needs the id lists ahead is there; at storage speeds it is not the bound.
// Batches are byte for byte those of every other path.
#pragma once

#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/base/dtype.h"
#include "common/base/thread_pool.h"
#include "kernels/cpu/producer.h"
#include "kernels/cuda/device_dataset.h"
#include "server/slot_backend.h"
#include "server/slot_sampler.h"

namespace gnnd {

class StagedSlotSampler final : public SlotSampler {
 public:
  // A homogeneous session of `plan` on storage; `graph` is the dataset on the session's GPU (its hot tier
  // holds the rows marked in `held`, or none). The host stages run on `workers`.
  static absl::StatusOr<std::unique_ptr<StagedSlotSampler>> Create(const SessionPlan& plan,
                                                                   const cuda::DeviceGraph& graph,
                                                                   std::shared_ptr<const std::vector<bool>> held,
                                                                   std::unique_ptr<TaskRunner> workers);
  ~StagedSlotSampler() override;

  size_t slot_bytes() const override { return layout_.total_bytes; }
  // Copies the staged batch that Ready() found into `slot`, then gathers its hot rows there.
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> seeds,
                      std::span<const int64_t> device_seeds, char* slot, cudaStream_t stream) override;
  absl::Status Prepare(char* /*slot*/, cudaStream_t /*stream*/) override { return absl::OkStatus(); }
  void DropGraphs() override {}
  std::vector<std::pair<size_t, int>> HopArrays() const override { return HomogeneousHopArrays(layout_); }
  void SetCounts(const int32_t* hops, v1::BatchReady& ready) const override {
    SetHomogeneousCounts(layout_, hops, ready);
  }
  absl::Status StartEpoch(uint64_t epoch, const EpochSeeds& seeds, cudaStream_t stream) override;
  absl::StatusOr<bool> Ready(int64_t step) override;
  absl::Status Filled(int slot) override;
  void Stop() override;
  bool calibrates() const override { return false; }

 private:
  StagedSlotSampler() = default;

  BatchLayout layout_;
  cuda::HotView hot_;
  int64_t num_nodes_ = 0;
  int64_t feature_dim_ = 0;
  DType feature_dtype_ = DType::kFloat32;
  std::unique_ptr<TaskRunner> workers_;
  std::function<void()> wake_;
  void* staging_ = nullptr;  // pinned: num_slots host slots (freed after producer_, which writes them)
  std::vector<BatchView> staged_;
  std::shared_ptr<const CpuProducer::Stages> stages_;
  std::deque<int> copying_;  // staging slots being copied to the GPU, in step order (the polling thread's)

  std::mutex mutex_;  // producer_ (Stop comes from any thread)
  std::unique_ptr<CpuProducer> producer_;
  bool stopped_ = false;
  std::optional<CpuProducer::Ready> next_;  // staged, not yet copied (the polling thread's)
};

}  // namespace gnnd
