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
#include "kernels/cuda/batch_maker.h"
#include "server/sessions/host_gather_part.h"
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

// Batches of every kind through the one CUDA batch maker. A link fill's strict flag is read when it is complete.
// With a host part (open.producer "host_gather") the maker samples and the host gathers the rows: a fill in two
// parts.
class MakerSlotSampler final : public SlotSampler {
 public:
  MakerSlotSampler(std::unique_ptr<cuda::CudaBatchMaker> maker, std::unique_ptr<HostGatherPart> host,
                   std::function<void()> wake)
      : maker_(std::move(maker)), host_(std::move(host)), wake_(std::move(wake)) {}
  size_t slot_bytes() const override { return maker_->layout().total_bytes; }
  absl::Status Sample(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds, const SeedBatch& device_seeds,
                      char* slot, cudaStream_t stream) override {
    return maker_->Sample(epoch, batch_index, seeds, device_seeds, reinterpret_cast<std::byte*>(slot), stream);
  }
  absl::Status Prepare(char* slot, cudaStream_t stream) override {
    return maker_->Prepare(reinterpret_cast<std::byte*>(slot), stream);
  }
  absl::StatusOr<bool> Outgrown(const char* slot) override {
    return maker_->Outgrown(reinterpret_cast<const std::byte*>(slot));
  }
  std::vector<std::pair<size_t, int>> HopArrays() const override { return PerHopArrays(maker_->layout()); }
  absl::Status Filled(int) override {
    GNND_ASSIGN_OR_RETURN(filled_, maker_->Filled());
    return absl::OkStatus();
  }
  void SetCounts(const int32_t* hops, v1::BatchReady& ready) const override {
    const BatchLayout& layout = maker_->layout();
    SetReadyCounts(PerHopView(layout, hops), layout, filled_.first, filled_.second, ready);
  }
  absl::Status StartEpoch(uint64_t, const EpochSeeds&, cudaStream_t) override {
    maker_->Forget();
    if (host_ != nullptr) host_->Wait();
    return absl::OkStatus();
  }
  // A node batch's fill is sampling kernels, replayed in a slice; a link batch's is launched on the whole GPU.
  bool runs_in_slice() const override { return !maker_->is_link(); }

  bool can_two_parts() const override { return host_ != nullptr; }
  void UseTwoParts(bool two) override {
    if (host_ != nullptr) maker_->SetRowsOnHost(two);
  }
  absl::Status CopyOut(int slot, const char* slot_memory, cudaStream_t stream) override {
    return host_->CopyGraphOut(slot, slot_memory, stream);
  }
  absl::Status StartHostPart(int slot) override {
    host_->Start(slot, wake_);
    return absl::OkStatus();
  }
  absl::StatusOr<bool> HostPartDone(int slot) override { return host_->Done(slot); }
  absl::Status Finish(int slot, char* slot_memory, cudaStream_t stream) override {
    return host_->Upload(slot, slot_memory, stream);
  }
  double HostPartSeconds(int slot) const override { return host_->seconds(slot); }

 private:
  std::unique_ptr<cuda::CudaBatchMaker> maker_;
  std::unique_ptr<HostGatherPart> host_;  // after maker_: its gathers end before the maker goes
  std::function<void()> wake_;
  std::pair<int64_t, int64_t> filled_;  // the last fill complete: its (pairs, positives)
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
  for (cudaEvent_t e : sampled_) cudaEventDestroy(e);
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
  s->session_id_ = plan.session_id;
  GNND_CUDA(cudaSetDevice(s->device_), "select the session's GPU");
  // GNND_CUDA_GRAPHS=0 launches every kernel instead of replaying graphs (for comparisons).
  const char* graphs = std::getenv("GNND_CUDA_GRAPHS");
  const bool use_graphs = graphs == nullptr || std::string(graphs) != "0";
  if (plan.dataset->features_staged() || plan.producer == BatchProducer::kHost) {
    // Made on the host: features on storage (whatever the producer asked; the hot tier's rows gathered here), or
    // asked for ("host": every row from host memory, no SM time).
    if (!plan.dataset->features_staged()) held = nullptr;
    GNND_ASSIGN_OR_RETURN(s->sampler_,
                          StagedSlotSampler::Create(plan, graph, std::move(held), std::move(host_workers)));
    if (plan.producer == BatchProducer::kAuto) {
      s->choice_ = ProducerChoice{BatchProducer::kHost, "host: the features are on storage (the host reads them)"};
    }
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
    if (plan.producer == BatchProducer::kAuto) {
      // GNND_AUTO_GATHER_SHARE=0 finds the host the bound at the end of the first window (tests of the move).
      const char* share = std::getenv("GNND_AUTO_GATHER_SHARE");
      s->auto_ = std::make_unique<AutoProducer>(host_workers->threads(), /*copies_fit=*/!plan.auto_over_memory,
                                                share != nullptr ? std::atof(share) : AutoProducer::kMaxGatherShare);
      s->choice_ = ProducerChoice{s->auto_->current(), s->auto_->why()};
    }
    // auto starts on host_gather where it can (its trial then moves between host_gather and sm), else on sm for good.
    const BatchProducer first = s->auto_ != nullptr ? s->auto_->current() : plan.producer;
    std::unique_ptr<HostGatherPart> host;
    if (first == BatchProducer::kHostGather) {
      options.rows_on_host = true;
      s->two_part_fills_ = true;
      GNND_ASSIGN_OR_RETURN(host, HostGatherPart::Create(plan, graph, std::move(held), std::move(host_workers)));
    }
    // Fills in flight: at most one per slot.
    GNND_ASSIGN_OR_RETURN(auto maker, cuda::CudaBatchMaker::Create(plan.recipe(), graph, options, plan.num_slots));
    s->sampler_ = std::make_unique<MakerSlotSampler>(std::move(maker), std::move(host), plan.wake);
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
    if (s->sampler_->can_two_parts()) {
      cudaEvent_t e;
      GNND_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "create a sampled event");
      s->sampled_.push_back(e);
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
  if (auto_ != nullptr) {
    auto_->Restart();
    auto_delivered_.reset();
  }
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
    GNND_RETURN_IF_ERROR(EnqueueFill(next_step_, slot, stream_, /*wake=*/true, two_part_fills_));
    filling_.push_back(
        {next_step_++, slot, two_part_fills_ ? Filling::Part::kGpu : Filling::Part::kFinishing, two_part_fills_});
  }
  if (!sampled_.empty()) GNND_RETURN_IF_ERROR(AdvanceTwoPartFills());
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
  if (oldest.part != Filling::Part::kFinishing) return PollResult::kPending;  // its host part will wake the session
  const cudaError_t done = cudaEventQuery(ready_[oldest.slot]);
  if (done == cudaErrorNotReady) return PollResult::kPending;  // OnFilled will wake the session
  GNND_CUDA(done, "fill a batch");
  if (!oldest.two_part) GNND_RETURN_IF_ERROR(FillAgainIfOutgrown(oldest, ready_[oldest.slot]));
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
  if (auto_ != nullptr) JudgeProducer(oldest);
  if (slices_ != nullptr) GNND_RETURN_IF_ERROR(FollowSlice(times.produce));
  return PollResult::kBatch;
}

void CudaSlots::JudgeProducer(const Filling& fill) {
  const auto now = std::chrono::steady_clock::now();
  const double interval = auto_delivered_ ? std::chrono::duration<double>(now - *auto_delivered_).count() : 0;
  auto_delivered_ = now;
  const double gather = fill.two_part ? sampler_->HostPartSeconds(fill.slot) : 0;
  if (auto_->Delivered(interval, fill.two_part, gather)) {
    two_part_fills_ = auto_->current() == BatchProducer::kHostGather;  // the fills in flight finish as they began
    LogInfo("cuda:%d: session %d's producer auto makes its batches with %s from now: %s", device_, session_id_,
            BatchProducerName(auto_->current()), auto_->why());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (choice_->why != auto_->why()) choice_ = ProducerChoice{auto_->current(), auto_->why()};
}

std::optional<ProducerChoice> CudaSlots::producer_choice() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return choice_;
}

absl::Status CudaSlots::FillAgainIfOutgrown(const Filling& fill, cudaEvent_t done) {
  const char* slot = static_cast<char*>(slots_) + fill.slot * sampler_->slot_bytes();
  for (;;) {  // a batch that outgrew a fitted sort or a LABOR bound: filled again before it is delivered
    GNND_ASSIGN_OR_RETURN(const bool again, sampler_->Outgrown(slot));
    if (!again) return absl::OkStatus();
    LogInfo("cuda:%d: step %d of epoch %d filled again: it outgrew a fitted sort or a LABOR bound", device_, fill.step,
            epoch_);
    GNND_RETURN_IF_ERROR(EnqueueFill(fill.step, fill.slot, stream_, /*wake=*/false, fill.two_part));
    GNND_CUDA(cudaEventSynchronize(done), "fill a batch again");
  }
}

absl::Status CudaSlots::AdvanceTwoPartFills() {
  for (Filling& fill : filling_) {
    if (fill.part == Filling::Part::kGpu) {
      const cudaError_t done = cudaEventQuery(sampled_[fill.slot]);
      if (done == cudaErrorNotReady) break;  // nor are the later ones (one stream, in order)
      GNND_CUDA(done, "sample a batch");
      GNND_RETURN_IF_ERROR(FillAgainIfOutgrown(fill, sampled_[fill.slot]));
      GNND_RETURN_IF_ERROR(sampler_->StartHostPart(fill.slot));
      fill.part = Filling::Part::kHost;
    }
    if (fill.part == Filling::Part::kHost) {
      GNND_ASSIGN_OR_RETURN(const bool gathered, sampler_->HostPartDone(fill.slot));
      if (!gathered) continue;  // it wakes the session when it is
      char* base = static_cast<char*>(slots_) + fill.slot * sampler_->slot_bytes();
      GNND_RETURN_IF_ERROR(sampler_->Finish(fill.slot, base, stream_));
      GNND_CUDA(cudaEventRecord(ready_[fill.slot], stream_), "record the ready event");
      if (wake_) GNND_CUDA(cudaLaunchHostFunc(stream_, &CudaSlots::OnFilled, this), "enqueue the wake-up");
      fill.part = Filling::Part::kFinishing;
    }
  }
  return absl::OkStatus();
}

absl::Status CudaSlots::EnqueueFill(int64_t step, int slot, cudaStream_t stream, bool wake, bool two_part) {
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  const SeedBatch batch = seeds_host_.at(step);
  const int64_t offset = batch.ids.data() - seeds_host_.all().data();
  char* base = static_cast<char*>(slots_) + slot * sampler_->slot_bytes();
  GNND_CUDA(cudaEventRecord(fill_start_[slot], stream), "time the fill");
  sampler_->UseTwoParts(two_part);
  const std::span<const int64_t> device_times = batch.times.empty()
                                                    ? std::span<const int64_t>()
                                                    : std::span<const int64_t>(seed_times_ + offset, batch.ids.size());
  GNND_RETURN_IF_ERROR(sampler_->Sample(epoch_, seeds_host_.batch_index(step), batch,
                                        {{seeds_ + offset, batch.ids.size()}, device_times}, base, stream));
  GNND_CUDA(cudaEventRecord(fill_end_[slot], stream), "time the fill");
  if (two_part) GNND_RETURN_IF_ERROR(sampler_->CopyOut(slot, base, stream));
  int32_t* counts = counts_ + slot * counts_per_slot_;
  for (const auto& [at, entries] : hop_arrays_) {
    GNND_CUDA(cudaMemcpyAsync(counts, base + at, sizeof(int32_t) * entries, cudaMemcpyDeviceToHost, stream),
              "read the batch's counts");
    counts += entries;
  }
  // A two-part fill is ready once its host part is uploaded (AdvanceTwoPartFills).
  GNND_CUDA(cudaEventRecord(two_part ? sampled_[slot] : ready_[slot], stream), "record the ready event");
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
