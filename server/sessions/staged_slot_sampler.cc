#include "server/sessions/staged_slot_sampler.h"

#include "absl/strings/str_cat.h"
#include "common/base/cuda_check.h"
#include "common/base/status.h"
#include "common/dataset/dataset.h"
#include "kernels/cuda/gather.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<StagedSlotSampler>> StagedSlotSampler::Create(
    const SessionPlan& plan, const cuda::DeviceGraph& graph, std::shared_ptr<const std::vector<bool>> held,
    std::unique_ptr<TaskRunner> workers) {
  auto s = std::unique_ptr<StagedSlotSampler>(new StagedSlotSampler());
  s->schema_ = plan.schema;
  s->slot_bytes_ = plan.slot_bytes();
  if (held != nullptr) {  // a homogeneous dataset's hot tier
    s->hot_ = graph.types[0].hot;
    s->num_nodes_ = graph.schema.node_types[0].num_nodes;
    s->row_bytes_ = graph.schema.node_types[0].feature_row_bytes();
  }
  s->workers_ = std::move(workers);
  s->wake_ = plan.wake;
  SessionPlan staging = plan;  // more slots than the GPU's where each producer thread makes a batch at once
  if (plan.staging_slots > 0) staging.num_slots = plan.staging_slots;
  GNND_CUDA(cudaMallocHost(&s->staging_, s->slot_bytes_ * staging.num_slots),
            "allocate the pinned staging slots of a session made on the host");
  GNND_ASSIGN_OR_RETURN(HostSlots staged, HostSlots::Create(staging, static_cast<std::byte*>(s->staging_),
                                                            s->workers_->threads(), {std::move(held)}));
  s->staged_.emplace(std::move(staged));
  return s;
}

StagedSlotSampler::~StagedSlotSampler() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    producer_.reset();  // waits for its tasks, which write the staging slots
  }
  if (staging_ != nullptr) cudaFreeHost(staging_);
}

absl::Status StagedSlotSampler::StartEpoch(uint64_t epoch, const EpochSeeds& seeds, cudaStream_t stream) {
  // Copies out of the staging slots may still run; the new epoch's producer refills them.
  GNND_CUDA(cudaStreamSynchronize(stream), "finish the last epoch's copies");
  copying_.clear();
  next_.reset();
  std::lock_guard<std::mutex> lock(mutex_);
  producer_.reset();
  producer_ = staged_->StartEpoch(epoch, seeds, *workers_, workers_->threads(), wake_);
  if (stopped_) producer_->Stop();
  return absl::OkStatus();
}

absl::StatusOr<bool> StagedSlotSampler::Ready(int64_t step) {
  if (!next_) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (producer_ == nullptr) return false;
    GNND_RETURN_IF_ERROR(producer_->status());  // a read failed: the session ends with it
    next_ = producer_->TryNext();
  }
  if (next_ && next_->step != step) {
    return absl::InternalError(absl::StrCat("staged step ", next_->step, " where step ", step, " was due"));
  }
  return next_.has_value();
}

absl::Status StagedSlotSampler::Sample(uint64_t, uint64_t, const SeedBatch&, const SeedBatch&, char* slot,
                                       cudaStream_t stream) {
  if (!next_) return absl::InternalError("a staged fill without a staged batch");
  const int staging = next_->slot;
  next_.reset();
  v1::BatchReady counted;
  staged_->SetCounts(staging, counted);
  if (counted.counts_size() != static_cast<int>(schema_.counts.size())) {
    return absl::InternalError("a staged batch's counts do not match the session's schema");
  }
  // Each array's filled part: its count's rows.
  const std::byte* from = staged_->slot(staging);
  for (size_t i = 0; i < schema_.arrays.size(); ++i) {
    const BatchArraySchema& array = schema_.arrays[i];
    const int64_t rows = std::min(counted.counts(array.count), schema_.Rows(static_cast<int>(i)));
    const size_t bytes = static_cast<size_t>(rows) * array.row_bytes();
    GNND_CUDA(cudaMemcpyAsync(slot + array.offset, from + array.offset, bytes, cudaMemcpyHostToDevice, stream),
              "copy a staged batch to the GPU");
  }
  if (hot_.rank != nullptr) {  // the rows the host left out: from the tier
    const int ids = schema_.ArrayNamed("node_ids"), features = schema_.ArrayNamed("features");
    if (ids < 0 || features < 0) return absl::InternalError("a staged batch with a hot tier but no node rows");
    const cuda::RowSource tier{nullptr, num_nodes_, row_bytes_, hot_};
    const int64_t nodes = std::min(counted.counts(schema_.arrays[ids].count), schema_.Rows(features));
    GNND_RETURN_IF_ERROR(cuda::GatherRows(reinterpret_cast<const int64_t*>(slot + schema_.arrays[ids].offset), nullptr,
                                          nodes, tier, {}, slot + schema_.arrays[features].offset, stream));
  }
  copying_.emplace_back(staging, std::move(counted));
  return absl::OkStatus();
}

absl::Status StagedSlotSampler::Filled(int) {
  if (copying_.empty()) return absl::OkStatus();
  const int staging = copying_.front().first;  // fills complete in the order they were enqueued
  filled_ = std::move(copying_.front().second);
  copying_.pop_front();
  std::lock_guard<std::mutex> lock(mutex_);
  if (producer_ != nullptr) producer_->Release(staging);
  return absl::OkStatus();
}

void StagedSlotSampler::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  if (producer_ != nullptr) producer_->Stop();
}

}  // namespace gnnd
