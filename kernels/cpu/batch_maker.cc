#include "kernels/cpu/batch_maker.h"

#include "common/base/status.h"

namespace gnnd {

absl::StatusOr<std::vector<BatchMaker>> BatchMaker::Create(BatchRecipe recipe, int count) {
  GNND_RETURN_IF_ERROR(CpuSampler::PrepareDraws(*recipe.graph, recipe.sampling));
  if (recipe.link) {  // made once here, not by each maker's stage
    recipe.link->negatives_by_time = NodesByTimeOf(*recipe.graph, *recipe.link, recipe.sampling);
  }
  std::vector<BatchMaker> makers;
  for (int i = 0; i < std::max(count, 1); ++i) {
    BatchMaker maker(recipe);
    if (recipe.link) {
      GNND_ASSIGN_OR_RETURN(maker.link_, LinkStage::Create(*recipe.graph, recipe.sampling, *recipe.link, recipe.seed));
    }
    makers.push_back(std::move(maker));
  }
  return makers;
}

uint64_t BatchMaker::PreparationBytes(const BatchRecipe& recipe) {
  return CpuSampler::DrawPreparationBytes(*recipe.graph, recipe.sampling);
}

absl::Status BatchMaker::Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds, const BatchView& view,
                                bool gather, LinkBatch& pairs, SampleTimes* times) {
  if (link_) {
    pairs.graph = view;
    return link_->Sample(sampler_, epoch, batch_index, seeds.ids, pairs, times, gather);
  }
  if (gather) {
    sampler_.Sample(epoch, batch_index, seeds.ids, view, times, seeds.times);
  } else {
    sampler_.SampleGraph(epoch, batch_index, seeds.ids, view, seeds.times);
  }
  return sampler_.status();
}

}  // namespace gnnd
