#include "server/sessions/cuda_slots.h"

#include <chrono>
#include <cstdlib>
#include <deque>
#include <string>

#include "common/base/cuda_check.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "common/batch/link_batch.h"
#include "common/wire/batch_proto.h"
#include "kernels/cuda/link_stage.h"
#include "server/sessions/staged_slot_sampler.h"

namespace gnnd {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// How often a released slot's `consumed` event is looked at while the trainer's GPU still works on the
// batch: from a few microseconds (it is usually done by the time its Release arrives) up to a millisecond.
constexpr std::chrono::microseconds kFirstConsumedPoll{20}, kMaxConsumedPoll{1000};

// A layout's per-hop arrays (each type's nodes, then each relation's edges), as HopArrays lists them.
std::vector<std::pair<size_t, int>> PerHopArrays(const BatchLayout& l) {
  std::vector<std::pair<size_t, int>> arrays;
  for (const auto& t : l.types) arrays.emplace_back(t.num_nodes_per_hop, l.num_hops + 1);
  for (const auto& r : l.relations) arrays.emplace_back(r.num_edges_per_hop, l.num_hops);
  return arrays;
}

// The host copies of those arrays (`hops`, in that order) as a view: all the counts read.
BatchView PerHopView(const BatchLayout& l, const int32_t* hops) {
  BatchView view;
  view.num_hops = l.num_hops;
  for (size_t t = 0; t < l.types.size(); ++t, hops += l.num_hops + 1) {
    view.types.push_back({nullptr, const_cast<int32_t*>(hops), nullptr, nullptr});
  }
  for (size_t r = 0; r < l.relations.size(); ++r, hops += l.num_hops) {
    view.relations.push_back({nullptr, nullptr, const_cast<int32_t*>(hops), nullptr, {}});
  }
  return view;
}

// Node batches of every dataset through the one CUDA sampler.
class NodeSlotSampler final : public SlotSampler {
 public:
  explicit NodeSlotSampler(std::unique_ptr<cuda::CudaSampler> sampler) : sampler_(std::move(sampler)) {}
  size_t slot_bytes() const override { return sampler_->layout().total_bytes; }
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch&, const SeedBatch& device_seeds, char* slot,
                      cudaStream_t stream) override {
    return sampler_->Sample(epoch, batch_index, device_seeds.ids, slot, stream, nullptr, device_seeds.times);
  }
  absl::Status Prepare(char* slot, cudaStream_t stream) override { return sampler_->Prepare(slot, stream); }
  absl::StatusOr<bool> Outgrown(const char* slot) override { return sampler_->Outgrown(slot); }
  std::vector<std::pair<size_t, int>> HopArrays() const override { return PerHopArrays(sampler_->layout()); }
  void SetCounts(const int32_t* hops, v1::BatchReady& ready) const override {
    SetReadyCounts(PerHopView(sampler_->layout(), hops), sampler_->layout(), 0, 0, ready);
  }

 private:
  std::unique_ptr<cuda::CudaSampler> sampler_;
};

// Link batches (kernels/cuda/link_stage.h before the one sampler): the graph arrays, then the pair arrays, in one slot.
// Each fill's strict flag is copied to pinned memory behind it and read when the fill is complete.
class LinkSlotSampler final : public SlotSampler {
 public:
  static absl::StatusOr<std::unique_ptr<LinkSlotSampler>> Create(const SessionPlan& plan,
                                                                 const cuda::DeviceGraph& graph) {
    auto s = std::unique_ptr<LinkSlotSampler>(new LinkSlotSampler());
    GNND_ASSIGN_OR_RETURN(s->graph_sampler_, cuda::CudaSampler::Create(graph, plan.sampling, plan.seed, plan.layout,
                                                                       {.use_graphs = false}));
    GNND_ASSIGN_OR_RETURN(s->sampler_, cuda::CudaLinkStage::Create(plan.dataset->graph, graph, *s->graph_sampler_,
                                                                   plan.link->seeds, plan.seed, plan.num_slots));
    s->flags_ = static_cast<size_t>(plan.num_slots);  // fills in flight: at most one per slot
    GNND_CUDA(cudaMallocHost(&s->strict_, sizeof(uint64_t) * s->flags_), "allocate the strict flags");
    return s;
  }
  ~LinkSlotSampler() override {
    if (strict_ != nullptr) cudaFreeHost(strict_);
  }
  size_t slot_bytes() const override { return sampler_->layout().total_bytes; }
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch& batch, const SeedBatch&, char* slot,
                      cudaStream_t stream) override {
    const std::span<const int64_t> seeds = batch.ids;
    const auto positives = static_cast<int64_t>(seeds.size());
    // Fills complete and are reported in order, at most one per slot in flight: way `flag` is free again.
    const size_t flag = next_flag_++ % flags_;
    GNND_RETURN_IF_ERROR(sampler_->SampleInto(epoch, batch_index, seeds, reinterpret_cast<std::byte*>(slot),
                                              strict_ + flag, static_cast<int>(flag), stream));
    filling_.push_back({batch_index, seeds, sampler_->layout().pairs->pairs(positives), positives, flag});
    return absl::OkStatus();
  }
  absl::Status Prepare(char*, cudaStream_t) override { return absl::OkStatus(); }
  std::vector<std::pair<size_t, int>> HopArrays() const override { return PerHopArrays(sampler_->layout()); }
  absl::Status Filled(int) override {
    if (filling_.empty()) return absl::InternalError("a link fill completed that was never enqueued");
    filled_ = filling_.front();
    filling_.pop_front();
    return sampler_->StrictError(filled_.batch_index, strict_[filled_.flag], filled_.input_id);
  }
  void SetCounts(const int32_t* hops, v1::BatchReady& ready) const override {
    const BatchLayout& layout = sampler_->layout();
    SetReadyCounts(PerHopView(layout, hops), layout, filled_.pairs, filled_.positives, ready);
  }
  absl::Status StartEpoch(uint64_t, const EpochSeeds&, cudaStream_t) override {
    filling_.clear();
    return absl::OkStatus();
  }
  bool runs_in_slice() const override { return false; }  // not captured as a graph: on the whole GPU

 private:
  struct Fill {
    uint64_t batch_index = 0;
    std::span<const int64_t> input_id;  // in the epoch's seeds, which outlive its fills
    int64_t pairs = 0, positives = 0;
    size_t flag = 0;
  };
  LinkSlotSampler() = default;
  std::unique_ptr<cuda::CudaSampler> graph_sampler_;  // the one sampler, drawing around each batch's pairs
  std::unique_ptr<cuda::CudaLinkStage> sampler_;      // declared after graph_sampler_: destroyed before it
  uint64_t* strict_ = nullptr;  // pinned: one flag (and staging way) per fill in flight, used round robin
  size_t flags_ = 1, next_flag_ = 0;
  std::deque<Fill> filling_;  // enqueued, in order (the polling thread's)
  Fill filled_;               // the last one complete: its counts
};

}  // namespace

CudaSlots::~CudaSlots() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  sampler_.reset();  // its graphs, captured on the slice's stream, go before the slice may
  if (slices_ != nullptr) slices_->Leave(this);
  for (cudaEvent_t e : ready_) cudaEventDestroy(e);
  for (cudaEvent_t e : consumed_) cudaEventDestroy(e);
  for (cudaEvent_t e : fill_start_) cudaEventDestroy(e);
  for (cudaEvent_t e : fill_end_) cudaEventDestroy(e);
  if (own_stream_ != nullptr) cudaStreamDestroy(own_stream_);
  if (slots_ != nullptr) cudaFree(slots_);
  if (seeds_ != nullptr) cudaFree(seeds_);
  if (counts_ != nullptr) cudaFreeHost(counts_);
}

absl::StatusOr<std::unique_ptr<CudaSlots>> CudaSlots::Create(const SessionPlan& plan, const cuda::DeviceGraph& graph,
                                                             std::shared_ptr<const std::vector<bool>> held,
                                                             std::unique_ptr<TaskRunner> host_workers) {
  auto s = std::unique_ptr<CudaSlots>(new CudaSlots());
  s->device_ = plan.device.cuda;
  GNND_CUDA(cudaSetDevice(s->device_), "select the session's GPU");
  // GNND_CUDA_GRAPHS=0 launches every kernel instead of replaying graphs (for comparisons).
  const char* graphs = std::getenv("GNND_CUDA_GRAPHS");
  const bool use_graphs = graphs == nullptr || std::string(graphs) != "0";
  if (plan.dataset->features_staged()) {
    GNND_ASSIGN_OR_RETURN(s->sampler_,
                          StagedSlotSampler::Create(plan, graph, std::move(held), std::move(host_workers)));
  } else if (plan.link) {
    GNND_ASSIGN_OR_RETURN(s->sampler_, LinkSlotSampler::Create(plan, graph));
  } else {
    // GNND_FIT_SORTS=0 sorts each hop's new nodes over its bound (comparisons); =tight fits the sorts from the
    // first batch on to exactly the keys seen, so that early batches outgrow them and are filled again (tests).
    const char* fit = std::getenv("GNND_FIT_SORTS");
    cuda::CudaSamplerOptions options{.use_graphs = use_graphs, .fit_sorts = fit == nullptr || std::string(fit) != "0"};
    if (fit != nullptr && std::string(fit) == "tight") {
      options.fit_sorts_after = 0;
      options.fit_sorts_margin = 1;
      options.fit_sorts_slack = 0;
    }
    GNND_ASSIGN_OR_RETURN(auto sampler,
                          cuda::CudaSampler::Create(graph, plan.sampling, plan.seed, plan.layout, options));
    s->sampler_ = std::make_unique<NodeSlotSampler>(std::move(sampler));
  }
  s->hop_arrays_ = s->sampler_->HopArrays();
  for (const auto& [offset, entries] : s->hop_arrays_) s->counts_per_slot_ += entries;
  const size_t slot_bytes = s->sampler_->slot_bytes();
  GNND_CUDA(cudaMalloc(&s->slots_, slot_bytes * plan.num_slots), "allocate the session's slots on the GPU");
  s->max_epoch_seeds_ = std::max<int64_t>(plan.max_epoch_seeds, 1);
  // The epoch's seeds, then a temporal node session's given seed times (a link session's pairs carry theirs,
  // uploaded by its link stage).
  const bool seed_times = plan.sampling.time.seed_times_given && !plan.sampling.link();
  const int64_t seed_entries = (seed_times ? 2 : 1) * s->max_epoch_seeds_;
  GNND_CUDA(cudaMalloc(&s->seeds_, sizeof(int64_t) * seed_entries), "allocate the epoch's seeds");
  if (seed_times) s->seed_times_ = s->seeds_ + s->max_epoch_seeds_;
  GNND_CUDA(cudaMallocHost(&s->counts_, sizeof(int32_t) * std::max<size_t>(s->counts_per_slot_ * plan.num_slots, 1)),
            "allocate pinned counts");
  s->wake_ = plan.wake;
  s->wake_after_ = plan.wake_after;
  GNND_CUDA(cudaStreamCreateWithFlags(&s->own_stream_, cudaStreamNonBlocking), "create the producer stream");
  s->stream_ = s->own_stream_;
  for (int k = 0; k < plan.num_slots; ++k) {
    for (auto* events : {&s->ready_, &s->consumed_}) {
      cudaEvent_t e;
      GNND_CUDA(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming), "create an IPC event");
      events->push_back(e);
    }
    for (auto* events : {&s->fill_start_, &s->fill_end_}) {
      cudaEvent_t e;
      GNND_CUDA(cudaEventCreate(&e), "create a timing event");
      events->push_back(e);
    }
  }
  return s;
}

absl::Status CudaSlots::Describe(v1::SessionOpened& opened) {
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  cudaIpcMemHandle_t memory;
  GNND_CUDA(cudaIpcGetMemHandle(&memory, slots_), "export the slots (cudaIpcGetMemHandle)");
  opened.set_slots_ipc_handle(std::string(reinterpret_cast<const char*>(&memory), sizeof(memory)));
  for (size_t k = 0; k < ready_.size(); ++k) {
    cudaIpcEventHandle_t ready, consumed;
    GNND_CUDA(cudaIpcGetEventHandle(&ready, ready_[k]), "export a ready event");
    GNND_CUDA(cudaIpcGetEventHandle(&consumed, consumed_[k]), "export a consumed event");
    opened.add_ready_event_handles(std::string(reinterpret_cast<const char*>(&ready), sizeof(ready)));
    opened.add_consumed_event_handles(std::string(reinterpret_cast<const char*>(&consumed), sizeof(consumed)));
  }
  return absl::OkStatus();
}

absl::Status CudaSlots::UploadSeeds(const EpochSeeds& seeds, cudaStream_t stream) {
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  const std::span<const int64_t> ids = seeds.all();
  if (static_cast<int64_t>(ids.size()) > max_epoch_seeds_) return absl::InternalError("epoch seeds exceed the buffer");
  // From pageable memory the copy returns once `ids` is staged (no wait for the stream: this runs in a
  // session's step), so `ids` may go away after it.
  GNND_CUDA(cudaMemcpyAsync(seeds_, ids.data(), ids.size_bytes(), cudaMemcpyHostToDevice, stream), "upload seeds");
  if (seed_times_ != nullptr) {
    const std::span<const int64_t> times = seeds.all_times();
    if (times.size() != ids.size()) return absl::InternalError("a temporal session's seeds came without their times");
    GNND_CUDA(cudaMemcpyAsync(seed_times_, times.data(), times.size_bytes(), cudaMemcpyHostToDevice, stream),
              "upload seed times");
  }
  return absl::OkStatus();
}

absl::Status CudaSlots::StartEpoch(uint64_t epoch, const EpochSeeds& seeds) {
  epoch_ = epoch;
  seeds_host_ = seeds;
  next_step_ = seeds.first_step();
  governor_.Restart();
  filling_.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_slots_.clear();
    for (int k = static_cast<int>(ready_.size()) - 1; k >= 0; --k) free_slots_.push_back(k);
  }
  GNND_RETURN_IF_ERROR(sampler_->StartEpoch(epoch, seeds, stream_));
  return UploadSeeds(seeds_host_, stream_);
}

absl::StatusOr<PollResult> CudaSlots::Poll(v1::BatchReady& ready, BatchTimes& times) {
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  bool trainer_busy = false;  // a released slot whose `consumed` is not complete yet
  for (;;) {                  // enqueue a fill per free slot that the trainer is done with
    int slot = -1;
    if (next_step_ < seeds_host_.num_steps()) {  // made elsewhere first (features on storage): is it?
      GNND_ASSIGN_OR_RETURN(const bool ready_to_fill, sampler_->Ready(next_step_));
      if (!ready_to_fill) break;  // the host stage wakes the session when it is
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return PollResult::kEpochDone;
      if (next_step_ >= seeds_host_.num_steps()) break;
      for (size_t i = free_slots_.size(); i-- > 0;) {
        const cudaError_t consumed = cudaEventQuery(consumed_[free_slots_[i]]);
        if (consumed == cudaErrorNotReady) {
          trainer_busy = true;
          continue;
        }
        GNND_CUDA(consumed, "check the trainer's consumed event");
        slot = free_slots_[i];
        free_slots_.erase(free_slots_.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      if (slot < 0) break;
      if (starved_since_) times_.wait_seconds += SecondsSince(*starved_since_);
    }
    starved_since_.reset();
    if (!busy_since_) busy_since_ = std::chrono::steady_clock::now();
    GNND_RETURN_IF_ERROR(EnqueueFill(next_step_, slot, stream_, /*wake=*/true));
    filling_.push_back({next_step_++, slot});
  }
  if (trainer_busy && filling_.empty()) {  // no fill will wake the session, nor the trainer: look again soon
    consumed_poll_ = std::min(std::max(consumed_poll_ * 2, kFirstConsumedPoll), kMaxConsumedPoll);
    if (wake_after_) wake_after_(consumed_poll_);
  } else {
    consumed_poll_ = std::chrono::microseconds{0};
  }
  if (filling_.empty()) {
    if (next_step_ >= seeds_host_.num_steps()) return PollResult::kEpochDone;
    if (!starved_since_) starved_since_ = std::chrono::steady_clock::now();  // every slot with the trainer
    return PollResult::kPending;
  }
  const Filling oldest = filling_.front();
  const cudaError_t done = cudaEventQuery(ready_[oldest.slot]);
  if (done == cudaErrorNotReady) return PollResult::kPending;  // OnFilled will wake the session
  GNND_CUDA(done, "fill a batch");
  char* const slot = static_cast<char*>(slots_) + oldest.slot * sampler_->slot_bytes();
  for (;;) {  // a batch that outgrew a fitted sort or a LABOR bound: filled again before it is delivered
    GNND_ASSIGN_OR_RETURN(const bool again, sampler_->Outgrown(slot));
    if (!again) break;
    LogInfo("cuda:%d: step %d of epoch %d filled again: it outgrew a fitted sort or a LABOR bound", device_,
            oldest.step, epoch_);
    GNND_RETURN_IF_ERROR(EnqueueFill(oldest.step, oldest.slot, stream_, /*wake=*/false));
    GNND_CUDA(cudaEventSynchronize(ready_[oldest.slot]), "fill a batch again");
  }
  filling_.pop_front();
  GNND_RETURN_IF_ERROR(sampler_->Filled(oldest.slot));
  sampler_->SetCounts(counts_ + oldest.slot * counts_per_slot_, ready);
  ready.set_slot(oldest.slot);
  ready.set_step(oldest.step);
  float milliseconds = 0;
  if (cudaEventElapsedTime(&milliseconds, fill_start_[oldest.slot], fill_end_[oldest.slot]) == cudaSuccess) {
    times.produce = milliseconds / 1e3;
  } else {
    (void)cudaGetLastError();  // an unmeasured batch is no error; leave none behind for the next launch
  }
  if (filling_.empty()) {
    std::lock_guard<std::mutex> lock(mutex_);
    times_.sample_seconds += SecondsSince(*busy_since_);
    busy_since_.reset();
  }
  if (slices_ != nullptr) GNND_RETURN_IF_ERROR(FollowSlice(times.produce));
  return PollResult::kBatch;
}

absl::Status CudaSlots::EnqueueFill(int64_t step, int slot, cudaStream_t stream, bool wake) {
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  const SeedBatch batch = seeds_host_.at(step);
  const int64_t offset = batch.ids.data() - seeds_host_.all().data();
  char* base = static_cast<char*>(slots_) + slot * sampler_->slot_bytes();
  GNND_CUDA(cudaEventRecord(fill_start_[slot], stream), "time the fill");
  const std::span<const int64_t> device_times = batch.times.empty()
                                                    ? std::span<const int64_t>()
                                                    : std::span<const int64_t>(seed_times_ + offset, batch.ids.size());
  GNND_RETURN_IF_ERROR(sampler_->Sample(epoch_, seeds_host_.batch_index(step), batch,
                                        {{seeds_ + offset, batch.ids.size()}, device_times}, base, stream));
  GNND_CUDA(cudaEventRecord(fill_end_[slot], stream), "time the fill");
  int32_t* counts = counts_ + slot * counts_per_slot_;
  for (const auto& [at, entries] : hop_arrays_) {
    GNND_CUDA(cudaMemcpyAsync(counts, base + at, sizeof(int32_t) * entries, cudaMemcpyDeviceToHost, stream),
              "read the batch's counts");
    counts += entries;
  }
  GNND_CUDA(cudaEventRecord(ready_[slot], stream), "record the ready event");
  if (wake && wake_) GNND_CUDA(cudaLaunchHostFunc(stream, &CudaSlots::OnFilled, this), "enqueue the wake-up");
  return absl::OkStatus();
}

void CUDART_CB CudaSlots::OnFilled(void* self) {
  // A host callback may not call CUDA; the session only posts its next step to its pool.
  static_cast<CudaSlots*>(self)->wake_();
}

void CudaSlots::Release(int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_slots_.push_back(slot);
}

void CudaSlots::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopped_ = true;
  sampler_->Stop();
}

ProducerTimes CudaSlots::times() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return times_;
}

bool CudaSlots::runs_in_slice() const { return sampler_->runs_in_slice(); }

void CudaSlots::UseStream(cudaStream_t stream) {
  cudaStreamSynchronize(stream_);  // fills in flight finish first: the next use the same scratch
  stream_ = stream;
}

void CudaSlots::UseSlices(std::shared_ptr<ProducerSlices> slices) {
  slices_ = std::move(slices);
  const ProducerSlices::Slice slice = slices_->Join(this);
  slice_level_ = slice.level;
  UseStream(slice.stream != nullptr ? slice.stream : own_stream_);
  last_delivered_ = std::chrono::steady_clock::now();
}

absl::Status CudaSlots::FollowSlice(double fill) {
  double waited = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waited = times_.wait_seconds;
  }
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - last_delivered_).count();
  last_delivered_ = now;
  const double idle = waited - waited_at_last_delivered_;
  waited_at_last_delivered_ = waited;
  const SliceGovernor::Move move = governor_.Delivered(seconds, idle, fill);
  const ProducerSlices::Slice slice = slices_->Follow(this, slice_level_, move);
  if (slice.level == slice_level_) return absl::OkStatus();
  governor_.Moved(/*judge=*/move == SliceGovernor::Move::kGrow && slice.level > slice_level_);
  slice_level_ = slice.level;
  UseStream(slice.stream != nullptr ? slice.stream : own_stream_);
  return PrepareGraphs();  // here, not in the next fill's time on the GPU
}

absl::Status CudaSlots::PrepareGraphs() {
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  for (size_t slot = 0; slot < ready_.size(); ++slot) {
    GNND_RETURN_IF_ERROR(sampler_->Prepare(static_cast<char*>(slots_) + slot * sampler_->slot_bytes(), stream_));
  }
  return absl::OkStatus();
}

}  // namespace gnnd
