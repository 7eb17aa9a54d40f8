#include "server/session.h"

#include <unistd.h>

#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "common/batch/batch_proto.h"
#include "common/batch/batch_schema.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<Session>> Session::Open(uint64_t id, const v1::OpenSession& request,
                                                       std::unique_ptr<DatasetRegistry::Lease> lease,
                                                       const SessionLimits& limits, const PeerCredentials& peer,
                                                       SlotBackends& backends, ThreadPool& pool, ThreadPool& setup) {
  auto s = std::unique_ptr<Session>(new Session());
  s->pool_ = &pool;
  s->setup_ = &setup;
  s->id_ = id;
  s->request_ = request;
  s->peer_ = peer;
  const LoadedDataset& dataset = lease->dataset();
  const GraphData& graph = dataset.graph;
  GNND_ASSIGN_OR_RETURN(SessionShape shape, CheckOpenRequest(request, graph, dataset.max_in_degrees,
                                                             {limits.default_slots, limits.max_session_bytes}));
  s->device_ = shape.device;
  s->schedule_ = shape.schedule;
  s->num_slots_ = shape.num_slots;
  s->schema_ = shape.schema;
  // What `gnnctl stats` says the seeds are: "train", "paper.train", "seed_ids (N)".
  s->seeds_ = request.seed_ids_size() > 0 ? absl::StrCat("seed_ids (", request.seed_ids_size(), ")") : request.split();
  if (shape.typed) s->seeds_ = absl::StrCat(graph.schema.node_types[shape.seed_type].name, ".", s->seeds_);
  if (shape.link) {
    s->seeds_ =
        request.seed_edges_size() > 0
            ? absl::StrCat("seed_edges (", request.seed_edges_size() / 2, ")")
            : absl::StrCat(request.edge_type(), request.edge_type().empty() ? "" : ".", "edges.", request.edge_split());
  }
  const uid_t trainer_uid = peer.known ? peer.uid : ::geteuid();
  s->link_ = shape.link.has_value();
  if (shape.link) {
    s->made_seeds_.resize(static_cast<size_t>(shape.link->split_size));
    std::iota(s->made_seeds_.begin(), s->made_seeds_.end(), 0);
    s->split_ = s->made_seeds_;
  } else if (request.seed_ids_size() > 0) {  // the request, kept by the session, holds them
    s->split_ = {s->request_.seed_ids().data(), static_cast<size_t>(s->request_.seed_ids_size())};
  } else {
    s->split_ = SplitSeeds(shape, graph, s->made_seeds_);
  }
  SessionPlan plan;
  plan.session_id = id;
  plan.dataset = &dataset;
  plan.sampling = shape.sampling;
  plan.layout = shape.layout;
  plan.typed = std::move(shape.typed);
  plan.link = std::move(shape.link);
  plan.schema = shape.schema;
  plan.seed = request.seed();
  plan.num_slots = s->num_slots_;
  plan.device = s->device_;
  plan.trainer_uid = trainer_uid;
  plan.first_epoch = EpochSeeds(s->split_, s->schedule_, request.epoch());
  plan.max_epoch_seeds =
      (static_cast<int64_t>(s->split_.size()) + s->schedule_.world_size - 1) / s->schedule_.world_size;
  s->wake_handle_->session = s.get();
  plan.wake = [handle = s->wake_handle_] { handle->Wake(); };
  plan.wake_after = [handle = s->wake_handle_, &pool](std::chrono::microseconds delay) {
    pool.PostAfter(delay, [handle] { handle->Wake(); });
  };
  s->steps_per_epoch_ = plan.first_epoch.num_steps();
  // Every byte the session holds counts, not its slots alone: the seed lists (the request's ids or edge
  // positions; this epoch's and the next's order, each with its seeds' positions) and the backend's buffers.
  const uint64_t seed_bytes =
      sizeof(int64_t) * (static_cast<uint64_t>(request.seed_ids_size()) + s->made_seeds_.size() +
                         4 * static_cast<uint64_t>(plan.max_epoch_seeds));
  const uint64_t buffer_bytes = SlotBackends::BufferBytes(plan);
  s->memory_bytes_ = shape.slot_bytes + seed_bytes + buffer_bytes;
  if (s->memory_bytes_ > limits.max_session_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open: the session needs ", s->memory_bytes_, " bytes (slots ", shape.slot_bytes, ", seed lists ", seed_bytes,
        ", look-ahead and staging ", buffer_bytes, "), over the limit of ", limits.max_session_bytes,
        " (max_session_bytes): lower batch_size, fanouts, num_slots or the dataset's look_ahead"));
  }
  if (limits.admission != nullptr) {
    GNND_ASSIGN_OR_RETURN(s->admitted_, limits.admission->Reserve(trainer_uid, s->memory_bytes_));
  }
  GNND_ASSIGN_OR_RETURN(s->backend_, backends.Create(plan));
  s->ready_seeds_ = std::move(plan.first_epoch);  // the first epoch starts with it
  s->ready_seeds_epoch_ = request.epoch();

  v1::SessionOpened& opened = *s->opened_.mutable_opened();
  opened.set_session_id(id);
  opened.set_device(s->device_.ToString());
  GNND_RETURN_IF_ERROR(s->backend_->Describe(opened));
  opened.set_num_slots(s->num_slots_);
  *opened.mutable_schema() = BatchSchemaToProto(s->schema_);
  if (!plan.typed && !plan.link) {  // what API 1.0-1.2 clients read
    *opened.mutable_layout() = SlotLayoutToProto(shape.layout);
    opened.set_feature_dim(graph.manifest.feature_dim());
    opened.set_feature_dtype(graph.manifest.feature_dtype());
  }
  opened.set_steps_per_epoch(s->steps_per_epoch_);
  s->delivered_at_.resize(s->num_slots_);
  if (limits.histograms != nullptr) {
    const std::string device = s->device_.ToString();
    s->produce_ = &limits.histograms->Get("produce", request.dataset(), device);
    s->sample_ = &limits.histograms->Get("sample", request.dataset(), device);
    s->gather_ = &limits.histograms->Get("gather", request.dataset(), device);
    s->release_wait_ = &limits.histograms->Get("release_wait", request.dataset(), device);
  }
  s->lease_ = std::move(lease);
  s->epoch_ = request.epoch();
  return s;
}

Session::~Session() {
  Stop(StopReason::kSessionEnded, absl::UnavailableError("session ended"));
  {
    std::lock_guard<std::mutex> lock(wake_handle_->mutex);
    wake_handle_->session = nullptr;  // late callbacks and timers find nothing to wake
  }
  {
    std::unique_lock<std::mutex> lock(step_mutex_);
    step_idle_.wait(lock, [&] { return !stepping_; });
    closed_ = true;
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    prepared_.wait(lock, [&] { return !preparing_; });
  }
  backend_.reset();  // waits for its work in flight, while the step state still exists
}

void Session::WakeHandle::Wake() {
  std::lock_guard<std::mutex> lock(mutex);
  if (session != nullptr) session->Wake();
}

void Session::Start(SessionOutput& output) {
  output_ = &output;
  output.Send(opened_);
  {
    std::lock_guard<std::mutex> lock(step_mutex_);
    started_ = true;
  }
  Wake();
}

void Session::Stop(StopReason reason, const absl::Status& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stop_reason_) {  // the first reason is the one the trainer hears
      stop_reason_ = reason;
      stop_why_ = why;
    }
  }
  if (backend_) backend_->Stop();  // null only if Open failed before making it
  Wake();
}

void Session::OnRequest(const v1::SessionRequest& request) {
  const absl::Status status = Handle(request);
  if (status.ok()) {
    Wake();
  } else {
    Stop(StopReason::kProtocolError, status);
  }
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
      if (release_wait_ != nullptr) {
        release_wait_->Observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - delivered_at_[slot]).count());
      }
      backend_->Release(slot);
      return absl::OkStatus();
    }
    case v1::SessionRequest::kNextEpoch:
      next_epoch_ = request.next_epoch().epoch();
      return absl::OkStatus();
    case v1::SessionRequest::kOpen:
      return absl::FailedPreconditionError("open: the session is already open");
    default:
      return absl::InvalidArgumentError("empty session request");
  }
}

void Session::Wake() {
  std::lock_guard<std::mutex> lock(step_mutex_);
  if (!started_ || closed_) return;
  if (stepping_) {
    again_ = true;
    return;
  }
  stepping_ = true;
  pool_->Post([this] { RunSteps(); });
}

void Session::RunSteps() {
  for (;;) {
    while (Step()) {
    }
    std::lock_guard<std::mutex> lock(step_mutex_);
    if (!again_) {
      stepping_ = false;
      step_idle_.notify_all();
      return;
    }
    again_ = false;
  }
}

bool Session::Step() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (phase_ == Phase::kEnded) return false;
  if (stop_reason_) {
    phase_ = Phase::kEnded;
    const StopReason reason = *stop_reason_;
    const absl::Status why = stop_why_;
    lock.unlock();
    if (reason == StopReason::kTrainerClosed) {
      output_->End(absl::OkStatus());
    } else {
      v1::SessionEvent shutdown;
      shutdown.mutable_shutdown()->set_reason(std::string(why.message()));
      shutdown.mutable_shutdown()->set_code(static_cast<int32_t>(why.code()));
      output_->Send(std::move(shutdown));
      output_->End(why);
    }
    return false;
  }
  switch (phase_) {
    case Phase::kStartEpoch: {
      if (!held_.empty()) return false;  // a new epoch starts with every slot back; a Release wakes us
      const uint64_t epoch = epoch_;
      if (!ready_seeds_ || ready_seeds_epoch_ != epoch) {  // its seed order comes from the setup pool
        if (!preparing_) {
          preparing_ = true;
          lock.unlock();
          PrepareEpoch(epoch);
        }
        return false;  // the prepared seeds wake us
      }
      EpochSeeds seeds = *std::move(ready_seeds_);
      ready_seeds_.reset();
      epoch_positions_ = seeds.TakePositions();
      lock.unlock();
      const absl::Status started = backend_->StartEpoch(epoch, seeds);
      lock.lock();
      if (!started.ok()) {
        lock.unlock();
        LogError("session %d: %s", id_, started.message());
        Stop(StopReason::kProducerFailed, started);
        return true;
      }
      phase_ = Phase::kProducing;
      return true;
    }
    case Phase::kProducing:
      lock.unlock();
      return Deliver();
    case Phase::kAwaitNextEpoch:
      if (!next_epoch_) return false;  // the NextEpoch request wakes us
      epoch_ = *next_epoch_;
      next_epoch_.reset();
      phase_ = Phase::kStartEpoch;
      return true;
    case Phase::kEnded:
      break;
  }
  return false;
}

void Session::PrepareEpoch(uint64_t epoch) {
  setup_->Post([this, epoch, handle = wake_handle_] {
    std::optional<EpochSeeds> seeds;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_reason_) {  // ending: nobody will use it
        preparing_ = false;
        prepared_.notify_all();
        return;
      }
    }
    seeds.emplace(split_, schedule_, epoch);  // split_ and schedule_ stay as they are while the session lives
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_seeds_ = std::move(seeds);
      ready_seeds_epoch_ = epoch;
      preparing_ = false;
      prepared_.notify_all();  // the session may be freed from here on: only `handle` is used below
    }
    handle->Wake();
  });
}

bool Session::Deliver() {
  v1::SessionEvent event;
  BatchTimes times;
  const absl::StatusOr<PollResult> polled = backend_->Poll(*event.mutable_ready(), times);
  if (!polled.ok()) {
    LogError("session %d: %s", id_, polled.status().message());
    Stop(StopReason::kProducerFailed, polled.status());
    return true;
  }
  if (*polled == PollResult::kPending) return false;  // the backend, or a Release, wakes us
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_reason_) return true;  // the next step ends the session
    if (*polled == PollResult::kEpochDone) {
      phase_ = Phase::kAwaitNextEpoch;
      event.mutable_epoch_end()->set_epoch(epoch_);
    } else {
      v1::BatchReady& ready = *event.mutable_ready();
      ready.set_epoch(epoch_);
      if (!link_) {  // the seeds' positions (a link batch's are in its slot)
        const auto begin =
            std::min<size_t>(static_cast<size_t>(ready.step() * schedule_.batch_size), epoch_positions_.size());
        const size_t end = std::min<size_t>(begin + schedule_.batch_size, epoch_positions_.size());
        ready.mutable_input_id()->Add(epoch_positions_.begin() + begin, epoch_positions_.begin() + end);
      }
      held_.insert(ready.slot());
      delivered_at_[ready.slot()] = std::chrono::steady_clock::now();
      ++batches_;
      if (ready.counts_size() != static_cast<int>(schema_.counts.size())) {
        LogError("session %d: the backend gave %d counts for %d", id_, ready.counts_size(), schema_.counts.size());
      } else {
        bytes_ += BatchBytes(schema_, {ready.counts().data(), static_cast<size_t>(ready.counts_size())});
      }
    }
  }
  if (produce_ != nullptr) {
    for (auto [cell, seconds] :
         {std::pair{produce_, times.produce}, {sample_, times.sample}, {gather_, times.gather}}) {
      if (seconds >= 0) cell->Observe(seconds);
    }
  }
  output_->Send(std::move(event));
  return true;
}

v1::SessionStats Session::Stats() const {
  const ProducerTimes times = backend_->times();
  std::lock_guard<std::mutex> lock(mutex_);
  v1::SessionStats s;
  s.set_session_id(id_);
  s.set_dataset(request_.dataset());
  s.set_split(seeds_);
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
  s.set_slots_held(static_cast<uint32_t>(held_.size()));
  s.set_memory_bytes(memory_bytes_);
  return s;
}

}  // namespace gnnd
