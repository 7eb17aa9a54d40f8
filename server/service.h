// The gRPC service: datasets (list, load with progress, unload, describe), sessions, stats. Every RPC
// first checks the caller (Unix socket peers, SO_PEERCRED) against the access policy (server/access.h):
// trainers for everything, administrators for load and unload.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>

#include "gnnd/v1/config.pb.h"
#include "gnnd/v1/service.grpc.pb.h"
#include "server/access.h"
#include "server/dataset_registry.h"
#include "server/peer_credentials.h"
#include "server/sessions/session.h"
#include "server/sessions/slot_backend.h"
#include "server/stage_histograms.h"
#include "server/unix_listener.h"

namespace gnnd {

// Session is served on gRPC's callback API (a reactor per stream, server/service.cc): an open session
// holds no thread, only its steps on the sessions' pool do, briefly.
class GnndService final : public v1::Gnnd::WithCallbackMethod_Session<v1::Gnnd::Service> {
 public:
  // `listener` may be null (TCP): peers are then unknown. RESOURCE_EXHAUSTED if the sessions' threads
  // cannot start.
  static absl::StatusOr<std::unique_ptr<GnndService>> Create(const v1::DaemonConfig& config, DatasetRegistry* registry,
                                                             SlotBackends* backends, const UnixListener* listener);

  grpc::Status ListDatasets(grpc::ServerContext* context, const v1::ListDatasetsRequest* request,
                            v1::ListDatasetsResponse* response) override;
  grpc::Status LoadDataset(grpc::ServerContext* context, const v1::LoadDatasetRequest* request,
                           grpc::ServerWriter<v1::LoadProgress>* writer) override;
  grpc::Status UnloadDataset(grpc::ServerContext* context, const v1::UnloadDatasetRequest* request,
                             v1::UnloadDatasetResponse* response) override;
  grpc::Status DescribeDataset(grpc::ServerContext* context, const v1::DescribeDatasetRequest* request,
                               v1::DatasetInfo* response) override;
  grpc::ServerBidiReactor<v1::SessionRequest, v1::SessionEvent>* Session(grpc::CallbackServerContext* context) override;
  grpc::Status GetStats(grpc::ServerContext* context, const v1::StatsRequest* request, v1::Stats* response) override;

  // Refuses new sessions and tells the open ones that gnnd is shutting down.
  void StopSessions();
  // Waits until every task of ours that holds a session's stream (an open, a teardown that ends with
  // Finish) has returned. Call after the server's Wait(), before the server is destroyed: Finish reads it.
  void WaitForStreamTasks();
  // What GetStats answers (also the Prometheus endpoint's source).
  v1::Stats CollectStats();

 private:
  class SessionReactor;

  GnndService(const v1::DaemonConfig& config, DatasetRegistry* registry, SlotBackends* backends,
              const UnixListener* listener);

  PeerCredentials Peer(grpc::ServerContextBase* context) const;
  // Opens and registers a session for `peer`'s open request.
  // Opens a session on `setup` (the uid's queue of the setup pool). `abandoned` says whether the trainer
  // went away meanwhile: the open then stops at its next check (CANCELLED).
  absl::StatusOr<std::unique_ptr<class Session>> OpenSession(const v1::OpenSession& request,
                                                             const PeerCredentials& peer, TaskRunner& setup,
                                                             const std::function<bool()>& abandoned);
  // Unregisters a session whose stream is done, keeps its counts and frees it.
  void SessionEnded(std::unique_ptr<class Session> session, const absl::Status& status);

  const v1::DaemonConfig config_;
  const AccessPolicy access_{config_};
  Admission admission_{Admission::FromConfig(config_)};
  DatasetRegistry* const registry_;
  SlotBackends* const backends_;
  const UnixListener* const listener_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::map<uint64_t, class Session*> sessions_;
  uint64_t next_session_id_ = 1;
  bool stopping_ = false;
  // Batches, bytes and sessions per (dataset, device), of the sessions that ended (sessions_opened: all).
  std::map<std::pair<std::string, std::string>, v1::ServedTotals> served_;
  v1::ServedTotals& ServedTotalsLocked(const std::string& dataset, const std::string& device);
  StageHistograms histograms_;
  // Where ended sessions are freed before their streams finish: a teardown waits for the session's step
  // in progress, so it must not take a thread of the sessions' pool.
  std::unique_ptr<ThreadPool> session_teardown_;
  std::mutex stream_tasks_mutex_;
  std::condition_variable stream_tasks_done_;
  int stream_tasks_ = 0;  // RunHeld tasks posted and not yet returned
  static constexpr int kTeardownThreads = 2;
  // Where sessions open and their epochs' seed orders are made: work of tens of milliseconds (a sort of
  // the split; with growing slots, a few batches sampled) that must not hold up other sessions' steps. Fair
  // per uid (fair_pool.h): one uid's heavy opens queue behind each other, never before another uid's.
  std::unique_ptr<FairPool> session_setup_;
  static constexpr int kSetupShare = 4;
  // Where sessions take their steps: short ones (a step never waits for a trainer, a GPU or a sort).
  // Declared last: destroyed first, after the server's shutdown.
  std::unique_ptr<ThreadPool> session_pool_;
  static constexpr int kSessionThreads = 4;
};

// absl::Status and grpc::Status share their codes.
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace gnnd
