// The one way a batch is made on the host, of any kind: the one sampler (sampler.h), and a link session's
// seed stage before it (link_stage.h), built from a recipe with what their draws read prepared once. The
// producer's threads, the slot sizing probe and `gnnctl sample` each hold makers of this; none of them names a
// draw policy.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/batch.h"
#include "common/batch/recipe.h"
#include "common/batch/seeds.h"
#include "kernels/cpu/link_stage.h"
#include "kernels/cpu/sampler.h"

namespace gnnd {

class BatchMaker {
 public:
  // `count` makers of `recipe`'s batches (one per batch sampled at once), after building once what they all
  // read beyond the dataset's arrays: the draws' preparations (CpuSampler::PrepareDraws, kept with the dataset)
  // and a temporal link session's index of its negatives by time. Fails where those cannot be built (memory).
  static absl::StatusOr<std::vector<BatchMaker>> Create(BatchRecipe recipe, int count = 1);
  // What Create would build for `recipe` and keep with the dataset (bytes not built yet).
  static uint64_t PreparationBytes(const BatchRecipe& recipe);

  // The batch of `seeds` (node ids with their times where the session has them; a link batch's positions of
  // its positives, its pairs into `pairs`) for (epoch, batch_index) into `view`: the graph, and with `gather`
  // the feature rows and a node batch's labels. `times`, when given, gets the stages' seconds.
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds, const BatchView& view, bool gather,
                      LinkBatch& pairs, SampleTimes* times = nullptr);
  // The sampler, for gathers after a batch is sampled (labels, node attributes).
  const CpuSampler& sampler() const { return sampler_; }

 private:
  explicit BatchMaker(const BatchRecipe& recipe) : sampler_(*recipe.graph, recipe.sampling, recipe.seed) {}

  CpuSampler sampler_;
  std::optional<LinkStage> link_;
};

}  // namespace gnnd
