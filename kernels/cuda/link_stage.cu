#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/cuda_check.h"
#include "common/base/limits.h"
#include "common/base/status.h"
#include "common/batch/link_rule.h"
#include "kernels/cuda/link_stage.h"

namespace gnnd::cuda {
namespace {

// A link batch's pairs as PyG's rows: edge_label_index[i] = (source, destination) in local indices, and an
// unlabeled split's edge_label 1. for the positives, 0. for their negatives.
__global__ void PairsKernel(const int32_t* pair_src, const int32_t* pair_dst, int64_t pairs, int64_t positives,
                            int32_t* rows, float* labels) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= pairs) return;
  rows[2 * i] = pair_src[i];
  rows[2 * i + 1] = pair_dst[i];
  if (labels != nullptr) labels[i] = i < positives ? 1.0f : 0.0f;
}

// A disjoint batch's pairs: edge_label_index[i] = (i, dst_first + i), and an unlabeled split's labels.
__global__ void DisjointPairsKernel(int64_t pairs, int64_t positives, int32_t dst_first, int32_t* rows, float* labels) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= pairs) return;
  rows[2 * i] = static_cast<int32_t>(i);
  rows[2 * i + 1] = dst_first + static_cast<int32_t>(i);
  if (labels != nullptr) labels[i] = i < positives ? 1.0f : 0.0f;
}

// out[i] = first + i.
__global__ void RangeKernel(int32_t* out, int64_t count, int32_t first) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count) out[i] = first + static_cast<int32_t>(i);
}

// A disjoint triplet batch's dst_neg_index, negatives by round (MakeLinkSeeds): row i, column m is hop-0
// entry first + m * positives + i.
__global__ void ByRoundKernel(int32_t* out, int64_t positives, int32_t amount, int32_t first) {
  const int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (k >= positives * amount) return;
  out[k] = first + static_cast<int32_t>((k % amount) * positives + k / amount);
}

// The excluded positions of one hop at most in relation `relation`: every excluded (destination, source)
// pair's parallel edges, once per frontier entry of its destination. A destination is in a frontier once, or a
// disjoint batch's once per subgraph (at most `subgraphs` times, and the frontier holds `max_frontier`).
int64_t ExcludedPositions(const GraphData& graph, int relation, const EdgeExclusions& excluded, int64_t subgraphs,
                          int64_t max_frontier) {
  const RelationSchema& r = graph.schema.relations[relation];
  const auto* indptr = static_cast<const int64_t*>(graph.arrays.data[r.indptr]);
  const void* indices = graph.arrays.data[r.indices];
  int64_t total = 0, most_of_one = 0, of_this = 0;  // most_of_one: the most positions one destination has
  for (size_t e = 0; e < excluded.dsts().size(); ++e) {
    int64_t first = 0, last = 0;
    if (r.index_dtype == DType::kInt64) {
      SourceRange(indptr, static_cast<const int64_t*>(indices), excluded.srcs()[e], excluded.dsts()[e], &first, &last);
    } else {
      SourceRange(indptr, static_cast<const int32_t*>(indices), excluded.srcs()[e], excluded.dsts()[e], &first, &last);
    }
    total += last - first;
    of_this = (e > 0 && excluded.dsts()[e] == excluded.dsts()[e - 1] ? of_this : 0) + last - first;
    most_of_one = std::max(most_of_one, of_this);
  }
  if (subgraphs <= 1) return total;
  return std::min(SaturatingMul(total, subgraphs), SaturatingMul(most_of_one, max_frontier));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaLinkStage>> CudaLinkStage::Create(const GraphData& host, const DeviceGraph& device,
                                                                     CudaSampler& sampler, const LinkSeedSpec& spec,
                                                                     uint64_t seed, int ways) {
  GNND_RETURN_IF_ERROR(CheckLinkSeedSpec(spec, host.schema, ""));
  const SamplingSpec& sampling = sampler.spec();
  if (!sampling.link() || !sampler.layout().pairs) {
    return absl::InvalidArgumentError("a link stage's sampler is a node batch's (its spec and layout)");
  }
  auto s = std::unique_ptr<CudaLinkStage>(new CudaLinkStage());
  s->host_ = &host;
  s->by_time_ = NodesByTimeOf(host, spec, sampling);
  s->relation_ = LinkRelationOf(host, spec.relation, s->by_time_.get());
  s->disjoint_ = sampling.disjoint;
  s->temporal_ = sampling.temporal();
  s->spec_ = spec;
  s->seed_ = seed;
  s->max_positives_ = std::max<int64_t>(sampling.batch_size, 1);
  s->positives_ = SeedEdgesOf(spec, host);
  if (!s->temporal_) s->positives_.times = nullptr;  // a split's times, unread
  s->csc_ = device.relations[spec.relation];
  s->sampler_ = &sampler;
  const int64_t max_frontier = s->sampler_->MaxFrontier();  // the exclusions' per-node scratch
  GNND_CUDA(cudaMalloc(&s->num_hop0_, sizeof(int64_t) * host.schema.node_types.size()),
            "allocate a link sampler's counts");
  GNND_ASSIGN_OR_RETURN(s->seeds_, CudaLinkSeeds::Create(s->max_positives_, spec.negatives, s->relation_.name));
  // Positives, exclusions (per positive its pair and one per reverse relation, itself included where both ends
  // are one type: two ids each), input ids, labels of every pair.
  const int64_t amount = spec.negatives.mode == NegativeMode::kNone ? 0 : spec.negatives.amount;
  const auto excluded_per_positive = static_cast<int64_t>(1 + ReverseRelations(host.schema, spec.relation).size());
  // Then a fixed-negatives split's rows (amount per positive).
  int64_t staged = 2 * s->max_positives_ + 2 * excluded_per_positive * s->max_positives_ + s->max_positives_ +
                   s->max_positives_ * (1 + amount) + s->max_positives_ * amount;
  if (s->disjoint_) {  // then a disjoint batch's hop-0 counts, nodes, subgraph times and pair times
    const int64_t endpoints = MaxLinkSeeds(s->max_positives_, spec.negatives);
    staged += static_cast<int64_t>(host.schema.node_types.size()) + 2 * endpoints + s->max_positives_ * (1 + amount);
    GNND_CUDA(cudaMalloc(&s->no_failure_, sizeof(uint64_t)), "allocate a link sampler's strict flag");
    GNND_CUDA(cudaMemset(s->no_failure_, 0xff, sizeof(uint64_t)), "set a link sampler's strict flag");
  }
  s->staging_size_ = staged;
  s->staged_.resize(std::max(ways, 1));
  GNND_CUDA(cudaMallocHost(&s->staging_, sizeof(int64_t) * staged * s->staged_.size()),
            "allocate a link sampler's staging");
  GNND_CUDA(cudaMalloc(&s->uploaded_, sizeof(int64_t) * staged), "allocate a link sampler's positives");
  for (cudaEvent_t& e : s->staged_) {
    GNND_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "create a link sampler's event");
  }
  GNND_CUDA(cudaMalloc(&s->scratch_.counts, sizeof(int64_t) * (max_frontier + 1)), "allocate exclusions");
  GNND_CUDA(cudaMalloc(&s->scratch_.offsets, sizeof(int64_t) * (max_frontier + 1)), "allocate exclusions");
  GNND_RETURN_IF_ERROR(s->ReservePositions(4 * s->max_positives_, nullptr));
  return s;
}

CudaLinkStage::~CudaLinkStage() {
  for (cudaEvent_t e : staged_) {
    if (e != nullptr) cudaEventSynchronize(e);
  }
  for (void* p : {static_cast<void*>(uploaded_), static_cast<void*>(num_hop0_), static_cast<void*>(scratch_.counts),
                  static_cast<void*>(scratch_.offsets), static_cast<void*>(scratch_.positions),
                  static_cast<void*>(no_failure_)}) {
    if (p != nullptr) cudaFree(p);
  }
  if (staging_ != nullptr) cudaFreeHost(staging_);
  for (cudaEvent_t e : staged_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
}

absl::Status CudaLinkStage::ReservePositions(int64_t positions, cudaStream_t stream) {
  if (positions <= scratch_.max_positions) return absl::OkStatus();
  GNND_CUDA(cudaStreamSynchronize(stream), "finish the batches using the excluded positions");
  const int64_t room = std::max(positions, 2 * scratch_.max_positions);
  if (scratch_.positions != nullptr) cudaFree(scratch_.positions);
  scratch_.positions = nullptr;
  scratch_.max_positions = 0;
  GNND_CUDA(cudaMalloc(&scratch_.positions, sizeof(int64_t) * room), "allocate excluded positions");
  scratch_.max_positions = room;
  return absl::OkStatus();
}

absl::Status CudaLinkStage::Sample(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> input_id, void* out,
                                   cudaStream_t stream, bool labels, int way) {
  const auto p = static_cast<int64_t>(input_id.size());
  if (p < 1 || p > max_positives_) {
    return absl::InvalidArgumentError(absl::StrCat("a link batch of ", p, " positives (1 to ", max_positives_, ")"));
  }
  if (way < 0 || way >= static_cast<int>(staged_.size())) return absl::InvalidArgumentError("no such staging way");
  // Done at once when the batch that last used this way is complete (a slot's, for a session).
  GNND_CUDA(cudaEventSynchronize(staged_[way]), "wait for the upload that last used the staging");
  int64_t* staging = staging_ + way * staging_size_;
  int64_t* src = staging;
  int64_t* dst = staging + p;
  for (int64_t i = 0; i < p; ++i) {
    if (input_id[i] < 0 || input_id[i] >= positives_.size) {
      return absl::InvalidArgumentError(absl::StrCat("input_id ", input_id[i], " of a split of ", positives_.size));
    }
    src[i] = positives_.edges[input_id[i]];
    dst[i] = positives_.edges[positives_.size + input_id[i]];
  }
  // Each relation's excluded pairs (destinations, then sources), one after another.
  BuildRelationExclusions(host_->schema, spec_.relation, spec_.exclude, {src, static_cast<size_t>(p)},
                          {dst, static_cast<size_t>(p)}, excluded_);
  std::vector<DeviceExclusions>& excluded = device_excluded_;  // kept: no allocation per batch
  excluded.assign(excluded_.size(), DeviceExclusions{});
  int64_t at = 2 * p, most_positions = 0;
  for (size_t r = 0; r < excluded_.size(); ++r) {
    const auto pairs = static_cast<int64_t>(excluded_[r].dsts().size());
    if (pairs == 0) continue;
    std::copy(excluded_[r].dsts().begin(), excluded_[r].dsts().end(), staging + at);
    std::copy(excluded_[r].srcs().begin(), excluded_[r].srcs().end(), staging + at + pairs);
    DeviceExclusions& e = excluded[r];
    e = scratch_;
    e.positions_bound = ExcludedPositions(*host_, static_cast<int>(r), excluded_[r],
                                          disjoint_ ? sampler_->spec().MaxSubgraphs() : 1, sampler_->MaxFrontier());
    most_positions = std::max(most_positions, e.positions_bound);
    e.dst = uploaded_ + at;
    e.src = uploaded_ + at + pairs;
    e.count = pairs;
    at += 2 * pairs;
  }
  GNND_RETURN_IF_ERROR(ReservePositions(most_positions, stream));
  for (DeviceExclusions& e : excluded) {
    e.positions = scratch_.positions;
    e.max_positions = scratch_.max_positions;
  }
  // Then the input ids and, for a labeled split, every pair's label (PyG: classes + 1 beside binary
  // negatives' 0; without negatives the classes as they are).
  upload_tail_ = at;
  int64_t* tail = staging + upload_tail_;
  std::copy(input_id.begin(), input_id.end(), tail);
  int64_t uploaded = upload_tail_ + p;
  if (labels && positives_.labels != nullptr) {
    const int64_t labeled = p + (spec_.negatives.mode == NegativeMode::kBinary ? spec_.negatives.Count(p) : 0);
    LabeledEdgeLabels(positives_.labels, input_id, positives_.label_shift, labeled, tail + p);
    uploaded += labeled;
  }
  const int64_t* fixed = nullptr;
  if (spec_.negatives.mode == NegativeMode::kFixed) {
    fixed = uploaded_ + uploaded;
    FixedNegatives(positives_, input_id, fixed_);
    std::copy(fixed_.begin(), fixed_.end(), staging + uploaded);
    uploaded += static_cast<int64_t>(fixed_.size());
  }
  if (disjoint_) {
    disjoint_at_ = uploaded;
    GNND_RETURN_IF_ERROR(StageDisjointSeeds(epoch, batch_index, src, dst, input_id, staging, uploaded, &uploaded));
  }
  GNND_CUDA(cudaMemcpyAsync(uploaded_, staging, sizeof(int64_t) * uploaded, cudaMemcpyHostToDevice, stream),
            "upload a link batch's positives");
  GNND_CUDA(cudaEventRecord(staged_[way], stream), "mark the upload");
  const SamplingKey negatives = MakeSamplingKey(seed_, epoch, RandomPurpose::kNegatives);
  // The endpoints into their types' node lists (one list where both ends are one type), every other type's
  // hop 0 empty.
  const BatchView view = BatchView::At(out, sampler_->layout());
  const RelationSchema& r = host_->schema.relations[spec_.relation];
  if (disjoint_) {  // made on the host: the counts, then each endpoint type's nodes, then the subgraphs' times
    const int64_t types = static_cast<int64_t>(view.types.size());
    const int64_t* counts = uploaded_ + disjoint_at_;
    GNND_CUDA(cudaMemcpyAsync(num_hop0_, counts, sizeof(int64_t) * types, cudaMemcpyDeviceToDevice, stream),
              "place a link batch's counts");
    const int64_t* nodes = counts + types;
    for (const auto& [type, list] :
         {std::pair{r.src_type, &host_seeds_.src_nodes}, std::pair{r.dst_type, &host_seeds_.dst_nodes}}) {
      if (list->empty()) continue;
      GNND_CUDA(cudaMemcpyAsync(view.types[type].node_ids, nodes, sizeof(int64_t) * list->size(),
                                cudaMemcpyDeviceToDevice, stream),
                "place a link batch's endpoints");
      nodes += list->size();
    }
    return sampler_->SampleLinkGraph(epoch, batch_index, num_hop0_, excluded, out, stream, temporal_ ? nodes : nullptr);
  }
  GNND_CUDA(cudaMemsetAsync(num_hop0_, 0, sizeof(int64_t) * view.types.size(), stream), "reset a link batch's counts");
  CudaLinkSeeds::Hop0 hop0{view.types[r.src_type].node_ids, num_hop0_ + r.src_type};
  if (!relation_.same_type) hop0.dst = view.types[r.dst_type].node_ids, hop0.num_dst = num_hop0_ + r.dst_type;
  GNND_RETURN_IF_ERROR(seeds_->Make(negatives, batch_index, uploaded_, uploaded_ + p, p, csc_, relation_.num_src,
                                    relation_.num_dst, hop0, stream, fixed));
  return sampler_->SampleLinkGraph(epoch, batch_index, num_hop0_, excluded, out, stream);
}

absl::Status CudaLinkStage::StageDisjointSeeds(uint64_t epoch, uint64_t batch_index, const int64_t* src,
                                               const int64_t* dst, std::span<const int64_t> input_id, int64_t* staging,
                                               int64_t at, int64_t* end) {
  const size_t p = input_id.size();
  PositiveTimes(positives_, input_id, times_);
  GNND_RETURN_IF_ERROR(MakeLinkSeeds(MakeSamplingKey(seed_, epoch, RandomPurpose::kNegatives), batch_index, {src, p},
                                     {dst, p}, spec_.negatives, relation_, host_seeds_, fixed_,
                                     {.disjoint = true, .times = times_}));
  const RelationSchema& r = host_->schema.relations[spec_.relation];
  int64_t* counts = staging + at;
  std::fill_n(counts, host_->schema.node_types.size(), 0);
  counts[r.src_type] = static_cast<int64_t>(host_seeds_.src_nodes.size());
  if (!relation_.same_type) counts[r.dst_type] = static_cast<int64_t>(host_seeds_.dst_nodes.size());
  int64_t* out = counts + host_->schema.node_types.size();
  for (const std::vector<int64_t>* values :
       {&host_seeds_.src_nodes, &host_seeds_.dst_nodes, &host_seeds_.subgraph_time, &host_seeds_.pair_time}) {
    out = std::copy(values->begin(), values->end(), out);
  }
  *end = out - staging;
  return absl::OkStatus();
}

absl::Status CudaLinkStage::CheckStrict(uint64_t batch_index, cudaStream_t stream) const {
  if (disjoint_) return absl::OkStatus();  // drawn on the host: Sample returned any failure
  return seeds_->CheckStrict(batch_index, uploaded_, stream);
}

absl::Status CudaLinkStage::StrictError(uint64_t batch_index, uint64_t failed,
                                        std::span<const int64_t> input_id) const {
  if (failed == UINT64_MAX) return absl::OkStatus();
  int64_t source = -1;
  if (spec_.negatives.mode == NegativeMode::kTriplet && failed / spec_.negatives.amount < input_id.size()) {
    source = positives_.edges[input_id[failed / spec_.negatives.amount]];
  }
  return seeds_->StrictError(batch_index, failed, source);
}

absl::Status CudaLinkStage::WriteDisjointPairs(int64_t p, std::byte* slot, uint64_t* strict_failed,
                                               cudaStream_t stream) {
  const PairArrays& layout = *sampler_->layout().pairs;
  const LinkSeeds& s = host_seeds_;
  // The pairs index hop 0 in turn (PyG's arange): made on the device from their first index alone.
  const int32_t dst_first = relation_.same_type ? static_cast<int32_t>(s.src_ids.size()) : 0;
  if (TripletLayout(spec_.negatives.mode)) {
    for (const auto& [offset, count, first] :
         {std::tuple{layout.src_index, p, 0}, std::tuple{layout.dst_pos_index, p, dst_first}}) {
      GNND_LAUNCH(RangeKernel, Blocks(count), kThreads, 0, stream, reinterpret_cast<int32_t*>(slot + offset), count,
                  first);
    }
    const int32_t amount = spec_.negatives.amount;
    GNND_LAUNCH(ByRoundKernel, Blocks(p * amount), kThreads, 0, stream,
                reinterpret_cast<int32_t*>(slot + layout.dst_neg_index), p, amount,
                dst_first + static_cast<int32_t>(p));
  } else {
    const auto pairs = static_cast<int64_t>(s.pair_src.size());
    float* labels = layout.labeled ? nullptr : reinterpret_cast<float*>(slot + layout.edge_label);
    GNND_LAUNCH(DisjointPairsKernel, Blocks(pairs), kThreads, 0, stream, pairs, p, dst_first,
                reinterpret_cast<int32_t*>(slot + layout.edge_label_index), labels);
    if (layout.labeled) {
      GNND_CUDA(cudaMemcpyAsync(slot + layout.edge_label, uploaded_ + upload_tail_ + p, sizeof(int64_t) * pairs,
                                cudaMemcpyDeviceToDevice, stream),
                "write a link batch's labels");
    }
  }
  if (layout.edge_label_time != SIZE_MAX) {  // staged last
    const int64_t* pair_time = uploaded_ + disjoint_at_ + static_cast<int64_t>(host_->schema.node_types.size()) +
                               static_cast<int64_t>(s.src_nodes.size() + s.dst_nodes.size() + s.subgraph_time.size());
    GNND_CUDA(cudaMemcpyAsync(slot + layout.edge_label_time, pair_time, sizeof(int64_t) * s.pair_time.size(),
                              cudaMemcpyDeviceToDevice, stream),
              "write a link batch's pair times");
  }
  GNND_CUDA(cudaMemcpyAsync(strict_failed, no_failure_, sizeof(uint64_t), cudaMemcpyDeviceToHost, stream),
            "read a link batch's strict flag");
  return absl::OkStatus();
}

absl::Status CudaLinkStage::SampleInto(uint64_t epoch, uint64_t batch_index, std::span<const int64_t> input_id,
                                       std::byte* slot, uint64_t* strict_failed, int way, cudaStream_t stream) {
  const auto p = static_cast<int64_t>(input_id.size());
  const PairArrays& layout = *sampler_->layout().pairs;
  GNND_RETURN_IF_ERROR(Sample(epoch, batch_index, input_id, slot, stream, layout.labeled, way));
  // Sample uploaded, after the positives and exclusions, the input ids and (labeled) the labels.
  const int64_t* device_input_id = uploaded_ + upload_tail_;
  GNND_CUDA(
      cudaMemcpyAsync(slot + layout.input_id, device_input_id, sizeof(int64_t) * p, cudaMemcpyDeviceToDevice, stream),
      "write a link batch's input ids");
  if (disjoint_) return WriteDisjointPairs(p, slot, strict_failed, stream);
  if (TripletLayout(spec_.negatives.mode)) {
    const int64_t negatives = p * spec_.negatives.amount;
    for (const auto& [from, offset, count] : {std::tuple{seeds_->src_index(), layout.src_index, p},
                                              std::tuple{seeds_->dst_pos_index(), layout.dst_pos_index, p},
                                              std::tuple{seeds_->dst_neg_index(p), layout.dst_neg_index, negatives}}) {
      GNND_CUDA(cudaMemcpyAsync(slot + offset, from, sizeof(int32_t) * count, cudaMemcpyDeviceToDevice, stream),
                "write a link batch's triplets");
    }
  } else {
    const int64_t pairs = layout.pairs(p);
    float* labels = layout.labeled ? nullptr : reinterpret_cast<float*>(slot + layout.edge_label);
    GNND_LAUNCH(PairsKernel, Blocks(pairs), kThreads, 0, stream, seeds_->pair_src(), seeds_->pair_dst(), pairs, p,
                reinterpret_cast<int32_t*>(slot + layout.edge_label_index), labels);
    if (layout.labeled) {
      GNND_CUDA(cudaMemcpyAsync(slot + layout.edge_label, device_input_id + p, sizeof(int64_t) * pairs,
                                cudaMemcpyDeviceToDevice, stream),
                "write a link batch's labels");
    }
  }
  GNND_CUDA(cudaMemcpyAsync(strict_failed, seeds_->strict_failed(), sizeof(uint64_t), cudaMemcpyDeviceToHost, stream),
            "read a link batch's strict flag");
  return absl::OkStatus();
}

}  // namespace gnnd::cuda
