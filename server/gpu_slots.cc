#include "server/gpu_slots.h"

#include <cuda_runtime.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <vector>

#include "common/cuda_check.h"
#include "common/log.h"
#include "common/status.h"

namespace gnnd {

struct GpuSlots::State {
  int device = 0;
  std::unique_ptr<cuda::CudaSampler> sampler;
  void* slots = nullptr;
  int64_t* seeds = nullptr;
  int64_t max_epoch_seeds = 0;
  cudaStream_t stream = nullptr;  // the one Fill() uses
  cudaStream_t own_stream = nullptr;
  std::vector<cudaEvent_t> ready, consumed;
  int32_t* counts = nullptr;  // pinned: the per-hop counts of the slot just filled

  ~State() {
    if (stream != nullptr) cudaStreamSynchronize(stream);
    for (cudaEvent_t e : ready) cudaEventDestroy(e);
    for (cudaEvent_t e : consumed) cudaEventDestroy(e);
    if (own_stream != nullptr) cudaStreamDestroy(own_stream);
    if (slots != nullptr) cudaFree(slots);
    if (seeds != nullptr) cudaFree(seeds);
    if (counts != nullptr) cudaFreeHost(counts);
  }
};

GpuSlots::~GpuSlots() {
  if (state_) cudaSetDevice(state_->device);
}

absl::StatusOr<std::unique_ptr<GpuSlots>> GpuSlots::Create(int device, const cuda::DeviceGraph& graph,
                                                           const std::vector<int32_t>& fanouts, uint64_t seed,
                                                           const BatchCapacity& capacity, int num_slots,
                                                           int64_t max_epoch_seeds) {
  auto g = std::unique_ptr<GpuSlots>(new GpuSlots());
  g->state_ = std::make_unique<State>();
  State& s = *g->state_;
  s.device = device;
  GNND_CUDA(cudaSetDevice(device), "select the session's GPU");
  GNND_ASSIGN_OR_RETURN(s.sampler, cuda::CudaSampler::Create(graph, fanouts, seed, capacity));
  const size_t slot_bytes = s.sampler->layout().total_bytes;
  GNND_CUDA(cudaMalloc(&s.slots, slot_bytes * num_slots), "allocate the session's slots on the GPU");
  s.max_epoch_seeds = std::max<int64_t>(max_epoch_seeds, 1);
  GNND_CUDA(cudaMalloc(&s.seeds, sizeof(int64_t) * s.max_epoch_seeds), "allocate the epoch's seeds");
  GNND_CUDA(cudaMallocHost(&s.counts, sizeof(int32_t) * (2 * kMaxHops + 1)), "allocate pinned counts");
  GNND_CUDA(cudaStreamCreateWithFlags(&s.own_stream, cudaStreamNonBlocking), "create the producer stream");
  s.stream = s.own_stream;
  for (int k = 0; k < num_slots; ++k) {
    for (auto* events : {&s.ready, &s.consumed}) {
      cudaEvent_t e;
      GNND_CUDA(cudaEventCreateWithFlags(&e, cudaEventInterprocess | cudaEventDisableTiming), "create an IPC event");
      events->push_back(e);
    }
  }
  return g;
}

const BatchLayout& GpuSlots::layout() const { return state_->sampler->layout(); }

absl::Status GpuSlots::Describe(v1::SessionOpened& opened) const {
  const State& s = *state_;
  GNND_CUDA(cudaSetDevice(s.device), "select the session's GPU");
  cudaIpcMemHandle_t memory;
  GNND_CUDA(cudaIpcGetMemHandle(&memory, s.slots), "export the slots (cudaIpcGetMemHandle)");
  opened.set_slots_ipc_handle(std::string(reinterpret_cast<const char*>(&memory), sizeof(memory)));
  for (size_t k = 0; k < s.ready.size(); ++k) {
    cudaIpcEventHandle_t ready, consumed;
    GNND_CUDA(cudaIpcGetEventHandle(&ready, s.ready[k]), "export a ready event");
    GNND_CUDA(cudaIpcGetEventHandle(&consumed, s.consumed[k]), "export a consumed event");
    opened.add_ready_event_handles(std::string(reinterpret_cast<const char*>(&ready), sizeof(ready)));
    opened.add_consumed_event_handles(std::string(reinterpret_cast<const char*>(&consumed), sizeof(consumed)));
  }
  return absl::OkStatus();
}

absl::Status GpuSlots::StartEpoch(const EpochSeeds& seeds) {
  State& s = *state_;
  GNND_CUDA(cudaSetDevice(s.device), "select the session's GPU");
  const std::span<const int64_t> ids = seeds.all();
  if (static_cast<int64_t>(ids.size()) > s.max_epoch_seeds) return absl::InternalError("epoch seeds exceed the buffer");
  GNND_CUDA(cudaMemcpyAsync(s.seeds, ids.data(), ids.size_bytes(), cudaMemcpyHostToDevice, s.stream), "upload seeds");
  GNND_CUDA(cudaStreamSynchronize(s.stream), "upload seeds");  // once per epoch: `ids` may go away
  return absl::OkStatus();
}

absl::Status GpuSlots::Fill(uint64_t epoch, const EpochSeeds& seeds, int64_t step, int slot, v1::BatchReady& ready) {
  State& s = *state_;
  const BatchLayout& layout = s.sampler->layout();
  GNND_CUDA(cudaSetDevice(s.device), "select the session's GPU");
  // The trainer records `consumed` when it is done with the slot; overwrite only after that.
  GNND_CUDA(cudaStreamWaitEvent(s.stream, s.consumed[slot], 0), "wait for the trainer");
  const std::span<const int64_t> batch = seeds.batch(step);
  const int64_t offset = batch.data() - seeds.all().data();
  char* base = static_cast<char*>(s.slots) + slot * layout.total_bytes;
  GNND_RETURN_IF_ERROR(s.sampler->Sample(epoch, seeds.batch_index(step), {s.seeds + offset, batch.size()},
                                         BatchView::At(base, layout), s.stream));
  const int hops = layout.num_hops;
  GNND_CUDA(cudaMemcpyAsync(s.counts, base + layout.num_nodes_per_hop, sizeof(int32_t) * (hops + 1),
                            cudaMemcpyDeviceToHost, s.stream),
            "read the batch's counts");
  GNND_CUDA(cudaMemcpyAsync(s.counts + hops + 1, base + layout.num_edges_per_hop, sizeof(int32_t) * hops,
                            cudaMemcpyDeviceToHost, s.stream),
            "read the batch's counts");
  GNND_CUDA(cudaEventRecord(s.ready[slot], s.stream), "record the ready event");
  GNND_CUDA(cudaEventSynchronize(s.ready[slot]), "finish the batch");
  int64_t nodes = 0, edges = 0;
  for (int h = 0; h <= hops; ++h) {
    ready.add_num_nodes_per_hop(s.counts[h]);
    nodes += s.counts[h];
  }
  for (int h = 0; h < hops; ++h) {
    ready.add_num_edges_per_hop(s.counts[hops + 1 + h]);
    edges += s.counts[hops + 1 + h];
  }
  ready.set_num_nodes(nodes);
  ready.set_num_edges(edges);
  ready.set_num_seeds(s.counts[0]);
  return absl::OkStatus();
}

void GpuSlots::UseStream(cudaStream_t stream) {
  cudaStreamSynchronize(state_->stream);
  state_->stream = stream;
}

absl::StatusOr<double> GpuSlots::Rate(const EpochSeeds& seeds, cudaStream_t stream, int count) {
  State& s = *state_;
  const cudaStream_t saved = s.stream;
  s.stream = stream;
  absl::Status status = StartEpoch(seeds);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; status.ok() && i < count; ++i) {
    v1::BatchReady ready;
    status = Fill(0, seeds, i % std::max<int64_t>(seeds.num_steps(), 1), 0, ready);
  }
  s.stream = saved;
  GNND_RETURN_IF_ERROR(status);
  return count / std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

GpuProducers::~GpuProducers() = default;

absl::StatusOr<cudaStream_t> GpuProducers::StreamFor(int device,
                                                     const std::function<absl::StatusOr<double>(cudaStream_t)>& rate) {
  if (producer_sms_ == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = contexts_.find(device); it != contexts_.end()) return it->second->stream();
  GNND_ASSIGN_OR_RETURN(const int total, cuda::SmCount(device));
  std::unique_ptr<cuda::GreenContext> chosen;
  if (producer_sms_ > 0) {
    GNND_ASSIGN_OR_RETURN(chosen, cuda::GreenContext::Create(device, std::min(producer_sms_, total)));
  } else {
    // Auto: the smallest slice whose rate is within 5% of the whole GPU's (warm up first).
    (void)rate(nullptr);
    GNND_ASSIGN_OR_RETURN(const double whole, rate(nullptr));
    for (int sms = 8; sms < total && chosen == nullptr; sms *= 2) {
      GNND_ASSIGN_OR_RETURN(std::unique_ptr<cuda::GreenContext> candidate, cuda::GreenContext::Create(device, sms));
      (void)rate(candidate->stream());
      GNND_ASSIGN_OR_RETURN(const double r, rate(candidate->stream()));
      LogInfo("producer_sms auto on cuda:%d: %d SMs give %.0f batches/s, the whole GPU (%d SMs) %.0f (%.0f%%)", device,
              candidate->sms(), r, total, whole, 100 * r / whole);
      if (r >= 0.95 * whole) chosen = std::move(candidate);
    }
    if (chosen == nullptr) {
      LogInfo("producer_sms auto on cuda:%d: no slice reaches 95%% of the whole GPU; producers use it all", device);
      return nullptr;
    }
  }
  LogInfo("GPU producers on cuda:%d run in a green context of %d of %d SMs", device, chosen->sms(), total);
  const cudaStream_t stream = chosen->stream();
  contexts_.emplace(device, std::move(chosen));
  return stream;
}

bool MpsActive() {
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  const std::string control = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp/nvidia-mps") + "/control";
  struct stat st;
  return ::stat(control.c_str(), &st) == 0;
}

}  // namespace gnnd
