#include "server/session.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"

namespace gnnd {
namespace {

constexpr int kMaxSlots = 64;

// Keeps the code, prefixes the message with the request field's path.
absl::Status InField(const absl::Status& s, absl::string_view prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

uint64_t BatchBytes(const BatchView& b, size_t feature_row_bytes) {
  const int64_t nodes = b.num_nodes(), edges = b.num_edges();
  return 8 * nodes + 8 * edges + feature_row_bytes * nodes + 8 * b.num_seeds() + 4 * (2 * b.num_hops + 1);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Open(uint64_t id, const v1::OpenSession& request,
                                                       std::unique_ptr<DatasetRegistry::Lease> lease,
                                                       const SessionLimits& limits, const PeerCredentials& peer) {
  auto s = std::unique_ptr<Session>(new Session());
  s->id_ = id;
  s->request_ = request;
  s->peer_ = peer;
  const LoadedDataset& dataset = lease->dataset();
  const v1::DatasetManifest& m = dataset.graph.manifest;
  int gpu = -1;  // the CUDA device, or -1 for the CPU backend
  if (!request.device().empty() && request.device() != "cpu") {
#if GNND_WITH_CUDA
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    (void)cudaGetLastError();
    if (!absl::StartsWith(request.device(), "cuda:") || !absl::SimpleAtoi(request.device().substr(5), &gpu) ||
        gpu < 0 || gpu >= count) {
      return absl::InvalidArgumentError(
          absl::StrCat("open.device = '", request.device(), "' (cpu, or cuda:N with N below ", count, ")"));
    }
#else
    return absl::InvalidArgumentError(
        absl::StrCat("open.device = '", request.device(), "' (this gnnd was built without CUDA: cpu only)"));
#endif
  }
  const absl::StatusOr<ArrayId> split_id = SplitArrayId(request.split());
  if (!split_id.ok()) return InField(split_id.status(), "open.");
  const ArrayId split = *split_id;
  const SamplingSpec sampling{request.batch_size(), {request.fanouts().begin(), request.fanouts().end()}};
  GNND_RETURN_IF_ERROR(InField(CheckSamplingSpec(sampling), "open."));
  s->schedule_ = {request.seed(),       !request.no_shuffle(), request.drop_last(),
                  request.batch_size(), request.rank(),        request.world_size() == 0 ? 1 : request.world_size()};
  GNND_RETURN_IF_ERROR(InField(CheckSeedScheduleSpec(s->schedule_), "open."));
  s->num_slots_ = request.num_slots() == 0 ? limits.default_slots : request.num_slots();
  if (s->num_slots_ < 1 || s->num_slots_ > kMaxSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.num_slots = ", request.num_slots(), " (must be 1 to ", kMaxSlots, ")"));
  }
  GNND_ASSIGN_OR_RETURN(BatchCapacity capacity,
                        ComputeBatchCapacity(sampling, m.num_nodes(), m.num_edges(), dataset.max_in_degree));
  s->layout_ = BatchLayout::Make(capacity, static_cast<int>(sampling.fanouts.size()), FeatureRowBytes(m));
  const uint64_t total = static_cast<uint64_t>(s->layout_.total_bytes) * s->num_slots_;
  if (total > limits.max_session_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("open: the session needs ", total, " bytes of slots (",
                                                   s->num_slots_, " x ", s->layout_.total_bytes,
                                                   "), over the limit of ", limits.max_session_bytes,
                                                   " (max_session_bytes): lower batch_size, fanouts or num_slots"));
  }
  s->split_ = {static_cast<const int64_t*>(dataset.graph.arrays[split]), static_cast<size_t>(ArrayShape(m, split)[0])};
  s->steps_per_epoch_ = EpochSeeds(s->split_, s->schedule_, request.epoch()).num_steps();
  s->threads_ = std::max(1, limits.producer_threads);
  if (gpu >= 0) {
#if GNND_WITH_CUDA
    if (!MpsActive()) {
      LogWarning(
          "CUDA MPS is not running: gnnd and the trainer will time-slice the GPU instead of sharing it "
          "(start it with nvidia-cuda-mps-control -d)");
    }
    GNND_ASSIGN_OR_RETURN(const cuda::DeviceGraph* graph,
                          lease->dataset_mutable().OnDevice(gpu, limits.gpu_csc_in_host_memory));
    const int64_t per_rank =
        (static_cast<int64_t>(s->split_.size()) + s->schedule_.world_size - 1) / s->schedule_.world_size;
    GNND_ASSIGN_OR_RETURN(
        s->gpu_, GpuSlots::Create(gpu, *graph, sampling.fanouts, request.seed(), capacity, s->num_slots_, per_rank));
    if (limits.gpu_producers != nullptr) {
      GpuSlots* slots = s->gpu_.get();
      const EpochSeeds calibration(s->split_, s->schedule_, request.epoch());
      GNND_ASSIGN_OR_RETURN(cudaStream_t stream, limits.gpu_producers->StreamFor(gpu, [&](cudaStream_t st) {
        return slots->Rate(calibration, st, 20);
      }));
      if (stream != nullptr) slots->UseStream(stream);
    }
    LogInfo("session %d: cuda:%d, %d slots of %d bytes in GPU memory", id, gpu, s->num_slots_, s->layout_.total_bytes);
#endif
  } else {
    GNND_ASSIGN_OR_RETURN(s->slots_,
                          SlotSegment::Create(id, total, limits.slot_mode, peer.known ? peer.uid : ::geteuid()));
    for (int k = 0; k < s->num_slots_; ++k) {
      s->views_.push_back(
          BatchView::At(static_cast<std::byte*>(s->slots_->data()) + k * s->layout_.total_bytes, s->layout_));
    }
  }
  s->lease_ = std::move(lease);
  s->epoch_ = request.epoch();
  return s;
}

Session::~Session() {
  Stop("session ended");
  if (producer_thread_.joinable()) producer_thread_.join();
}

void Session::Stop(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stopping_) stop_reason_ = reason;
  stopping_ = true;
  if (producer_) producer_->Stop();
  changed_.notify_all();
}

absl::Status Session::Run(grpc::ServerContext* context, SessionStream* stream) {
  v1::SessionEvent opened_event;
  v1::SessionOpened& opened = *opened_event.mutable_opened();
  opened.set_session_id(id_);
  if (slots_) opened.set_shm_name(slots_->name());
  opened.set_device(request_.device().empty() ? "cpu" : request_.device());
#if GNND_WITH_CUDA
  if (gpu_) GNND_RETURN_IF_ERROR(gpu_->Describe(opened));
#endif
  opened.set_num_slots(num_slots_);
  v1::SlotLayout& l = *opened.mutable_layout();
  l.set_slot_bytes(layout_.total_bytes);
  l.set_node_ids(layout_.node_ids);
  l.set_num_nodes_per_hop(layout_.num_nodes_per_hop);
  l.set_edge_src(layout_.edge_src);
  l.set_edge_dst(layout_.edge_dst);
  l.set_num_edges_per_hop(layout_.num_edges_per_hop);
  l.set_features(layout_.features);
  l.set_labels(layout_.labels);
  l.set_max_nodes(layout_.capacity.max_nodes);
  l.set_max_edges(layout_.capacity.max_edges);
  l.set_max_seeds(layout_.capacity.max_seeds);
  const v1::DatasetManifest& m = lease_->dataset().graph.manifest;
  opened.set_num_hops(layout_.num_hops);
  opened.set_feature_dim(m.feature_dim());
  opened.set_feature_dtype(m.feature_dtype());
  opened.set_steps_per_epoch(steps_per_epoch_);
  if (!stream->Write(opened_event)) return absl::CancelledError("trainer left before the session opened");

  producer_thread_ = std::thread(&Session::Produce, this, stream);
  absl::Status status;
  v1::SessionRequest request;
  while (status.ok() && stream->Read(&request)) status = Handle(request);
  Stop(status.ok() ? "trainer closed the session" : std::string(status.message()));
  context->TryCancel();  // unblocks a Write waiting on a trainer that no longer reads
  producer_thread_.join();
  return status;
}

absl::Status Session::Handle(const v1::SessionRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (request.kind_case()) {
    case v1::SessionRequest::kAttached:
      if (slots_) slots_->Unlink();  // mapped by both sides now: nothing left to clean up after a crash
      return absl::OkStatus();
    case v1::SessionRequest::kRelease: {
      const int slot = request.release().slot();
      if (!held_.contains(slot)) {
        return absl::InvalidArgumentError(absl::StrCat("release.slot = ", slot, " (not a batch this trainer holds)"));
      }
      held_.erase(slot);
      if (producer_) producer_->Release(slot);
      if (!slots_) free_gpu_slots_.push_back(slot);
      changed_.notify_all();
      return absl::OkStatus();
    }
    case v1::SessionRequest::kNextEpoch:
      next_epoch_ = request.next_epoch().epoch();
      changed_.notify_all();
      return absl::OkStatus();
    case v1::SessionRequest::kOpen:
      return absl::FailedPreconditionError("open: the session is already open");
    default:
      return absl::InvalidArgumentError("empty session request");
  }
}

void Session::Produce(SessionStream* stream) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    // A new epoch starts with every slot back from the trainer.
    changed_.wait(lock, [&] { return stopping_ || held_.empty(); });
    if (stopping_) break;
    if (slots_) {
      ProduceCpuEpoch(stream, lock);
    } else {
      ProduceGpuEpoch(stream, lock);
    }
    if (stopping_) break;
    v1::SessionEvent end;
    end.mutable_epoch_end()->set_epoch(epoch_);
    lock.unlock();
    const bool written = stream->Write(end);
    lock.lock();
    if (!written) break;
    changed_.wait(lock, [&] { return stopping_ || next_epoch_.has_value(); });
    if (stopping_) break;
    epoch_ = *next_epoch_;
    next_epoch_.reset();
  }
  const std::string reason = stop_reason_;
  lock.unlock();
  if (!reason.empty() && reason != "trainer closed the session") {
    v1::SessionEvent shutdown;
    shutdown.mutable_shutdown()->set_reason(reason);
    stream->Write(shutdown);  // best effort: the trainer may be gone
  }
}

void Session::ProduceCpuEpoch(SessionStream* stream, std::unique_lock<std::mutex>& lock) {
  producer_ = std::make_unique<CpuProducer>(
      lease_->dataset().graph, std::vector<int32_t>(request_.fanouts().begin(), request_.fanouts().end()),
      request_.seed(), epoch_, EpochSeeds(split_, schedule_, epoch_), views_, threads_);
  CpuProducer* producer = producer_.get();
  lock.unlock();
  while (auto ready = producer->Next()) {
    const BatchView& batch = views_[ready->slot];
    v1::SessionEvent event;
    v1::BatchReady& r = *event.mutable_ready();
    r.set_slot(ready->slot);
    r.set_epoch(epoch_);
    r.set_step(ready->step);
    r.set_num_nodes(batch.num_nodes());
    r.set_num_edges(batch.num_edges());
    r.set_num_seeds(batch.num_seeds());
    {
      std::lock_guard<std::mutex> guard(mutex_);
      held_.insert(ready->slot);
      ++batches_;
      bytes_ += BatchBytes(batch, layout_.feature_row_bytes);
    }
    if (!stream->Write(event)) break;
  }
  lock.lock();
  // Every step is claimed: the workers are idle. Keep the statistics, drop the producer.
  sample_seconds_ += producer_->sample_seconds();
  wait_seconds_ += producer_->wait_seconds();
  producer_.reset();
}

void Session::ProduceGpuEpoch(SessionStream* stream, std::unique_lock<std::mutex>& lock) {
#if GNND_WITH_CUDA
  const EpochSeeds seeds(split_, schedule_, epoch_);
  lock.unlock();
  absl::Status status = gpu_->StartEpoch(seeds);
  lock.lock();
  free_gpu_slots_.clear();
  for (int k = num_slots_ - 1; k >= 0; --k) free_gpu_slots_.push_back(k);
  for (int64_t step = 0; status.ok() && step < seeds.num_steps(); ++step) {
    changed_.wait(lock, [&] { return stopping_ || !free_gpu_slots_.empty(); });
    if (stopping_) return;
    const int slot = free_gpu_slots_.back();
    free_gpu_slots_.pop_back();
    lock.unlock();
    v1::SessionEvent event;
    v1::BatchReady& ready = *event.mutable_ready();
    const auto start = std::chrono::steady_clock::now();
    status = gpu_->Fill(epoch_, seeds, step, slot, ready);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ready.set_slot(slot);
    ready.set_epoch(epoch_);
    ready.set_step(step);
    lock.lock();
    if (!status.ok()) break;
    held_.insert(slot);
    ++batches_;
    sample_seconds_ += seconds;
    bytes_ += 8 * ready.num_nodes() + 8 * ready.num_edges() + layout_.feature_row_bytes * ready.num_nodes();
    lock.unlock();
    const bool written = stream->Write(event);
    lock.lock();
    if (!written) {
      stopping_ = true;
      return;
    }
  }
  if (!status.ok()) {
    LogError("session %d: %s", id_, status.message());
    stopping_ = true;
    stop_reason_ = std::string(status.message());
  }
#else
  (void)stream;
  (void)lock;
#endif
}

v1::SessionStats Session::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  v1::SessionStats s;
  s.set_session_id(id_);
  s.set_dataset(request_.dataset());
  s.set_split(request_.split());
  if (peer_.known) {
    s.set_peer_pid(peer_.pid);
    s.set_peer_uid(static_cast<int32_t>(peer_.uid));
    s.set_peer_gid(static_cast<int32_t>(peer_.gid));
  }
  s.set_epoch(epoch_);
  s.set_batches(batches_);
  s.set_bytes(bytes_);
  s.set_sample_seconds(sample_seconds_ + (producer_ ? producer_->sample_seconds() : 0));
  s.set_wait_seconds(wait_seconds_ + (producer_ ? producer_->wait_seconds() : 0));
  s.set_device(request_.device().empty() ? "cpu" : request_.device());
  return s;
}

}  // namespace gnnd
