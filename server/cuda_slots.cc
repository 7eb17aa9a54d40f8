#include "server/cuda_slots.h"

#include <chrono>
#include <cstdlib>
#include <string>

#include "common/base/cuda_check.h"
#include "common/base/status.h"
#include "common/batch/batch_proto.h"

namespace gnnd {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

constexpr int kCountsPerSlot = 2 * kMaxHops + 1;  // nodes per hop (hops + 1), edges per hop
// How often a released slot's `consumed` event is looked at while the trainer's GPU still works on the
// batch: from a few microseconds (it is usually done by the time its Release arrives) up to a millisecond.
constexpr std::chrono::microseconds kFirstConsumedPoll{20}, kMaxConsumedPoll{1000};

}  // namespace

CudaSlots::~CudaSlots() {
  cudaSetDevice(device_);
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  for (cudaEvent_t e : ready_) cudaEventDestroy(e);
  for (cudaEvent_t e : consumed_) cudaEventDestroy(e);
  for (cudaEvent_t e : fill_start_) cudaEventDestroy(e);
  for (cudaEvent_t e : fill_end_) cudaEventDestroy(e);
  if (own_stream_ != nullptr) cudaStreamDestroy(own_stream_);
  if (slots_ != nullptr) cudaFree(slots_);
  if (seeds_ != nullptr) cudaFree(seeds_);
  if (counts_ != nullptr) cudaFreeHost(counts_);
}

absl::StatusOr<std::unique_ptr<CudaSlots>> CudaSlots::Create(const SessionPlan& plan, const cuda::DeviceGraph& graph) {
  auto s = std::unique_ptr<CudaSlots>(new CudaSlots());
  s->device_ = plan.device.cuda;
  GNND_CUDA(cudaSetDevice(s->device_), "select the session's GPU");
  GNND_ASSIGN_OR_RETURN(s->sampler_, cuda::CudaSampler::Create(graph, plan.sampling, plan.seed, plan.layout.capacity));
  // GNND_CUDA_GRAPHS=0 launches every kernel instead of replaying graphs (for comparisons).
  if (const char* graphs = std::getenv("GNND_CUDA_GRAPHS"); graphs != nullptr && std::string(graphs) == "0") {
    s->sampler_->set_use_graphs(false);
  }
  const size_t slot_bytes = s->sampler_->layout().total_bytes;
  GNND_CUDA(cudaMalloc(&s->slots_, slot_bytes * plan.num_slots), "allocate the session's slots on the GPU");
  s->max_epoch_seeds_ = std::max<int64_t>(plan.max_epoch_seeds, 1);
  GNND_CUDA(cudaMalloc(&s->seeds_, sizeof(int64_t) * s->max_epoch_seeds_), "allocate the epoch's seeds");
  GNND_CUDA(cudaMallocHost(&s->counts_, sizeof(int32_t) * kCountsPerSlot * plan.num_slots), "allocate pinned counts");
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
  return absl::OkStatus();
}

absl::Status CudaSlots::StartEpoch(uint64_t epoch, const EpochSeeds& seeds) {
  epoch_ = epoch;
  seeds_host_ = seeds;
  next_step_ = 0;
  filling_.clear();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_slots_.clear();
    for (int k = static_cast<int>(ready_.size()) - 1; k >= 0; --k) free_slots_.push_back(k);
  }
  return UploadSeeds(seeds_host_, stream_);
}

absl::StatusOr<PollResult> CudaSlots::Poll(v1::BatchReady& ready, BatchTimes& times) {
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  bool trainer_busy = false;  // a released slot whose `consumed` is not complete yet
  for (;;) {                  // enqueue a fill per free slot that the trainer is done with
    int slot = -1;
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
  filling_.pop_front();
  const int hops = sampler_->layout().num_hops;
  const int32_t* counts = counts_ + oldest.slot * kCountsPerSlot;
  SetBatchCounts({counts, static_cast<size_t>(hops) + 1}, {counts + hops + 1, static_cast<size_t>(hops)}, ready);
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
  return PollResult::kBatch;
}

absl::Status CudaSlots::EnqueueFill(int64_t step, int slot, cudaStream_t stream, bool wake) {
  const BatchLayout& layout = sampler_->layout();
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  const std::span<const int64_t> batch = seeds_host_.batch(step);
  const int64_t offset = batch.data() - seeds_host_.all().data();
  char* base = static_cast<char*>(slots_) + slot * layout.total_bytes;
  GNND_CUDA(cudaEventRecord(fill_start_[slot], stream), "time the fill");
  GNND_RETURN_IF_ERROR(sampler_->Sample(epoch_, seeds_host_.batch_index(step), {seeds_ + offset, batch.size()},
                                        BatchView::At(base, layout), stream));
  GNND_CUDA(cudaEventRecord(fill_end_[slot], stream), "time the fill");
  const int hops = layout.num_hops;
  int32_t* counts = counts_ + slot * kCountsPerSlot;
  GNND_CUDA(cudaMemcpyAsync(counts, base + layout.num_nodes_per_hop, sizeof(int32_t) * (hops + 1),
                            cudaMemcpyDeviceToHost, stream),
            "read the batch's counts");
  GNND_CUDA(cudaMemcpyAsync(counts + hops + 1, base + layout.num_edges_per_hop, sizeof(int32_t) * hops,
                            cudaMemcpyDeviceToHost, stream),
            "read the batch's counts");
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
}

ProducerTimes CudaSlots::times() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return times_;
}

void CudaSlots::UseStream(cudaStream_t stream) {
  cudaStreamSynchronize(stream_);
  stream_ = stream;
}

absl::Status CudaSlots::PrepareGraphs() {
  GNND_CUDA(cudaSetDevice(device_), "select the session's GPU");
  const BatchLayout& layout = sampler_->layout();
  for (size_t slot = 0; slot < ready_.size(); ++slot) {
    GNND_RETURN_IF_ERROR(
        sampler_->Prepare(BatchView::At(static_cast<char*>(slots_) + slot * layout.total_bytes, layout), stream_));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> CudaSlots::Rate(const EpochSeeds& seeds, cudaStream_t stream, int count) {
  if (stream == nullptr) stream = own_stream_;
  const EpochSeeds saved = seeds_host_;
  seeds_host_ = seeds;
  epoch_ = 0;
  absl::Status status = UploadSeeds(seeds_host_, stream);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; status.ok() && i < count; ++i) {
    status = EnqueueFill(i % std::max<int64_t>(seeds.num_steps(), 1), 0, stream, /*wake=*/false);
  }
  if (status.ok() && cudaStreamSynchronize(stream) != cudaSuccess) status = absl::InternalError("calibration failed");
  sampler_->DropGraphs();  // `stream` may be a candidate producer context that is about to go away
  seeds_host_ = saved;
  GNND_RETURN_IF_ERROR(status);
  return count / SecondsSince(start);
}

}  // namespace gnnd
