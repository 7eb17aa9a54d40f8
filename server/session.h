// One trainer's session on the CPU backend: its slots (a shared-memory segment), a producer filling
// them ahead, and the stream protocol: SessionOpened, then BatchReady per filled slot, EpochEnd at the
// end of each epoch; the trainer sends Attached once, Release per batch, NextEpoch for more. A slot is
// refilled only after the trainer releases it, so a trainer that never releases blocks only itself.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/batch.h"
#include "common/seeds.h"
#include "gnnd/v1/service.grpc.pb.h"
#include "kernels/cpu/producer.h"
#include "server/dataset_registry.h"
#include "server/slot_segment.h"
#if GNND_WITH_CUDA
#include "server/gpu_slots.h"
#endif

namespace gnnd {

struct PeerCredentials {
  bool known = false;  // false over TCP
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

struct SessionLimits {
  int default_slots = 2;
  uint64_t max_session_bytes = uint64_t{8} << 30;
  int producer_threads = 1;
  mode_t slot_mode = 0600;
  bool gpu_csc_in_host_memory = false;
#if GNND_WITH_CUDA
  class GpuProducers* gpu_producers = nullptr;
#endif
};

using SessionStream = grpc::ServerReaderWriterInterface<v1::SessionEvent, v1::SessionRequest>;

class Session {
 public:
  // Checks the request (errors name the field: "open.batch_size = 0 ..."), sizes and creates the slots.
  static absl::StatusOr<std::unique_ptr<Session>> Open(uint64_t id, const v1::OpenSession& request,
                                                       std::unique_ptr<DatasetRegistry::Lease> lease,
                                                       const SessionLimits& limits, const PeerCredentials& peer);
  ~Session();

  // Serves the stream until the trainer leaves, breaks the protocol, or Stop() is called; returns the
  // status to finish the RPC with. `context` is cancelled on the way out so no write is left blocked.
  absl::Status Run(grpc::ServerContext* context, SessionStream* stream);
  // Ends the session from another thread (daemon shutdown); the trainer is told `reason`.
  void Stop(const std::string& reason);

  uint64_t id() const { return id_; }
  v1::SessionStats Stats() const;

 private:
  Session() = default;
  void Produce(SessionStream* stream);
  // One epoch: fill free slots in step order and send BatchReady for each. Called with mutex_ held
  // (`lock`), which they release while working.
  void ProduceCpuEpoch(SessionStream* stream, std::unique_lock<std::mutex>& lock);
  void ProduceGpuEpoch(SessionStream* stream, std::unique_lock<std::mutex>& lock);
  absl::Status Handle(const v1::SessionRequest& request);

  uint64_t id_ = 0;
  v1::OpenSession request_;
  PeerCredentials peer_;
  std::unique_ptr<DatasetRegistry::Lease> lease_;
  std::span<const int64_t> split_;
  SeedScheduleSpec schedule_;
  BatchLayout layout_;
  int num_slots_ = 0;
  int threads_ = 1;
  std::unique_ptr<SlotSegment> slots_;  // CPU sessions
#if GNND_WITH_CUDA
  std::unique_ptr<class GpuSlots> gpu_;  // GPU sessions
#endif
  std::vector<int> free_gpu_slots_;
  std::vector<BatchView> views_;
  int64_t steps_per_epoch_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::unique_ptr<CpuProducer> producer_;
  std::set<int> held_;  // slots delivered and not yet released
  bool stopping_ = false;
  std::string stop_reason_;
  uint64_t epoch_ = 0;
  std::optional<uint64_t> next_epoch_;
  uint64_t batches_ = 0, bytes_ = 0;
  double sample_seconds_ = 0, wait_seconds_ = 0;  // of finished producers
  std::thread producer_thread_;
};

}  // namespace gnnd
