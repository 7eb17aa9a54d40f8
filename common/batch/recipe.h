// What a session's batches are made of, for either backend's batch maker (kernels/cpu/batch_maker.h,
// kernels/cuda/batch_maker.h): the graph, the one spec, a link session's seed stage, the seed, and the layout
// of the slots the batches go to.
#pragma once

#include <cstdint>
#include <optional>

#include "common/batch/layout.h"
#include "common/batch/link_batch.h"
#include "common/batch/spec.h"
#include "common/dataset/graph.h"

namespace gnnd {

struct BatchRecipe {
  const GraphData* graph = nullptr;
  SamplingSpec sampling;
  std::optional<LinkSeedSpec> link;
  uint64_t seed = 0;
  BatchLayout layout;
};

}  // namespace gnnd
