#include "kernels/cuda/cuda_sampler.h"

#include "common/cuda_check.h"
#include "common/sampling.h"
#include "common/status.h"
#include "kernels/cuda/sampling.h"

namespace gnnd::cuda {

absl::StatusOr<std::unique_ptr<CudaSampler>> CudaSampler::Create(const DeviceGraph& graph, std::vector<int32_t> fanouts,
                                                                 uint64_t seed, const BatchCapacity& capacity) {
  auto s = std::unique_ptr<CudaSampler>(new CudaSampler());
  s->graph_ = graph;
  s->fanouts_ = std::move(fanouts);
  s->seed_ = seed;
  s->layout_ = BatchLayout::Make(capacity, static_cast<int>(s->fanouts_.size()), FeatureRowBytes(graph.manifest));
  s->ids_ = IdRange::ForNodes(graph.manifest.num_nodes());
  int device = 0, shared = 0;
  GNND_CUDA(cudaGetDevice(&device), "query the current device");
  GNND_CUDA(cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlock, device),
            "query the shared memory per block");
  s->gather_.shared_bytes_limit = static_cast<size_t>(shared);
  GNND_ASSIGN_OR_RETURN(s->workspace_, Workspace::Create(capacity));
  return s;
}

absl::Status CudaSampler::Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> device_seeds,
                                 BatchView out, cudaStream_t stream, cudaEvent_t sampled) {
  const BatchCapacity& capacity = layout_.capacity;
  const int64_t num_seeds = static_cast<int64_t>(device_seeds.size());
  if (num_seeds > capacity.max_seeds) return absl::InvalidArgumentError("more seeds than the batch capacity");
  Workspace& w = *workspace_;
  const SamplingKey key = MakeSamplingKey(seed_, epoch, RandomPurpose::kNeighbors);
  GNND_RETURN_IF_ERROR(StartBatch(w, device_seeds, capacity, ids_, out, stream));
  for (size_t hop = 0; hop < fanouts_.size(); ++hop) {
    const HopBound& bound = capacity.hops[hop];
    const int h = static_cast<int>(hop);
    GNND_RETURN_IF_ERROR(SampleHop(w, graph_, bound, h, fanouts_[hop], key, batch_index, out, stream));
    GNND_RETURN_IF_ERROR(AddHopNodes(w, bound, h, ids_, out, stream));
  }
  if (sampled != nullptr) GNND_CUDA(cudaEventRecord(sampled, stream), "record the end of sampling");
  GNND_RETURN_IF_ERROR(GatherFeatures(w, graph_, capacity.max_nodes, gather_, out, stream));
  return GatherLabels(graph_, num_seeds, out, stream);
}

}  // namespace gnnd::cuda
