// The one way a batch is made on the GPU, of any kind: the one CUDA sampler (cuda_sampler.h), and a link
// session's seed stage before it (link_stage.h), built from a recipe (common/batch/recipe.h) as the host's
// BatchMaker is (kernels/cpu/batch_maker.h). A session's slots and `gnnctl sample` hold one; neither names a draw
// policy. Fills are enqueued on a stream and complete in order; Filled() is told of each once it is complete.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <utility>

#include "absl/status/statusor.h"
#include "common/batch/recipe.h"
#include "common/batch/seeds.h"
#include "kernels/cuda/cuda_sampler.h"
#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/link_stage.h"

namespace gnnd::cuda {

class CudaBatchMaker {
 public:
  // The maker of `recipe`'s batches on the current device's `graph` (the recipe's graph as placed there).
  // `fills_in_flight`: the most fills enqueued and not yet Filled (a link batch's staging and strict flag
  // each). `options` are a node batch's: a link maker launches kernel by kernel (its exclusions change every
  // batch) with sorts over their bounds.
  static absl::StatusOr<std::unique_ptr<CudaBatchMaker>> Create(const BatchRecipe& recipe, const DeviceGraph& graph,
                                                                CudaSamplerOptions options = {},
                                                                int fills_in_flight = 1);
  ~CudaBatchMaker();
  CudaBatchMaker(const CudaBatchMaker&) = delete;
  CudaBatchMaker& operator=(const CudaBatchMaker&) = delete;

  // Enqueues the fill of `slot` (device memory laid out by layout()) with batch `batch_index` of `epoch` on
  // `stream`: a node batch around `device_seeds` (ids, and times where the session has them, on the device), a
  // link batch of the split's positives at `seeds.ids` (host memory that outlives the fill's Filled).
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds, const SeedBatch& device_seeds,
                      std::byte* slot, cudaStream_t stream);
  // The oldest fill enqueued is complete on the GPU: whether it may be handed out (a link batch's strict
  // negatives may have found only edges), and its link counts (pairs, positives; 0 for a node batch).
  absl::StatusOr<std::pair<int64_t, int64_t>> Filled();
  // Fills in flight are dropped (an epoch restarts).
  void Forget() { filling_.clear(); }
  // With fitted sorts: whether the fill of `slot`, complete, must be made again (CudaSampler::Outgrown).
  absl::StatusOr<bool> Outgrown(const std::byte* slot);
  // Captures what a node batch's fill of `slot` replays, ahead of its first batch (CudaSampler::Prepare).
  absl::Status Prepare(std::byte* slot, cudaStream_t stream);
  // Whether the fills enqueued from now on leave their rows to the host (CudaSampler::SetRowsOnHost).
  void SetRowsOnHost(bool on) { sampler_->SetRowsOnHost(on); }
  const BatchLayout& layout() const { return sampler_->layout(); }
  bool is_link() const { return link_ != nullptr; }

 private:
  struct Fill {
    uint64_t batch_index = 0;
    std::span<const int64_t> input_id;
    int64_t pairs = 0, positives = 0;
    size_t flag = 0;
  };
  CudaBatchMaker() = default;

  std::unique_ptr<CudaSampler> sampler_;
  std::unique_ptr<CudaLinkStage> link_;  // declared after sampler_: destroyed before it
  uint64_t* strict_ = nullptr;           // pinned: a link fill's strict flag (and staging way) per fill in flight
  size_t flags_ = 1, next_flag_ = 0;
  std::deque<Fill> filling_;  // link fills enqueued, in order
};

}  // namespace gnnd::cuda
