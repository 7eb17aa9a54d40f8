#include "server/service.h"

#include <malloc.h>

#include <algorithm>
#include <deque>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/status.h"

namespace gnnd {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // The message travels in trailing metadata (8 KiB at most by default): a long one would cost the
  // trainer the status itself.
  constexpr size_t kMaxMessageBytes = 2048;
  std::string message(status.message().substr(0, kMaxMessageBytes));
  if (status.message().size() > kMaxMessageBytes) {
    absl::StrAppend(&message, "... (", status.message().size(), " bytes)");
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::move(message));
}

absl::StatusOr<std::unique_ptr<GnndService>> GnndService::Create(const v1::DaemonConfig& config,
                                                                 DatasetRegistry* registry, SlotBackends* backends,
                                                                 const UnixListener* listener) {
  auto service = std::unique_ptr<GnndService>(new GnndService(config, registry, backends, listener));
  GNND_ASSIGN_OR_RETURN(service->session_teardown_, ThreadPool::Create(kTeardownThreads, "session teardowns"));
  GNND_ASSIGN_OR_RETURN(service->session_setup_, FairPool::Create(kSetupShare, "session setups"));
  GNND_ASSIGN_OR_RETURN(service->session_pool_, ThreadPool::Create(kSessionThreads, "session steps"));
  return service;
}

GnndService::GnndService(const v1::DaemonConfig& config, DatasetRegistry* registry, SlotBackends* backends,
                         const UnixListener* listener)
    : config_(config), registry_(registry), backends_(backends), listener_(listener) {}

PeerCredentials GnndService::Peer(grpc::ServerContextBase* context) const {
  return listener_ == nullptr ? PeerCredentials{} : listener_->Lookup(context->peer());
}

grpc::Status GnndService::ListDatasets(grpc::ServerContext* context, const v1::ListDatasetsRequest*,
                                       v1::ListDatasetsResponse* response) {
  if (absl::Status s = access_.AuthorizeTrainer(Peer(context)); !s.ok()) return ToGrpc(s);
  for (v1::DatasetInfo& info : registry_->List()) *response->add_datasets() = std::move(info);
  return grpc::Status::OK;
}

grpc::Status GnndService::LoadDataset(grpc::ServerContext* context, const v1::LoadDatasetRequest* request,
                                      grpc::ServerWriter<v1::LoadProgress>* writer) {
  const PeerCredentials peer = Peer(context);
  if (absl::Status s = access_.AuthorizeAdmin(peer); !s.ok()) return ToGrpc(s);
  if (request->path().empty()) return ToGrpc(absl::InvalidArgumentError("path: missing"));
  const absl::StatusOr<std::string> path = access_.ResolveLoadPath(request->path(), peer);
  if (!path.ok()) return ToGrpc(path.status());
  v1::DatasetConfig dataset;
  dataset.set_name(request->name());
  dataset.set_path(*path);
  dataset.set_huge_pages(request->huge_pages());
  dataset.set_feature_cache(request->feature_cache());
  dataset.set_look_ahead(request->look_ahead());
  if (absl::Status s = FinishDatasetConfig(dataset, ""); !s.ok()) return ToGrpc(s);
  absl::StatusOr<v1::DatasetInfo> info =
      registry_->Load(dataset, [&](const std::string& array, uint64_t done, uint64_t total) {
        v1::LoadProgress progress;
        progress.set_array(array);
        progress.set_bytes_done(done);
        progress.set_bytes_total(total);
        writer->Write(progress);  // a client that stopped listening does not stop the load
      });
  if (!info.ok()) return ToGrpc(info.status());
  v1::LoadProgress done;
  done.set_done(true);
  done.set_bytes_done(info->bytes());
  done.set_bytes_total(info->bytes());
  *done.mutable_dataset() = *info;
  writer->Write(done);
  return grpc::Status::OK;
}

grpc::Status GnndService::UnloadDataset(grpc::ServerContext* context, const v1::UnloadDatasetRequest* request,
                                        v1::UnloadDatasetResponse*) {
  if (absl::Status s = access_.AuthorizeAdmin(Peer(context)); !s.ok()) return ToGrpc(s);
  return ToGrpc(registry_->Unload(request->name()));
}

grpc::Status GnndService::DescribeDataset(grpc::ServerContext* context, const v1::DescribeDatasetRequest* request,
                                          v1::DatasetInfo* response) {
  if (absl::Status s = access_.AuthorizeTrainer(Peer(context)); !s.ok()) return ToGrpc(s);
  absl::StatusOr<v1::DatasetInfo> info = registry_->Describe(request->name());
  if (!info.ok()) return ToGrpc(info.status());
  *response = std::move(*info);
  return grpc::Status::OK;
}

// One Session RPC. It reads the open request, opens the session on the setup pool, then passes each
// request to the session and writes its events from an outbox, one write in flight as gRPC requires.
//
// Lifetimes. gRPC calls OnDone once Finish was called and every operation is over; our own tasks (the open on
// the sessions' pool, the teardown) are not operations, so each holds the reactor (RunHeld) and the reactor
// is deleted by whichever of OnDone and the last hold comes last. Finish is called only after the session
// is torn down (its slots freed, its share of the limits given back, off the sessions' pool so that the
// teardown can wait for the session's step), so a trainer that hears the end of its session may open
// another at once. No read or write starts after Finish: both are started under the mutex that End takes.
class GnndService::SessionReactor final : public grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionEvent>,
                                          private SessionOutput {
 public:
  SessionReactor(GnndService& service, PeerCredentials peer)
      : service_(service), peer_(peer), setup_(service.session_setup_->QueueFor(peer.uid)) {
    if (absl::Status s = service_.access_.AuthorizeTrainer(peer_); !s.ok()) {
      End(s);
      return;
    }
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!open_requested_) {  // the first message
      open_requested_ = true;
      lock.unlock();
      if (!ok) return End(absl::CancelledError("no open request"));
      if (!request_.has_open()) return End(absl::InvalidArgumentError("the first message of a session must be 'open'"));
      return RunHeld(*setup_, [this] { Open(); });
    }
    if (session_ == nullptr) return;  // torn down: nothing reads on
    if (!ok) return session_->OnTrainerClosed();
    session_->OnRequest(request_);
    if (!ended_) StartRead(&request_);
  }

  void OnWriteDone(bool ok) override {
    std::optional<grpc::Status> finish;
    const v1::SessionEvent* next = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      outbox_.pop_front();
      if (!ok) {  // the trainer is gone: nothing more reaches it
        gone_ = true;
        outbox_.clear();
        if (session_ != nullptr) session_->OnTrainerClosed();
      }
      if (!outbox_.empty()) {
        next = &outbox_.front();
      } else {
        writing_ = false;
        finish.swap(finish_after_writes_);
      }
    }
    if (next != nullptr) StartWrite(next);  // `writing_` holds Finish back meanwhile
    if (finish) Finish(*finish);
  }

  void OnCancel() override {
    abandoned_ = true;  // an open in progress stops at its next check
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
    if (session_ != nullptr) session_->OnTrainerClosed();
  }

  void OnDone() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
      if (holds_ > 0) return;  // the last hold deletes the reactor
    }
    delete this;
  }

 private:
  // Runs `task` on `pool` with the reactor held: it is not deleted before `task` returns.
  void RunHeld(TaskRunner& pool, std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++holds_;
    }
    {
      std::lock_guard<std::mutex> lock(service_.stream_tasks_mutex_);
      ++service_.stream_tasks_;
    }
    pool.Post([this, task = std::move(task)] {
      GnndService& service = service_;
      task();
      bool last;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        last = --holds_ == 0 && done_;
      }
      if (last) delete this;
      std::lock_guard<std::mutex> lock(service.stream_tasks_mutex_);
      if (--service.stream_tasks_ == 0) service.stream_tasks_done_.notify_all();
    });
  }

  void Open() {
    absl::StatusOr<std::unique_ptr<class Session>> session =
        service_.OpenSession(request_.open(), peer_, *setup_, [this] { return abandoned_.load(); });
    if (!session.ok()) return End(session.status());
    class Session* started;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      session_ = std::move(*session);
      started = session_.get();
      if (cancelled_) started->OnTrainerClosed();  // the trainer left while the session opened
    }
    // Once started, the session may end and be torn down at any time: only the mutex guards it now.
    started->Start(*this);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ended_) StartRead(&request_);
  }

  // SessionOutput. The outbox holds at most num_slots + 2 small events, so a write never waits long
  // on a trainer that stopped reading: they fit in the stream's flow-control window.
  void Send(v1::SessionEvent event) override {
    const v1::SessionEvent* first;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (ended_ || gone_) return;
      outbox_.push_back(std::move(event));  // a deque: the event being written stays where it is
      if (writing_) return;
      writing_ = true;
      first = &outbox_.front();
    }
    StartWrite(first);  // not ended: Finish waits for `writing_`
  }

  // Called once by the session (from its step) or before there is one. The session is torn down before
  // the stream finishes.
  void End(const absl::Status& status) override {
    bool tear_down;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (ended_) return;
      ended_ = true;
      tear_down = session_ != nullptr;
    }
    if (!tear_down) return FinishAfterWrites(ToGrpc(status));
    RunHeld(*service_.session_teardown_, [this, status] {
      std::unique_ptr<class Session> session;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        session = std::move(session_);
      }
      service_.SessionEnded(std::move(session), status);  // waits for the step that called End
      FinishAfterWrites(ToGrpc(status));
    });
  }

  void FinishAfterWrites(grpc::Status status) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (writing_) {
        finish_after_writes_ = std::move(status);
        return;
      }
    }
    Finish(std::move(status));
  }

  GnndService& service_;
  const PeerCredentials peer_;
  const std::unique_ptr<TaskRunner> setup_;  // the uid's queue of the setup pool (the open, the epochs' seeds)
  std::atomic<bool> abandoned_ = false;      // the stream was cancelled (the trainer went away)
  v1::SessionRequest request_;               // the read in flight
  std::mutex mutex_;
  std::unique_ptr<class Session> session_;
  std::deque<v1::SessionEvent> outbox_;  // front: the write in flight
  bool open_requested_ = false, cancelled_ = false, writing_ = false, gone_ = false, ended_ = false, done_ = false;
  int holds_ = 0;  // tasks of ours that use the reactor (RunHeld)
  std::optional<grpc::Status> finish_after_writes_;
};

grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionEvent>* GnndService::Session(
    grpc::CallbackServerContext* context) {
  return new SessionReactor(*this, Peer(context));
}

absl::StatusOr<std::unique_ptr<Session>> GnndService::OpenSession(const v1::OpenSession& request,
                                                                  const PeerCredentials& peer, TaskRunner& setup,
                                                                  const std::function<bool()>& abandoned) {
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<DatasetRegistry::Lease> lease, registry_->Acquire(request.dataset()));
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return absl::UnavailableError("gnnd is shutting down");
    id = next_session_id_++;
  }
  const SessionLimits limits{config_.default_slots(), config_.max_session_bytes(),
                             *ParseBatchProducer(config_.producer(), "producer"), &admission_, &histograms_};
  const auto start = std::chrono::steady_clock::now();
  const absl::Status gone = absl::CancelledError("open: the trainer went away before its session opened");
  absl::StatusOr<std::unique_ptr<class Session>> session =
      abandoned()
          ? gone
          : Session::Open(id, request, std::move(lease), limits, peer, *backends_, *session_pool_, setup, abandoned);
  // A trainer that died while its slots were built (after the last check inside) gets no session either.
  if (session.ok() && abandoned()) session = gone;
  if (!session.ok()) {
    LogEvent(LogLevel::kInfo, "session_refused",
             {{"session", absl::StrCat(id)},
              {"dataset", request.dataset().substr(0, 100)},
              {"uid", absl::StrCat(peer.uid)},
              {"code", absl::StatusCodeToString(session.status().code())}},
             "session %d refused: %s", id, session.status().message());
    return session.status();
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return absl::UnavailableError("gnnd is shutting down");
    sessions_[id] = session->get();
    v1::ServedTotals& totals = ServedTotalsLocked(request.dataset(), (*session)->Stats().device());
    totals.set_sessions_opened(totals.sessions_opened() + 1);
  }
  LogEvent(LogLevel::kInfo, "session_opened",
           {{"session", absl::StrCat(id)},
            {"dataset", request.dataset()},
            {"device", (*session)->Stats().device()},
            {"pid", absl::StrCat(peer.pid)},
            {"uid", absl::StrCat(peer.uid)},
            {"seconds", absl::StrCat(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count())}},
           "session %d opened: dataset '%s' split %s, batch %d, pid %d uid %d", id, request.dataset(), request.split(),
           request.batch_size(), peer.pid, peer.uid);
  return session;
}

void GnndService::SessionEnded(std::unique_ptr<class Session> session, const absl::Status& status) {
  const v1::SessionStats stats = session->Stats();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sessions_.erase(session->id());
    v1::ServedTotals& totals = ServedTotalsLocked(stats.dataset(), stats.device());
    totals.set_batches(totals.batches() + stats.batches());
    totals.set_bytes(totals.bytes() + stats.bytes());
  }
  LogEvent(LogLevel::kInfo, "session_ended",
           {{"session", absl::StrCat(session->id())},
            {"dataset", stats.dataset()},
            {"batches", absl::StrCat(stats.batches())},
            {"code", absl::StatusCodeToString(status.code())}},
           "session %d ended after %d batches: %s", session->id(), stats.batches(),
           status.ok() ? "closed" : status.message());
  session.reset();  // frees the slots
  malloc_trim(0);   // and gives what its buffers freed in the heap back to the system
}

v1::ServedTotals& GnndService::ServedTotalsLocked(const std::string& dataset, const std::string& device) {
  v1::ServedTotals& totals = served_[{dataset, device}];
  totals.set_dataset(dataset);
  totals.set_device(device);
  return totals;
}

grpc::Status GnndService::GetStats(grpc::ServerContext* context, const v1::StatsRequest*, v1::Stats* response) {
  if (absl::Status s = access_.AuthorizeTrainer(Peer(context)); !s.ok()) return ToGrpc(s);
  *response = CollectStats();
  return grpc::Status::OK;
}

v1::Stats GnndService::CollectStats() {
  v1::Stats stats;
  stats.set_uptime_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  stats.set_instance(config_.instance());
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::map<std::pair<std::string, std::string>, v1::ServedTotals> served = served_;  // + the open sessions
    for (const auto& [id, session] : sessions_) {
      v1::SessionStats s = session->Stats();
      v1::ServedTotals& totals = served[{s.dataset(), s.device()}];
      totals.set_batches(totals.batches() + s.batches());
      totals.set_bytes(totals.bytes() + s.bytes());
      *stats.add_sessions() = std::move(s);
    }
    for (auto& [key, totals] : served) {
      stats.set_batches(stats.batches() + totals.batches());
      stats.set_bytes(stats.bytes() + totals.bytes());
      *stats.add_totals() = std::move(totals);
    }
    stats.set_sessions_opened(next_session_id_ - 1);
  }
  *stats.mutable_admission() = admission_.Stats();
  for (v1::DatasetInfo& info : registry_->List()) *stats.add_datasets() = std::move(info);
  histograms_.AppendTo(stats);
  backends_->AppendStats(stats);
  return stats;
}

void GnndService::WaitForStreamTasks() {
  std::unique_lock<std::mutex> lock(stream_tasks_mutex_);
  stream_tasks_done_.wait(lock, [this] { return stream_tasks_ == 0; });
}

void GnndService::StopSessions() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = true;
  for (const auto& [id, session] : sessions_)
    session->Stop(StopReason::kDaemonShutdown, absl::UnavailableError("gnnd is shutting down"));
}

}  // namespace gnnd
