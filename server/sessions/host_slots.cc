#include "server/sessions/host_slots.h"

#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/batch/link_batch.h"
#include "common/wire/batch_proto.h"

namespace gnnd {

absl::StatusOr<HostSlots> HostSlots::Create(const SessionPlan& plan, std::byte* base, int max_parallel,
                                            std::vector<std::shared_ptr<const std::vector<bool>>> held_elsewhere) {
  return Create(plan, base, max_parallel, std::move(held_elsewhere), plan.dataset->features_staged());
}

absl::StatusOr<HostSlots> HostSlots::CreateOneStage(const SessionPlan& plan, std::byte* base, int max_parallel) {
  return Create(plan, base, max_parallel, {}, /*two_stages=*/false);
}

absl::StatusOr<HostSlots> HostSlots::Create(const SessionPlan& plan, std::byte* base, int max_parallel,
                                            std::vector<std::shared_ptr<const std::vector<bool>>> held_elsewhere,
                                            bool two_stages) {
  HostSlots s;
  const size_t slot_bytes = plan.slot_bytes();
  HostTargets targets;
  for (int k = 0; k < plan.num_slots; ++k) {
    std::byte* slot = base + k * slot_bytes;
    targets.views.push_back(BatchView::At(slot, plan.layout));
    targets.bases.push_back(slot);
  }
  s.views_ = targets.views;
  s.bases_ = targets.bases;
  s.layout_ = plan.layout;
  if (plan.link) {
    s.link_counts_ = std::make_shared<std::vector<std::pair<int64_t, int64_t>>>(plan.num_slots);
    targets.link_counts = s.link_counts_;
  }
  const LoadedDataset& dataset = *plan.dataset;
  const BatchRecipe recipe = plan.recipe();
  if (!two_stages) {
    GNND_ASSIGN_OR_RETURN(s.fill_, CpuProducer::InMemory(recipe, std::move(targets), max_parallel));
    return s;
  }
  const std::vector<RowTier*> tiers = dataset.caches();
  for (size_t t = 0; t < plan.layout.capacity.max_nodes.size(); ++t) {
    const RowTier* cache = tiers[t];
    if (cache == nullptr) continue;
    // Distinct rows: at most the type's (a disjoint batch's nodes may repeat).
    const int64_t rows = std::min(plan.layout.capacity.FeatureRows(t), dataset.graph.schema.node_types[t].num_nodes);
    GNND_RETURN_IF_ERROR(cache->CheckBatchFits(rows, absl::StrCat("dataset '", dataset.name, "' (feature_cache)")));
  }
  // On storage half the threads plan, so that the gathers keep cores (on 2 cores, 2 planners made batches slower:
  // NOTES). A part's gathers copy rows in memory and wait on peers: all threads but one plan (sampling bounded a
  // part's sessions with half of them, bench/runs/run-AY.md).
  const int planners = dataset.features_on_storage() ? max_parallel / 2 : std::max(max_parallel - 1, 1);
  GNND_ASSIGN_OR_RETURN(s.stages_, CpuProducer::OnStorage(recipe, std::move(targets), dataset.caches(),
                                                          dataset.look_ahead, planners, 2, std::move(held_elsewhere)));
  return s;
}

std::unique_ptr<CpuProducer> HostSlots::StartEpoch(uint64_t epoch, const EpochSeeds& seeds, TaskRunner& workers,
                                                   int max_parallel, std::function<void()> on_ready) const {
  const int slots = static_cast<int>(bases_.size());
  if (stages_ != nullptr) {
    return std::make_unique<CpuProducer>(stages_, slots, epoch, seeds, workers, max_parallel, std::move(on_ready));
  }
  return std::make_unique<CpuProducer>(fill_, slots, epoch, seeds, workers, max_parallel, std::move(on_ready));
}

absl::Status HostSlots::FillNow(int sampler, uint64_t epoch, const EpochSeeds& seeds, int64_t step, int slot) const {
  if (!fill_) return absl::InternalError("FillNow on two-stage slots");
  return fill_(sampler, epoch, seeds.batch_index(step), seeds.at(step), slot).status();
}

std::vector<int64_t> HostSlots::NodesPerType(int slot) const {
  std::vector<int64_t> nodes;
  for (size_t t = 0; t < views_[slot].types.size(); ++t) nodes.push_back(views_[slot].num_nodes(t));
  return nodes;
}

void HostSlots::SetCounts(int slot, v1::BatchReady& ready) const {
  const auto [pairs, positives] = link_counts_ != nullptr ? (*link_counts_)[slot] : std::pair<int64_t, int64_t>{};
  SetReadyCounts(views_[slot], layout_, pairs, positives, ready);
}

}  // namespace gnnd
