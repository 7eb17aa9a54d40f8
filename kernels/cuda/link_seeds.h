// The seed side of a link batch on the GPU: each positive pair's negatives (link_rule.h's DrawNegative,
// redrawn while strict and an edge), the hop-0 nodes (every endpoint, sorted and unique: CUB), and the pairs
// in local indices. Byte for byte what common/batch/link_seeds.h's MakeLinkSeeds makes on the host: one list
// of hop-0 nodes for a relation whose endpoints are one node type, else one per endpoint type. Buffers are sized once
// for the largest batch; nothing is allocated per batch and the host never waits inside Make.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/batch/link_seeds.h"
#include "common/batch/sampling.h"
#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/launch.h"

namespace gnnd::cuda {

class CudaLinkSeeds {
 public:
  // For batches of up to `max_positives` pairs with `negatives`, on the current device. `relation`: what
  // errors call the seed relation (LinkRelation::name).
  static absl::StatusOr<std::unique_ptr<CudaLinkSeeds>> Create(int64_t max_positives, const NegativeSpec& negatives,
                                                               std::string relation = "the graph");
  ~CudaLinkSeeds();
  CudaLinkSeeds(const CudaLinkSeeds&) = delete;
  CudaLinkSeeds& operator=(const CudaLinkSeeds&) = delete;

  // Where Make writes the hop-0 nodes (device memory, at most max_hop0() ids each) and their counts: `src`
  // holds every endpoint when `dst` is null (one node type), else the sources and `dst` the destinations.
  struct Hop0 {
    int64_t* src = nullptr;
    int64_t* num_src = nullptr;
    int64_t* dst = nullptr;
    int64_t* num_dst = nullptr;
  };
  // Enqueues batch `batch`'s seeds on `stream`: positives (src[i], dst[i]) for i < positives (device memory),
  // negatives drawn under `key` over the relation `csc` between num_src_nodes sources and num_dst_nodes
  // destinations (kFixed: taken from `fixed`, amount per positive, device memory); the hop-0 nodes to `hop0`.
  absl::Status Make(SamplingKey key, uint64_t batch, const int64_t* src, const int64_t* dst, int64_t positives,
                    const DeviceRelation& csc, int64_t num_src_nodes, int64_t num_dst_nodes, const Hop0& hop0,
                    cudaStream_t stream, const int64_t* fixed = nullptr);
  // A relation whose endpoints are one type of `num_nodes` nodes: every endpoint into hop0, count *num_hop0.
  absl::Status Make(SamplingKey key, uint64_t batch, const int64_t* src, const int64_t* dst, int64_t positives,
                    const DeviceRelation& csc, int64_t num_nodes, int64_t* hop0, int64_t* num_hop0,
                    cudaStream_t stream) {
    return Make(key, batch, src, dst, positives, csc, num_nodes, num_nodes, Hop0{hop0, num_hop0}, stream);
  }
  // Waits for `stream`, then: FAILED_PRECONDITION if a strict negative of the last Make (batch `batch`, its
  // positives' sources `src`) was still an edge after kMaxStrictDraws draws, as MakeLinkSeeds says it; else OK.
  absl::Status CheckStrict(uint64_t batch, const int64_t* src, cudaStream_t stream) const;

  int64_t max_hop0() const { return max_endpoints_; }
  // The strict flag of the last Make (device memory): UINT64_MAX, or the first negative whose draws all hit
  // edges.
  const uint64_t* strict_failed() const { return failed_; }
  // Its error (MakeLinkSeeds' FAILED_PRECONDITION) for batch `batch`, `source` being that negative's
  // positive's source (triplets name it; -1 otherwise).
  absl::Status StrictError(uint64_t batch, uint64_t failed, int64_t source) const;
  // The pairs in local indices (device memory) of a batch of `positives`: binary and none, pair_src and
  // pair_dst of positives x (1 + amount) pairs; triplet, src_index and dst_pos_index (positives) and
  // dst_neg_index (positives x amount).
  const int32_t* pair_src() const { return pair_src_; }
  const int32_t* pair_dst() const { return pair_dst_; }
  const int32_t* src_index() const { return pair_src_; }
  const int32_t* dst_pos_index() const { return pair_dst_; }
  const int32_t* dst_neg_index(int64_t positives) const { return pair_dst_ + positives; }

 private:
  CudaLinkSeeds() = default;

  NegativeSpec negatives_;
  std::string relation_;
  int64_t max_positives_ = 0, max_endpoints_ = 0;
  // Every pair's source in global ids (triplet: the positives' only), then every pair's destination (the
  // positives', then the negatives'): all the endpoints, and their sorted copy.
  int64_t* endpoints_ = nullptr;
  int64_t* sorted_ = nullptr;
  int32_t* pair_src_ = nullptr;
  int32_t* pair_dst_ = nullptr;
  uint64_t* failed_ = nullptr;  // the smallest negative index whose strict draws all hit edges, or UINT64_MAX
  uint64_t* weights_[2] = {nullptr, nullptr};  // weighted sources' and destinations' cumulative weights, or null
  CubTemp temp_;
};

}  // namespace gnnd::cuda
