// One trainer's session: the stream protocol and the epoch loop, over a slot backend
// (server/slot_backend.h) that owns the slots and fills them. gnnd sends SessionOpened, then BatchReady
// per filled slot and EpochEnd at the end of each epoch; the trainer sends Attached once it has mapped
// the slots, Release per batch, NextEpoch for more. A slot is refilled only after the trainer releases
// it, so a trainer that never releases blocks only itself.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/seeds.h"
#include "gnnd/v1/service.pb.h"
#include "server/admission.h"
#include "server/dataset_registry.h"
#include "server/peer_credentials.h"
#include "server/slot_backend.h"

namespace gnnd {

// The trainer's end of the session, as the service adapts its RPC stream.
class SessionStream {
 public:
  virtual ~SessionStream() = default;
  // Blocks for the trainer's next request; false once the trainer closed the stream or is gone.
  virtual bool Read(v1::SessionRequest* request) = 0;
  // False if the event cannot be delivered (the trainer is gone, or Cancel() was called).
  virtual bool Write(const v1::SessionEvent& event) = 0;
  // Makes pending and later Read/Write calls fail (a Write may be blocked on a trainer that stopped reading).
  virtual void Cancel() = 0;
};

// Why a session ends. Every reason but kTrainerClosed is told to the trainer in a Shutdown event.
enum class StopReason {
  kTrainerClosed,   // the trainer ended the stream (or went away)
  kProtocolError,   // the trainer sent something the protocol does not allow
  kProducerFailed,  // making a batch failed
  kDaemonShutdown,  // gnnd is stopping
  kSessionEnded,    // the session object went away first
};

struct SessionLimits {
  int default_slots = 2;
  uint64_t max_session_bytes = uint64_t{8} << 30;
  Admission* admission = nullptr;  // daemon-wide limits (none if null)
};

// What an open request asks for, checked against its dataset and the limits (errors name the field:
// "open.batch_size = 0 ..."); no resources are taken.
struct SessionShape {
  Device device;
  ArrayId split = ArrayId::kTrain;
  SamplingSpec sampling;
  SeedScheduleSpec schedule;
  int num_slots = 0;
  BatchLayout layout;       // of one slot
  uint64_t slot_bytes = 0;  // of all the slots
};
absl::StatusOr<SessionShape> CheckOpenSession(const v1::OpenSession& request, const v1::DatasetManifest& manifest,
                                              int64_t max_in_degree, const SessionLimits& limits);

class Session {
 public:
  // Checks the request (CheckOpenSession), reserves its share of the daemon's limits and has `backends`
  // create the slots.
  static absl::StatusOr<std::unique_ptr<Session>> Open(uint64_t id, const v1::OpenSession& request,
                                                       std::unique_ptr<DatasetRegistry::Lease> lease,
                                                       const SessionLimits& limits, const PeerCredentials& peer,
                                                       SlotBackends& backends);
  ~Session();

  // Serves `stream` until the trainer leaves, breaks the protocol, or Stop() is called; returns the
  // status to finish the RPC with. The stream is cancelled on the way out so no write is left blocked.
  absl::Status Run(SessionStream& stream);
  // Ends the session from another thread; unless the trainer closed it, the trainer is told `why` (its
  // code and message).
  void Stop(StopReason reason, const absl::Status& why);

  uint64_t id() const { return id_; }
  v1::SessionStats Stats() const;

 private:
  Session() = default;
  void Produce(SessionStream& stream);
  // Sends one epoch's batches as the backend completes them; false if the session is to end.
  bool ProduceEpoch(SessionStream& stream, uint64_t epoch);
  absl::Status Handle(const v1::SessionRequest& request);

  uint64_t id_ = 0;
  v1::OpenSession request_;
  Device device_;
  PeerCredentials peer_;
  std::unique_ptr<DatasetRegistry::Lease> lease_;
  std::span<const int64_t> split_;
  SeedScheduleSpec schedule_;
  BatchLayout layout_;
  int num_slots_ = 0;
  int64_t steps_per_epoch_ = 0;
  std::unique_ptr<Admission::Ticket> admitted_;
  std::unique_ptr<SlotBackend> backend_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::set<int> held_;  // slots delivered and not yet released
  std::optional<StopReason> stop_reason_;
  absl::Status stop_why_;
  uint64_t epoch_ = 0;
  std::optional<uint64_t> next_epoch_;
  uint64_t batches_ = 0, bytes_ = 0;
  bool producer_done_ = false;
  std::thread producer_thread_;
};

}  // namespace gnnd
