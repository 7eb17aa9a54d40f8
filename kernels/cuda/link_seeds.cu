#include <cub/cub.cuh>

#include "absl/strings/str_cat.h"
#include "common/batch/link_batch.h"
#include "common/batch/link_rule.h"
#include "kernels/cuda/link_seeds.h"

namespace gnnd::cuda {
namespace {

constexpr uint64_t kNone = UINT64_MAX;

// Negative `index` (of NegativeSpec::Count): MakeLinkSeeds' Negative, one thread each, drawn by its index (by round
// of `positives`: that of positive index % positives' (index / positives)-th).
template <typename Index>
__global__ void NegativesKernel(SamplingKey key, uint64_t batch, const int64_t* src, int64_t count, int64_t amount,
                                int64_t positives, bool by_round, bool triplet, bool strict, const int64_t* indptr,
                                const Index* indices, const uint64_t* src_weights, const uint64_t* dst_weights,
                                int64_t num_src_nodes, int64_t num_dst_nodes, int64_t* negative_src,
                                int64_t* negative_dst, unsigned long long* failed) {
  const int64_t index = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (index >= count) return;
  NodePair pair{};
  bool drawn = false;
  const int64_t drawn_as = by_round ? index % positives * amount + index / positives : index;
  for (uint32_t attempt = 0; attempt < kMaxStrictDraws && !drawn; ++attempt) {
    pair = DrawNegative(key, batch, static_cast<uint64_t>(drawn_as), attempt, num_src_nodes, num_dst_nodes, src_weights,
                        dst_weights);
    if (triplet) pair.src = src[index / amount];
    drawn = !strict || !IsEdge(indptr, indices, pair.src, pair.dst);
  }
  if (!drawn) atomicMin(failed, static_cast<unsigned long long>(index));
  if (!triplet) negative_src[index] = pair.src;
  negative_dst[index] = pair.dst;
}

// out[i] = the position of ids[i] in sorted[0, *num_sorted), which holds it.
__global__ void LocalizeKernel(const int64_t* ids, int64_t count, const int64_t* sorted, const int64_t* num_sorted,
                               int32_t* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count) return;
  int64_t lo = 0, hi = *num_sorted;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (sorted[mid] < ids[i]) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  out[i] = static_cast<int32_t>(lo);
}

int EndBit(int64_t num_nodes) {
  int bits = 1;
  while (bits < 63 && (int64_t{1} << bits) < num_nodes) ++bits;
  return bits;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaLinkSeeds>> CudaLinkSeeds::Create(int64_t max_positives,
                                                                     const NegativeSpec& negatives,
                                                                     std::string relation) {
  auto s = std::unique_ptr<CudaLinkSeeds>(new CudaLinkSeeds());
  s->negatives_ = negatives;
  s->relation_ = std::move(relation);
  s->max_positives_ = std::max<int64_t>(max_positives, 1);
  s->max_endpoints_ = MaxLinkSeeds(s->max_positives_, negatives);
  const int64_t amount = negatives.mode == NegativeMode::kNone ? 0 : negatives.amount;
  const int64_t max_pairs = s->max_positives_ * (1 + amount);
  GNND_CUDA(cudaMalloc(&s->endpoints_, sizeof(int64_t) * s->max_endpoints_), "allocate a link batch's endpoints");
  GNND_CUDA(cudaMalloc(&s->sorted_, sizeof(int64_t) * s->max_endpoints_), "allocate a link batch's endpoints");
  GNND_CUDA(cudaMalloc(&s->pair_src_, sizeof(int32_t) * max_pairs), "allocate a link batch's pairs");
  GNND_CUDA(cudaMalloc(&s->pair_dst_, sizeof(int32_t) * max_pairs), "allocate a link batch's pairs");
  GNND_CUDA(cudaMalloc(&s->failed_, sizeof(uint64_t)), "allocate a link batch's strict flag");
  // Weighted endpoints' cumulative weights, in device memory (a triplet draws no source).
  const std::vector<uint64_t>* weights[2] = {TripletLayout(negatives.mode) ? nullptr : negatives.src_weights.get(),
                                             negatives.dst_weights.get()};
  for (int e = 0; e < 2; ++e) {
    if (weights[e] == nullptr) continue;
    const size_t bytes = sizeof(uint64_t) * weights[e]->size();
    GNND_CUDA(cudaMalloc(&s->weights_[e], bytes), "allocate a link batch's negative weights");
    GNND_CUDA(cudaMemcpy(s->weights_[e], weights[e]->data(), bytes, cudaMemcpyHostToDevice),
              "copy a link batch's negative weights");
  }
  const int n = static_cast<int>(s->max_endpoints_);
  GNND_RETURN_IF_ERROR(s->temp_.Reserve("size the endpoints' sort", [&](void* temp, size_t& bytes) {
    return cub::DeviceRadixSort::SortKeys(temp, bytes, s->endpoints_, s->sorted_, n);
  }));
  GNND_RETURN_IF_ERROR(s->temp_.Reserve("size the endpoints' unique", [&](void* temp, size_t& bytes) {
    return cub::DeviceSelect::Unique(temp, bytes, s->sorted_, s->endpoints_, reinterpret_cast<int64_t*>(s->failed_), n);
  }));
  GNND_CUDA(cudaMalloc(&s->temp_.data, std::max<size_t>(s->temp_.bytes, 1)), "allocate CUB's scratch");
  return s;
}

CudaLinkSeeds::~CudaLinkSeeds() {
  for (void* p : {static_cast<void*>(endpoints_), static_cast<void*>(sorted_), static_cast<void*>(pair_src_),
                  static_cast<void*>(pair_dst_), static_cast<void*>(failed_), temp_.data,
                  static_cast<void*>(weights_[0]), static_cast<void*>(weights_[1])}) {
    if (p != nullptr) cudaFree(p);
  }
}

absl::Status CudaLinkSeeds::Make(SamplingKey key, uint64_t batch, const int64_t* src, const int64_t* dst,
                                 int64_t positives, const DeviceRelation& csc, int64_t num_src_nodes,
                                 int64_t num_dst_nodes, const Hop0& hop0, cudaStream_t stream, const int64_t* fixed) {
  if (positives < 1 || positives > max_positives_) {
    return absl::InvalidArgumentError(
        absl::StrCat("a link batch of ", positives, " pairs (1 to ", max_positives_, ")"));
  }
  const bool triplet = TripletLayout(negatives_.mode);
  const int64_t amount = negatives_.mode == NegativeMode::kNone ? 0 : negatives_.amount;
  const int64_t negatives = negatives_.Count(positives);
  const int64_t num_src = triplet ? positives : positives + negatives, num_dst = positives + negatives;
  if (negatives_.mode == NegativeMode::kFixed && fixed == nullptr) {
    return absl::InvalidArgumentError("fixed negatives: none given");
  }
  int64_t* all_src = endpoints_;
  int64_t* all_dst = endpoints_ + num_src;
  GNND_CUDA(cudaMemcpyAsync(all_src, src, sizeof(int64_t) * positives, cudaMemcpyDeviceToDevice, stream),
            "copy a link batch's positives");
  GNND_CUDA(cudaMemcpyAsync(all_dst, dst, sizeof(int64_t) * positives, cudaMemcpyDeviceToDevice, stream),
            "copy a link batch's positives");
  GNND_CUDA(cudaMemsetAsync(failed_, 0xff, sizeof(uint64_t), stream), "reset the strict flag");
  if (negatives > 0 && negatives_.mode == NegativeMode::kFixed) {
    GNND_CUDA(
        cudaMemcpyAsync(all_dst + positives, fixed, sizeof(int64_t) * negatives, cudaMemcpyDeviceToDevice, stream),
        "copy a link batch's fixed negatives");
  } else if (negatives > 0) {
    GNND_RETURN_IF_ERROR(DispatchIndex(csc.index_dtype, [&](auto index_type) -> absl::Status {
      using Index = decltype(index_type);
      GNND_LAUNCH(NegativesKernel<Index>, Blocks(negatives), kThreads, 0, stream, key, batch, src, negatives, amount,
                  positives, negatives_.ratio > 0, triplet, negatives_.strict, csc.indptr,
                  static_cast<const Index*>(csc.indices), weights_[0], weights_[1], num_src_nodes, num_dst_nodes,
                  all_src + positives, all_dst + positives, reinterpret_cast<unsigned long long*>(failed_));
      return absl::OkStatus();
    }));
  }
  // Sorted and unique: ids[0, n) of at most `nodes` distinct values into out, their count to *count.
  auto unique = [&](int64_t* ids, int64_t* sorted, int64_t n, int64_t nodes, int64_t* out, int64_t* count) {
    GNND_RETURN_IF_ERROR(temp_.Run("sort a link batch's endpoints", [&](void* temp, size_t& bytes) {
      return cub::DeviceRadixSort::SortKeys(temp, bytes, ids, sorted, static_cast<int>(n), 0, EndBit(nodes), stream);
    }));
    return temp_.Run("unique a link batch's endpoints", [&](void* temp, size_t& bytes) {
      return cub::DeviceSelect::Unique(temp, bytes, sorted, out, count, static_cast<int>(n), stream);
    });
  };
  const bool one_type = hop0.dst == nullptr;
  int64_t *src_list = hop0.src, *num_src_list = hop0.num_src;
  int64_t *dst_list = one_type ? hop0.src : hop0.dst, *num_dst_list = one_type ? hop0.num_src : hop0.num_dst;
  if (one_type) {
    GNND_RETURN_IF_ERROR(
        unique(endpoints_, sorted_, num_src + num_dst, std::max(num_src_nodes, num_dst_nodes), src_list, num_src_list));
  } else {
    GNND_RETURN_IF_ERROR(unique(all_src, sorted_, num_src, num_src_nodes, src_list, num_src_list));
    GNND_RETURN_IF_ERROR(unique(all_dst, sorted_ + num_src, num_dst, num_dst_nodes, dst_list, num_dst_list));
  }
  // Pairs in local indices: every source (triplet: the positives'), every destination.
  GNND_LAUNCH(LocalizeKernel, Blocks(num_src), kThreads, 0, stream, all_src, num_src, src_list, num_src_list,
              pair_src_);
  GNND_LAUNCH(LocalizeKernel, Blocks(num_dst), kThreads, 0, stream, all_dst, num_dst, dst_list, num_dst_list,
              pair_dst_);
  return absl::OkStatus();
}

absl::Status CudaLinkSeeds::CheckStrict(uint64_t batch, const int64_t* src, cudaStream_t stream) const {
  uint64_t failed = kNone;
  GNND_CUDA(cudaMemcpyAsync(&failed, failed_, sizeof(failed), cudaMemcpyDeviceToHost, stream), "read the strict flag");
  GNND_CUDA(cudaStreamSynchronize(stream), "make a link batch's seeds");
  if (failed == kNone) return absl::OkStatus();
  int64_t id = -1;
  if (TripletLayout(negatives_.mode)) {
    GNND_CUDA(cudaMemcpy(&id, src + failed / negatives_.amount, sizeof(id), cudaMemcpyDeviceToHost), "read a source");
  }
  return StrictError(batch, failed, id);
}

absl::Status CudaLinkSeeds::StrictError(uint64_t batch, uint64_t failed, int64_t source_id) const {
  if (failed == kNone) return absl::OkStatus();
  const std::string source = source_id >= 0 ? absl::StrCat(" (source ", source_id, ")") : "";
  return absl::FailedPreconditionError(absl::StrCat(
      "strict negatives: ", kMaxStrictDraws, " draws for negative ", failed, " of batch ", batch, source,
      " were all edges of ", relation_, ": the graph is too dense for strict negatives (turn strict off)"));
}

}  // namespace gnnd::cuda
