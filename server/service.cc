#include "server/service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/status.h"

namespace gnnd {

namespace {

// A session's gRPC stream as the session sees it.
class GrpcSessionStream final : public SessionStream {
 public:
  GrpcSessionStream(grpc::ServerContext* context,
                    grpc::ServerReaderWriter<v1::SessionEvent, v1::SessionRequest>* stream)
      : context_(context), stream_(stream) {}
  bool Read(v1::SessionRequest* request) override { return stream_->Read(request); }
  bool Write(const v1::SessionEvent& event) override { return stream_->Write(event); }
  void Cancel() override { context_->TryCancel(); }

 private:
  grpc::ServerContext* const context_;
  grpc::ServerReaderWriter<v1::SessionEvent, v1::SessionRequest>* const stream_;
};

}  // namespace

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

GnndService::GnndService(const v1::DaemonConfig& config, DatasetRegistry* registry, SlotBackends* backends,
                         const UnixListener* listener)
    : config_(config), registry_(registry), backends_(backends), listener_(listener) {}

PeerCredentials GnndService::Peer(grpc::ServerContext* context) const {
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
  absl::StatusOr<v1::DatasetInfo> info = registry_->Load(
      request->name(), *path, request->huge_pages(), [&](const std::string& array, uint64_t done, uint64_t total) {
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

grpc::Status GnndService::Session(grpc::ServerContext* context,
                                  grpc::ServerReaderWriter<v1::SessionEvent, v1::SessionRequest>* stream) {
  const PeerCredentials peer = Peer(context);
  if (absl::Status s = access_.AuthorizeTrainer(peer); !s.ok()) return ToGrpc(s);
  v1::SessionRequest first;
  if (!stream->Read(&first)) return grpc::Status(grpc::StatusCode::CANCELLED, "no open request");
  if (!first.has_open()) {
    return ToGrpc(absl::InvalidArgumentError("the first message of a session must be 'open'"));
  }
  absl::StatusOr<std::unique_ptr<DatasetRegistry::Lease>> lease = registry_->Acquire(first.open().dataset());
  if (!lease.ok()) return ToGrpc(lease.status());
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return ToGrpc(absl::UnavailableError("gnnd is shutting down"));
    id = next_session_id_++;
  }
  const SessionLimits limits{config_.default_slots(), config_.max_session_bytes(), &admission_};
  absl::StatusOr<std::unique_ptr<class Session>> session =
      Session::Open(id, first.open(), std::move(*lease), limits, peer, *backends_);
  if (!session.ok()) {
    LogInfo("session %d refused: %s", id, session.status().message());
    return ToGrpc(session.status());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return ToGrpc(absl::UnavailableError("gnnd is shutting down"));
    sessions_[id] = session->get();
  }
  LogInfo("session %d opened: dataset '%s' split %s, batch %d, pid %d uid %d", id, first.open().dataset(),
          first.open().split(), first.open().batch_size(), peer.pid, peer.uid);
  GrpcSessionStream session_stream(context, stream);
  const absl::Status status = (*session)->Run(session_stream);
  const v1::SessionStats stats = (*session)->Stats();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sessions_.erase(id);
    finished_batches_ += stats.batches();
    finished_bytes_ += stats.bytes();
  }
  LogInfo("session %d ended after %d batches: %s", id, stats.batches(), status.ok() ? "closed" : status.message());
  session->reset();  // frees the slots before the RPC completes
  return ToGrpc(status);
}

grpc::Status GnndService::GetStats(grpc::ServerContext* context, const v1::StatsRequest*, v1::Stats* response) {
  if (absl::Status s = access_.AuthorizeTrainer(Peer(context)); !s.ok()) return ToGrpc(s);
  response->set_uptime_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t batches = finished_batches_, bytes = finished_bytes_;
  for (const auto& [id, session] : sessions_) {
    v1::SessionStats s = session->Stats();
    batches += s.batches();
    bytes += s.bytes();
    *response->add_sessions() = std::move(s);
  }
  response->set_batches(batches);
  response->set_bytes(bytes);
  response->set_sessions_opened(next_session_id_ - 1);
  *response->mutable_admission() = admission_.Stats();
  for (v1::DatasetInfo& info : registry_->List()) *response->add_datasets() = std::move(info);
  return grpc::Status::OK;
}

void GnndService::StopSessions() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = true;
  for (const auto& [id, session] : sessions_)
    session->Stop(StopReason::kDaemonShutdown, absl::UnavailableError("gnnd is shutting down"));
}

}  // namespace gnnd
