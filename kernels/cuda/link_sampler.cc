#include "kernels/cuda/link_sampler.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/cuda_check.h"
#include "common/base/status.h"
#include "common/batch/link_rule.h"

namespace gnnd::cuda {
namespace {

// The excluded positions of one hop at most: every excluded (destination, source) pair's parallel edges.
int64_t ExcludedPositions(const GraphData& graph, const EdgeExclusions& excluded) {
  const int64_t* indptr = graph.arrays.indptr();
  int64_t total = 0;
  for (size_t e = 0; e < excluded.dsts().size(); ++e) {
    int64_t first = 0, last = 0;
    if (graph.wide_indices()) {
      SourceRange(indptr, static_cast<const int64_t*>(graph.arrays[ArrayId::kIndices]), excluded.srcs()[e],
                  excluded.dsts()[e], &first, &last);
    } else {
      SourceRange(indptr, static_cast<const int32_t*>(graph.arrays[ArrayId::kIndices]), excluded.srcs()[e],
                  excluded.dsts()[e], &first, &last);
    }
    total += last - first;
  }
  return total;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaLinkSampler>> CudaLinkSampler::Create(const GraphData& host,
                                                                         const DeviceGraph& device,
                                                                         const LinkSamplingSpec& spec, uint64_t seed,
                                                                         int64_t max_positives) {
  GNND_RETURN_IF_ERROR(CheckLinkSamplingSpec(spec, host.schema, ""));
  auto s = std::unique_ptr<CudaLinkSampler>(new CudaLinkSampler());
  s->host_ = &host;
  s->csc_ = {device.indptr, device.indices, device.manifest.index_dtype()};
  s->spec_ = spec;
  s->seed_ = seed;
  s->max_positives_ = std::max<int64_t>(max_positives, 1);
  if (spec.seed_edges != nullptr) {
    s->split_edges_ = spec.seed_edges->data();
    s->split_size_ = static_cast<int64_t>(spec.seed_edges->size() / 2);
  } else {
    const EdgeSplitSchema& split = host.schema.relations[0].edge_splits[spec.edge_split];
    s->split_edges_ = static_cast<const int64_t*>(host.arrays.data[split.edges]);
    s->split_size_ = split.num_edges;
  }
  const SamplingSpec sampling{MaxLinkSeeds(s->max_positives_, spec.negatives), spec.fanouts};
  GNND_ASSIGN_OR_RETURN(
      const BatchCapacity capacity,
      ComputeBatchCapacity(sampling, host.num_nodes(), host.manifest.num_edges(), host.MaxInDegree()));
  GNND_ASSIGN_OR_RETURN(s->sampler_, CudaSampler::Create(device, sampling, seed, capacity));
  GNND_ASSIGN_OR_RETURN(s->seeds_, CudaLinkSeeds::Create(s->max_positives_, spec.negatives));
  const int64_t staged = 2 * s->max_positives_ + 2 * (2 * s->max_positives_);  // positives, exclusions (reverse)
  GNND_CUDA(cudaMallocHost(&s->staging_, sizeof(int64_t) * staged), "allocate a link sampler's staging");
  GNND_CUDA(cudaMalloc(&s->uploaded_, sizeof(int64_t) * staged), "allocate a link sampler's positives");
  GNND_CUDA(cudaEventCreateWithFlags(&s->staged_, cudaEventDisableTiming), "create a link sampler's event");
  GNND_CUDA(cudaMalloc(&s->num_hop0_, sizeof(int64_t)), "allocate a link sampler's count");
  GNND_CUDA(cudaMalloc(&s->scratch_.counts, sizeof(int64_t) * (capacity.max_nodes + 1)), "allocate exclusions");
  GNND_CUDA(cudaMalloc(&s->scratch_.offsets, sizeof(int64_t) * (capacity.max_nodes + 1)), "allocate exclusions");
  GNND_RETURN_IF_ERROR(s->ReservePositions(4 * s->max_positives_, nullptr));
  return s;
}

CudaLinkSampler::~CudaLinkSampler() {
  if (staged_ != nullptr) cudaEventSynchronize(staged_);
  for (void* p : {static_cast<void*>(uploaded_), static_cast<void*>(num_hop0_), static_cast<void*>(scratch_.counts),
                  static_cast<void*>(scratch_.offsets), static_cast<void*>(scratch_.positions)}) {
    if (p != nullptr) cudaFree(p);
  }
  if (staging_ != nullptr) cudaFreeHost(staging_);
  if (staged_ != nullptr) cudaEventDestroy(staged_);
}

absl::Status CudaLinkSampler::ReservePositions(int64_t positions, cudaStream_t stream) {
  if (positions <= scratch_.max_positions) return absl::OkStatus();
  GNND_CUDA(cudaStreamSynchronize(stream), "finish the batches using the excluded positions");
  if (scratch_.positions != nullptr) cudaFree(scratch_.positions);
  scratch_.positions = nullptr;
  scratch_.max_positions = 0;
  const int64_t room = std::max(positions, 2 * scratch_.max_positions);
  GNND_CUDA(cudaMalloc(&scratch_.positions, sizeof(int64_t) * room), "allocate excluded positions");
  scratch_.max_positions = room;
  return absl::OkStatus();
}

absl::Status CudaLinkSampler::Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> input_id,
                                     BatchView out, cudaStream_t stream) {
  const auto p = static_cast<int64_t>(input_id.size());
  if (p < 1 || p > max_positives_) {
    return absl::InvalidArgumentError(absl::StrCat("a link batch of ", p, " positives (1 to ", max_positives_, ")"));
  }
  GNND_CUDA(cudaEventSynchronize(staged_), "wait for the last batch's upload");
  int64_t* src = staging_;
  int64_t* dst = staging_ + p;
  for (int64_t i = 0; i < p; ++i) {
    if (input_id[i] < 0 || input_id[i] >= split_size_) {
      return absl::InvalidArgumentError(absl::StrCat("input_id ", input_id[i], " of a split of ", split_size_));
    }
    src[i] = split_edges_[input_id[i]];
    dst[i] = split_edges_[split_size_ + input_id[i]];
  }
  excluded_.Build({src, static_cast<size_t>(p)}, {dst, static_cast<size_t>(p)}, spec_.exclude);
  const auto pairs = static_cast<int64_t>(excluded_.dsts().size());
  std::copy(excluded_.dsts().begin(), excluded_.dsts().end(), staging_ + 2 * p);
  std::copy(excluded_.srcs().begin(), excluded_.srcs().end(), staging_ + 2 * p + pairs);
  DeviceExclusions excluded = scratch_;
  if (pairs > 0) {
    excluded.positions_bound = ExcludedPositions(*host_, excluded_);
    GNND_RETURN_IF_ERROR(ReservePositions(excluded.positions_bound, stream));
    excluded.positions = scratch_.positions;
    excluded.max_positions = scratch_.max_positions;
    excluded.dst = uploaded_ + 2 * p;
    excluded.src = uploaded_ + 2 * p + pairs;
    excluded.count = pairs;
  }
  GNND_CUDA(cudaMemcpyAsync(uploaded_, staging_, sizeof(int64_t) * (2 * p + 2 * pairs), cudaMemcpyHostToDevice, stream),
            "upload a link batch's positives");
  GNND_CUDA(cudaEventRecord(staged_, stream), "mark the upload");
  const SamplingKey negatives = MakeSamplingKey(seed_, epoch, RandomPurpose::kNegatives);
  GNND_RETURN_IF_ERROR(seeds_->Make(negatives, batch_index, uploaded_, uploaded_ + p, p, csc_, host_->num_nodes(),
                                    out.node_ids, num_hop0_, stream));
  return sampler_->SampleLinkGraph(epoch, batch_index, out.node_ids, num_hop0_, excluded, out, stream);
}

absl::Status CudaLinkSampler::CheckStrict(uint64_t batch_index, cudaStream_t stream) const {
  return seeds_->CheckStrict(batch_index, uploaded_, stream);
}

}  // namespace gnnd::cuda
