#include "kernels/cuda/batch_maker.h"

#include "common/base/cuda_check.h"
#include "common/base/status.h"

namespace gnnd::cuda {

absl::StatusOr<std::unique_ptr<CudaBatchMaker>> CudaBatchMaker::Create(const BatchRecipe& recipe,
                                                                       const DeviceGraph& graph,
                                                                       CudaSamplerOptions options,
                                                                       int fills_in_flight) {
  auto m = std::unique_ptr<CudaBatchMaker>(new CudaBatchMaker());
  if (recipe.link) options = {.use_graphs = false, .rows_on_host = options.rows_on_host};
  GNND_ASSIGN_OR_RETURN(m->sampler_, CudaSampler::Create(graph, recipe.sampling, recipe.seed, recipe.layout, options));
  if (!recipe.link) return m;
  m->flags_ = static_cast<size_t>(std::max(fills_in_flight, 1));
  GNND_ASSIGN_OR_RETURN(m->link_, CudaLinkStage::Create(*recipe.graph, graph, *m->sampler_, *recipe.link, recipe.seed,
                                                        static_cast<int>(m->flags_)));
  GNND_CUDA(cudaMallocHost(&m->strict_, sizeof(uint64_t) * m->flags_), "allocate the strict flags");
  return m;
}

CudaBatchMaker::~CudaBatchMaker() {
  if (strict_ != nullptr) cudaFreeHost(strict_);
}

absl::Status CudaBatchMaker::Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds,
                                    const SeedBatch& device_seeds, std::byte* slot, cudaStream_t stream) {
  if (link_ == nullptr) {
    return sampler_->Sample(epoch, batch_index, device_seeds.ids, slot, stream, nullptr, device_seeds.times);
  }
  const auto positives = static_cast<int64_t>(seeds.ids.size());
  // Fills complete and are told of in order, at most flags_ in flight: way `flag` is free again.
  const size_t flag = next_flag_++ % flags_;
  GNND_RETURN_IF_ERROR(
      link_->SampleInto(epoch, batch_index, seeds.ids, slot, strict_ + flag, static_cast<int>(flag), stream));
  filling_.push_back({batch_index, seeds.ids, layout().pairs->pairs(positives), positives, flag});
  return absl::OkStatus();
}

absl::StatusOr<std::pair<int64_t, int64_t>> CudaBatchMaker::Filled() {
  if (link_ == nullptr) return std::pair<int64_t, int64_t>{0, 0};
  if (filling_.empty()) return absl::InternalError("a link fill completed that was never enqueued");
  const Fill filled = filling_.front();
  filling_.pop_front();
  GNND_RETURN_IF_ERROR(link_->StrictError(filled.batch_index, strict_[filled.flag], filled.input_id));
  return std::pair<int64_t, int64_t>{filled.pairs, filled.positives};
}

absl::StatusOr<bool> CudaBatchMaker::Outgrown(const std::byte* slot) {
  if (link_ != nullptr) return false;
  return sampler_->Outgrown(slot);
}

absl::Status CudaBatchMaker::Prepare(std::byte* slot, cudaStream_t stream) {
  if (link_ != nullptr) return absl::OkStatus();
  return sampler_->Prepare(slot, stream);
}

}  // namespace gnnd::cuda
