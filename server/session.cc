#include "server/session.h"

#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/batch_proto.h"
#include "common/log.h"
#include "common/status.h"

namespace gnnd {
namespace {

constexpr int kMaxSlots = 64;
// How long a stopping session waits for its producer's last write before cancelling the stream.
constexpr std::chrono::seconds kProducerGrace{1};

// Keeps the code, prefixes the message with the request field's path.
absl::Status InField(const absl::Status& s, absl::string_view prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

}  // namespace

absl::StatusOr<SessionShape> CheckOpenSession(const v1::OpenSession& request, const v1::DatasetManifest& m,
                                              int64_t max_in_degree, const SessionLimits& limits) {
  SessionShape shape;
  GNND_ASSIGN_OR_RETURN(shape.device, ParseDevice(request.device(), "open.device"));
  const absl::StatusOr<ArrayId> split = SplitArrayId(request.split());
  if (!split.ok()) return InField(split.status(), "open.");
  shape.split = *split;
  shape.sampling = {request.batch_size(), {request.fanouts().begin(), request.fanouts().end()}};
  GNND_RETURN_IF_ERROR(InField(CheckSamplingSpec(shape.sampling), "open."));
  shape.schedule = {request.seed(),       !request.no_shuffle(), request.drop_last(),
                    request.batch_size(), request.rank(),        request.world_size() == 0 ? 1 : request.world_size()};
  GNND_RETURN_IF_ERROR(InField(CheckSeedScheduleSpec(shape.schedule), "open."));
  shape.num_slots = request.num_slots() == 0 ? limits.default_slots : request.num_slots();
  if (shape.num_slots < 1 || shape.num_slots > kMaxSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.num_slots = ", request.num_slots(), " (must be 1 to ", kMaxSlots, ")"));
  }
  GNND_ASSIGN_OR_RETURN(BatchCapacity capacity,
                        ComputeBatchCapacity(shape.sampling, m.num_nodes(), m.num_edges(), max_in_degree));
  shape.layout = BatchLayout::Make(capacity, static_cast<int>(shape.sampling.fanouts.size()), FeatureRowBytes(m));
  shape.slot_bytes = static_cast<uint64_t>(shape.layout.total_bytes) * shape.num_slots;
  if (shape.slot_bytes > limits.max_session_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("open: the session needs ", shape.slot_bytes, " bytes of slots (",
                                                   shape.num_slots, " x ", shape.layout.total_bytes,
                                                   "), over the limit of ", limits.max_session_bytes,
                                                   " (max_session_bytes): lower batch_size, fanouts or num_slots"));
  }
  return shape;
}

absl::StatusOr<std::unique_ptr<Session>> Session::Open(uint64_t id, const v1::OpenSession& request,
                                                       std::unique_ptr<DatasetRegistry::Lease> lease,
                                                       const SessionLimits& limits, const PeerCredentials& peer,
                                                       SlotBackends& backends) {
  auto s = std::unique_ptr<Session>(new Session());
  s->id_ = id;
  s->request_ = request;
  s->peer_ = peer;
  const LoadedDataset& dataset = lease->dataset();
  const v1::DatasetManifest& m = dataset.graph.manifest;
  GNND_ASSIGN_OR_RETURN(const SessionShape shape, CheckOpenSession(request, m, dataset.max_in_degree, limits));
  s->device_ = shape.device;
  s->schedule_ = shape.schedule;
  s->num_slots_ = shape.num_slots;
  s->layout_ = shape.layout;
  const ArrayId split = shape.split;
  const SamplingSpec& sampling = shape.sampling;
  const uint64_t total = shape.slot_bytes;
  const uid_t trainer_uid = peer.known ? peer.uid : ::geteuid();
  if (limits.admission != nullptr) {
    GNND_ASSIGN_OR_RETURN(s->admitted_, limits.admission->Reserve(trainer_uid, total));
  }
  s->split_ = {static_cast<const int64_t*>(dataset.graph.arrays[split]), static_cast<size_t>(ArrayShape(m, split)[0])};
  SessionPlan plan;
  plan.session_id = id;
  plan.dataset = &dataset;
  plan.fanouts = sampling.fanouts;
  plan.seed = request.seed();
  plan.layout = s->layout_;
  plan.num_slots = s->num_slots_;
  plan.device = s->device_;
  plan.trainer_uid = trainer_uid;
  plan.first_epoch = EpochSeeds(s->split_, s->schedule_, request.epoch());
  plan.max_epoch_seeds =
      (static_cast<int64_t>(s->split_.size()) + s->schedule_.world_size - 1) / s->schedule_.world_size;
  s->steps_per_epoch_ = plan.first_epoch.num_steps();
  GNND_ASSIGN_OR_RETURN(s->backend_, backends.Create(plan));
  s->lease_ = std::move(lease);
  s->epoch_ = request.epoch();
  return s;
}

Session::~Session() {
  Stop(StopReason::kSessionEnded, absl::UnavailableError("session ended"));
  if (producer_thread_.joinable()) producer_thread_.join();
}

void Session::Stop(StopReason reason, const absl::Status& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!stop_reason_) {  // the first reason is the one the trainer hears
    stop_reason_ = reason;
    stop_why_ = why;
  }
  if (backend_) backend_->Stop();  // null only if Open failed before making it
  changed_.notify_all();
}

absl::Status Session::Run(SessionStream& stream) {
  v1::SessionEvent opened_event;
  v1::SessionOpened& opened = *opened_event.mutable_opened();
  opened.set_session_id(id_);
  opened.set_device(device_.ToString());
  GNND_RETURN_IF_ERROR(backend_->Describe(opened));
  opened.set_num_slots(num_slots_);
  *opened.mutable_layout() = SlotLayoutToProto(layout_);
  const v1::DatasetManifest& m = lease_->dataset().graph.manifest;
  opened.set_feature_dim(m.feature_dim());
  opened.set_feature_dtype(m.feature_dtype());
  opened.set_steps_per_epoch(steps_per_epoch_);
  if (!stream.Write(opened_event)) return absl::CancelledError("trainer left before the session opened");

  producer_thread_ = std::thread(&Session::Produce, this, std::ref(stream));
  absl::Status status;
  v1::SessionRequest request;
  while (status.ok() && stream.Read(&request)) status = Handle(request);
  if (status.ok()) {
    Stop(StopReason::kTrainerClosed, absl::OkStatus());
  } else {
    Stop(StopReason::kProtocolError, status);
  }
  // Let the producer finish what it is writing (the trainer hears why the session ends); cancel the stream
  // only if it is stuck in a write to a trainer that no longer reads.
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!changed_.wait_for(lock, kProducerGrace, [&] { return producer_done_; })) {
      lock.unlock();
      stream.Cancel();
    }
  }
  producer_thread_.join();
  return status;
}

absl::Status Session::Handle(const v1::SessionRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  switch (request.kind_case()) {
    case v1::SessionRequest::kAttached:
      backend_->Attached();
      return absl::OkStatus();
    case v1::SessionRequest::kRelease: {
      const int slot = request.release().slot();
      if (!held_.contains(slot)) {
        return absl::InvalidArgumentError(absl::StrCat("release.slot = ", slot, " (not a batch this trainer holds)"));
      }
      held_.erase(slot);
      backend_->Release(slot);
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

void Session::Produce(SessionStream& stream) {
  for (;;) {
    uint64_t epoch;
    {
      // A new epoch starts with every slot back from the trainer.
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [&] { return stop_reason_ || held_.empty(); });
      if (stop_reason_) break;
      epoch = epoch_;
    }
    if (!ProduceEpoch(stream, epoch)) break;
    v1::SessionEvent end;
    end.mutable_epoch_end()->set_epoch(epoch);
    if (!stream.Write(end)) break;
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return stop_reason_ || next_epoch_.has_value(); });
    if (stop_reason_) break;
    epoch_ = *next_epoch_;
    next_epoch_.reset();
  }
  std::optional<StopReason> reason;
  absl::Status why;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    reason = stop_reason_;
    why = stop_why_;
  }
  if (reason && *reason != StopReason::kTrainerClosed) {
    v1::SessionEvent shutdown;
    shutdown.mutable_shutdown()->set_reason(std::string(why.message()));
    shutdown.mutable_shutdown()->set_code(static_cast<int32_t>(why.code()));
    stream.Write(shutdown);  // best effort: the trainer may be gone
  }
  std::lock_guard<std::mutex> lock(mutex_);
  producer_done_ = true;
  changed_.notify_all();
}

bool Session::ProduceEpoch(SessionStream& stream, uint64_t epoch) {
  absl::Status status = backend_->StartEpoch(epoch, EpochSeeds(split_, schedule_, epoch));
  while (status.ok()) {
    v1::SessionEvent event;
    v1::BatchReady& ready = *event.mutable_ready();
    const absl::StatusOr<bool> more = backend_->Next(ready);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    if (!*more) break;
    ready.set_epoch(epoch);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_reason_) return false;
      held_.insert(ready.slot());
      ++batches_;
      bytes_ += BatchArrayBytes(ready.num_nodes(), ready.num_edges(), ready.num_seeds(), layout_.num_hops,
                                layout_.feature_row_bytes);
    }
    if (!stream.Write(event)) return false;
  }
  if (!status.ok()) {
    LogError("session %d: %s", id_, status.message());
    Stop(StopReason::kProducerFailed, status);
    return false;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  return !stop_reason_;
}

v1::SessionStats Session::Stats() const {
  const ProducerTimes times = backend_->times();
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
  s.set_sample_seconds(times.sample_seconds);
  s.set_wait_seconds(times.wait_seconds);
  s.set_device(device_.ToString());
  return s;
}

}  // namespace gnnd
