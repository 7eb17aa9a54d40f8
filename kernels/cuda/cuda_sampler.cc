#include "kernels/cuda/cuda_sampler.h"

#include "common/base/cuda_check.h"
#include "common/base/status.h"
#include "common/batch/sampling.h"
#include "kernels/cuda/sampling.h"

namespace gnnd::cuda {
absl::StatusOr<std::unique_ptr<CudaSampler>> CudaSampler::Create(const DeviceGraph& graph, const SamplingSpec& spec,
                                                                 uint64_t seed, const BatchCapacity& capacity) {
  auto s = std::unique_ptr<CudaSampler>(new CudaSampler());
  s->graph_ = graph;
  s->spec_ = spec;
  s->seed_ = seed;
  s->layout_ = BatchLayout::Make(capacity, static_cast<int>(s->spec_.fanouts.size()), FeatureRowBytes(graph.manifest));
  s->ids_ = IdRange::ForNodes(graph.manifest.num_nodes());
  int device = 0, shared = 0;
  GNND_CUDA(cudaGetDevice(&device), "query the current device");
  GNND_CUDA(cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlock, device),
            "query the shared memory per block");
  s->gather_.shared_bytes_limit = static_cast<size_t>(shared);
  GNND_ASSIGN_OR_RETURN(s->workspace_, Workspace::Create(capacity));
  GNND_RETURN_IF_ERROR(ResetDedup(*s->workspace_, s->ids_, nullptr));
  GNND_CUDA(cudaStreamSynchronize(nullptr), "prepare the sampler's buffers");
  return s;
}

absl::Status CudaSampler::EnqueueSampling(BatchView out, cudaStream_t stream, const DeviceExclusions& excluded) {
  const BatchCapacity& capacity = layout_.capacity;
  Workspace& w = *workspace_;
  GNND_RETURN_IF_ERROR(StartBatch(w, capacity, ids_, out, stream));
  for (size_t hop = 0; hop < spec_.fanouts.size(); ++hop) {
    const HopBound& bound = capacity.hops[hop];
    const int h = static_cast<int>(hop);
    GNND_RETURN_IF_ERROR(SampleHop(w, graph_, bound, h, spec_.fanouts[hop], ids_, out, stream, excluded));
    GNND_RETURN_IF_ERROR(AddHopNodes(w, bound, h, ids_, out, stream));
  }
  return EndBatch(w, capacity, ids_, stream);
}

absl::Status CudaSampler::EnqueueGather(BatchView out, cudaStream_t stream) {
  const BatchCapacity& capacity = layout_.capacity;
  GNND_RETURN_IF_ERROR(GatherFeatures(*workspace_, graph_, capacity.max_nodes, gather_, out, stream));
  return GatherLabels(*workspace_, graph_, capacity.max_seeds, out, stream);
}

absl::Status CudaSampler::Prepare(BatchView out, cudaStream_t stream) {
  if (!use_graphs_ || stream == nullptr) return absl::OkStatus();
  return graphs_
      .For(
          out.node_ids, stream, [&] { return EnqueueSampling(out, stream); },
          [&] { return EnqueueGather(out, stream); })
      .status();
}

absl::Status CudaSampler::Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> device_seeds,
                                 BatchView out, cudaStream_t stream, cudaEvent_t sampled) {
  const int64_t num_seeds = static_cast<int64_t>(device_seeds.size());
  if (num_seeds > layout_.capacity.max_seeds) return absl::InvalidArgumentError("more seeds than the batch capacity");
  const BatchArgs args{device_seeds.data(), num_seeds, MakeSamplingKey(seed_, epoch, RandomPurpose::kNeighbors),
                       batch_index};
  // A batch whose sampling was not enqueued whole may have left its nodes in the node table.
  if (needs_reset_) GNND_RETURN_IF_ERROR(ResetDedup(*workspace_, ids_, stream));
  needs_reset_ = true;  // until this batch's sampling is enqueued whole
  GNND_RETURN_IF_ERROR(SetBatchArgs(*workspace_, args, stream));
  bool enqueued = false;
  const absl::Status status = graphs_.Run(
      out.node_ids, stream, use_graphs_, [&] { return EnqueueSampling(out, stream); },
      [&] { return EnqueueGather(out, stream); }, sampled, &enqueued);
  if (enqueued) needs_reset_ = false;
  return status;
}

absl::Status CudaSampler::SampleLinkGraph(uint64_t epoch, uint64_t batch_index, const int64_t* hop0,
                                          const int64_t* num_hop0, const DeviceExclusions& excluded, BatchView out,
                                          cudaStream_t stream) {
  if (needs_reset_) GNND_RETURN_IF_ERROR(ResetDedup(*workspace_, ids_, stream));
  needs_reset_ = true;
  const BatchArgs args{hop0, 0, MakeSamplingKey(seed_, epoch, RandomPurpose::kNeighbors), batch_index};
  GNND_RETURN_IF_ERROR(SetBatchArgs(*workspace_, args, stream));
  GNND_CUDA(cudaMemcpyAsync(&workspace_->args->num_seeds, num_hop0, sizeof(int64_t), cudaMemcpyDeviceToDevice, stream),
            "set a link batch's hop-0 count");
  GNND_RETURN_IF_ERROR(EnqueueSampling(out, stream, excluded));
  needs_reset_ = false;
  return GatherFeatures(*workspace_, graph_, layout_.capacity.max_nodes, gather_, out, stream);
}

}  // namespace gnnd::cuda
