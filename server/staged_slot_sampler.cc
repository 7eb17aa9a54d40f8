#include "server/staged_slot_sampler.h"

#include "absl/strings/str_cat.h"
#include "common/base/cuda_check.h"
#include "common/base/status.h"
#include "common/dataset/dataset.h"
#include "kernels/cuda/gather.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<StagedSlotSampler>> StagedSlotSampler::Create(
    const SessionPlan& plan, const cuda::DeviceGraph& graph, std::shared_ptr<const std::vector<bool>> held,
    std::unique_ptr<TaskRunner> workers) {
  RowCache& cache = *plan.dataset->feature_caches[0];
  GNND_RETURN_IF_ERROR(cache.CheckBatchFits(plan.layout.capacity.max_nodes,
                                            absl::StrCat("dataset '", plan.dataset->name, "' (feature_cache)")));
  auto s = std::unique_ptr<StagedSlotSampler>(new StagedSlotSampler());
  s->layout_ = plan.layout;
  s->hot_ = held != nullptr ? graph.types[0].hot : cuda::HotView{};
  s->num_nodes_ = graph.manifest.num_nodes();
  s->feature_dim_ = graph.manifest.feature_dim();
  s->feature_dtype_ = ArrayDType(graph.manifest, ArrayId::kFeatures);
  s->workers_ = std::move(workers);
  s->wake_ = plan.wake;
  GNND_CUDA(cudaMallocHost(&s->staging_, plan.layout.total_bytes * plan.num_slots),
            "allocate the pinned staging slots of a session on storage");
  for (int k = 0; k < plan.num_slots; ++k) {
    s->staged_.push_back(BatchView::At(static_cast<char*>(s->staging_) + k * plan.layout.total_bytes, plan.layout));
  }
  s->stages_ = CpuProducer::StorageSampling(plan.dataset->graph, plan.sampling, plan.seed, plan.layout, s->staged_,
                                            cache, plan.dataset->look_ahead, 2, std::move(held));
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
  producer_ = std::make_unique<CpuProducer>(stages_, static_cast<int>(staged_.size()), epoch, seeds, *workers_,
                                            workers_->threads(), wake_);
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

absl::Status StagedSlotSampler::Sample(uint64_t, uint64_t, std::span<const int64_t>, std::span<const int64_t>,
                                       char* slot, cudaStream_t stream) {
  if (!next_) return absl::InternalError("a staged fill without a staged batch");
  const int staging = next_->slot;
  next_.reset();
  const BatchView& from = staged_[staging];
  const BatchView to = BatchView::At(slot, layout_);
  const int64_t nodes = from.num_nodes(), edges = from.num_edges(), seeds = from.num_seeds();
  // Each array's filled part, as the batch layout describes it.
  const auto sources = BatchArrays(from, nodes, edges, seeds, feature_dim_, feature_dtype_);
  const auto targets = BatchArrays(to, nodes, edges, seeds, feature_dim_, feature_dtype_);
  for (size_t a = 0; a < sources.size(); ++a) {
    const BatchArray& array = sources[a];
    const int64_t elements = array.shape[0] * (array.ndim == 2 ? array.shape[1] : 1);
    GNND_CUDA(
        cudaMemcpyAsync(targets[a].data, array.data, DTypeSize(array.dtype) * elements, cudaMemcpyHostToDevice, stream),
        "copy a staged batch to the GPU");
  }
  if (hot_.rank != nullptr) {  // the rows the host left out: from the tier
    const cuda::RowSource tier{nullptr, num_nodes_, layout_.feature_row_bytes, hot_};
    GNND_RETURN_IF_ERROR(cuda::GatherRows(to.node_ids, nullptr, nodes, tier, {}, to.features, stream));
  }
  copying_.push_back(staging);
  return absl::OkStatus();
}

absl::Status StagedSlotSampler::Filled(int) {
  if (copying_.empty()) return absl::OkStatus();
  const int staging = copying_.front();  // fills complete in the order they were enqueued
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
