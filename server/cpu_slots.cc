#include "server/cpu_slots.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/batch/batch_proto.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<CpuSlots>> CpuSlots::Create(const SessionPlan& plan, std::unique_ptr<TaskRunner> workers,
                                                           mode_t mode, const std::string& instance) {
  auto s = std::unique_ptr<CpuSlots>(new CpuSlots());
  s->workers_ = std::move(workers);
  s->wake_ = plan.wake;
  const size_t slot_bytes = plan.link    ? plan.link->layout.total_bytes
                            : plan.typed ? plan.typed->layout.total_bytes
                                         : plan.layout.total_bytes;
  GNND_ASSIGN_OR_RETURN(s->segment_,
                        SlotSegment::Create(slot_bytes * plan.num_slots, mode, plan.trainer_uid, instance));
  for (int k = 0; k < plan.num_slots; ++k) {
    std::byte* base = static_cast<std::byte*>(s->segment_->data()) + k * slot_bytes;
    if (plan.typed) {
      s->typed_views_.push_back(TypedBatchView::At(base, plan.typed->layout));
    } else {
      s->views_.push_back(BatchView::At(base, plan.layout));
    }
    s->bases_.push_back(base);
  }
  const GraphData& graph = plan.dataset->graph;
  const int parallel = s->workers_->threads();
  const auto fits = [&](int type, int64_t max_rows) -> absl::Status {
    RowCache* cache = plan.dataset->feature_caches[type].get();
    return cache == nullptr
               ? absl::OkStatus()
               : cache->CheckBatchFits(max_rows, absl::StrCat("dataset '", plan.dataset->name, "' (feature_cache)"));
  };
  if (plan.link) {
    if (plan.dataset->features_on_storage()) {
      return absl::UnimplementedError(absl::StrCat("dataset '", plan.dataset->name,
                                                   "' keeps its features on storage (feature_cache), which link "
                                                   "sessions do not serve in this version"));
    }
    s->link_counts_ = std::make_shared<std::vector<std::pair<int64_t, int64_t>>>(plan.num_slots);
    GNND_ASSIGN_OR_RETURN(s->fill_,
                          CpuProducer::LinkSampling(graph, plan.link->sampling, plan.seed, plan.link->layout, s->views_,
                                                    s->typed_views_, s->bases_, s->link_counts_, parallel));
  } else if (plan.typed) {
    s->seed_type_ = plan.typed->sampling.seed_type;
    if (plan.dataset->features_on_storage()) {
      for (size_t t = 0; t < plan.typed->layout.capacity.max_nodes.size(); ++t) {
        GNND_RETURN_IF_ERROR(fits(static_cast<int>(t), plan.typed->layout.capacity.max_nodes[t]));
      }
      s->stages_ = CpuProducer::StorageSampling(graph, plan.typed->sampling, plan.seed, plan.typed->layout,
                                                s->typed_views_, plan.dataset->caches(), plan.dataset->look_ahead);
    } else {
      s->fill_ = CpuProducer::Sampling(graph, plan.typed->sampling, plan.seed, s->typed_views_, parallel);
    }
  } else if (plan.dataset->features_on_storage()) {
    GNND_RETURN_IF_ERROR(fits(0, plan.layout.capacity.max_nodes));
    s->stages_ = CpuProducer::StorageSampling(graph, plan.sampling, plan.seed, plan.layout, s->views_,
                                              *plan.dataset->feature_caches[0], plan.dataset->look_ahead);
  } else {
    s->fill_ = CpuProducer::Sampling(graph, plan.sampling, plan.seed, s->views_, parallel);
  }
  return s;
}

CpuSlots::~CpuSlots() { Stop(); }

absl::Status CpuSlots::Describe(v1::SessionOpened& opened) {
  opened.set_shm_name(segment_->name());
  return absl::OkStatus();
}

void CpuSlots::Attached() {
  segment_->Unlink();  // mapped by both sides now: nothing is left to clean up after a crash
}

absl::Status CpuSlots::StartEpoch(uint64_t epoch, const EpochSeeds& seeds) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int slots = static_cast<int>(std::max(views_.size(), typed_views_.size()));
  if (stages_ != nullptr) {
    producer_ = std::make_unique<CpuProducer>(stages_, slots, epoch, seeds, *workers_, workers_->threads(), wake_);
  } else {
    producer_ = std::make_unique<CpuProducer>(fill_, slots, epoch, seeds, *workers_, workers_->threads(), wake_);
  }
  if (stopped_) producer_->Stop();
  return absl::OkStatus();
}

absl::StatusOr<PollResult> CpuSlots::Poll(v1::BatchReady& ready, BatchTimes& times) {
  CpuProducer* producer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    producer = producer_.get();
  }
  if (producer == nullptr) return PollResult::kEpochDone;
  GNND_RETURN_IF_ERROR(producer->status());  // a gather failed (features on storage): the session ends with it
  if (const std::optional<CpuProducer::Ready> next = producer->TryNext()) {
    ready.set_slot(next->slot);
    ready.set_step(next->step);
    times = {next->times.sample + next->times.gather, next->times.sample, next->times.gather};
    if (link_counts_ != nullptr) {
      const auto [pairs, positives] = (*link_counts_)[next->slot];
      const std::vector<int64_t> counts = typed_views_.empty()
                                              ? LinkBatchCounts(views_[next->slot], pairs, positives)
                                              : TypedLinkBatchCounts(typed_views_[next->slot], pairs, positives);
      for (int64_t c : counts) ready.add_counts(c);
    } else if (typed_views_.empty()) {
      const BatchView& batch = views_[next->slot];
      SetBatchCounts({batch.num_nodes_per_hop, static_cast<size_t>(batch.num_hops) + 1},
                     {batch.num_edges_per_hop, static_cast<size_t>(batch.num_hops)}, ready);
    } else {
      for (int64_t c : TypedBatchCounts(typed_views_[next->slot], seed_type_)) ready.add_counts(c);
    }
    return PollResult::kBatch;
  }
  if (!producer->done()) return PollResult::kPending;
  // A batch that failed after the check above also ends production: its error, not an epoch's end.
  GNND_RETURN_IF_ERROR(producer->status());
  // Every step is handed out (or the session stops): the workers are idle. Keep the times, free them.
  std::lock_guard<std::mutex> lock(mutex_);
  finished_.sample_seconds += producer_->sample_seconds();
  finished_.wait_seconds += producer_->wait_seconds();
  producer_.reset();
  return PollResult::kEpochDone;
}

void CpuSlots::Release(int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (producer_) producer_->Release(slot);
}

void CpuSlots::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  if (producer_) producer_->Stop();
}

ProducerTimes CpuSlots::times() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ProducerTimes t = finished_;
  if (producer_) {
    t.sample_seconds += producer_->sample_seconds();
    t.wait_seconds += producer_->wait_seconds();
  }
  return t;
}

}  // namespace gnnd
