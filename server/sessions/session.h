// One trainer's session: the stream protocol and the epoch loop, over a slot backend
// (server/sessions/slot_backend.h) that owns the slots and fills them. gnnd sends SessionOpened, then BatchReady
// per filled slot and EpochEnd at the end of each epoch; the trainer sends Attached once it has mapped
// the slots, Release per batch, NextEpoch for more. A slot is refilled only after the trainer releases
// it, so a trainer that never releases blocks only itself.
//
// A session owns no thread. It advances in steps run on a shared pool whenever something happens (a
// request from the trainer, a batch completed by the backend, Stop): a session whose trainer holds
// every slot, or has not asked for the next epoch, costs memory and nothing else. Steps are short: what
// takes long for one session (an epoch's seed order: a sort of the split) runs on a setup pool, so that
// no session's steps wait behind another's setup.
//
// Slots sized by the batches (OpenSession.slots_may_grow, server/sessions/slot_sizing.h): a batch whose rows do not
// fit its slot is not delivered; the session adds slots with more rows (a backend of its own, a generation:
// slot indices go on from the last ones), tells the trainer (SessionEvent.slots_added) and makes the epoch
// again from that step in them: the trainer sees the batches it would have seen. Earlier generations stop
// producing; their slots stay until the session ends (a GPU trainer may still have them mapped, and gnnd
// may free exported memory only after the trainer has let go of it), counted against the limits.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/limits.h"
#include "common/base/thread_pool.h"
#include "common/batch/batch_schema.h"
#include "common/batch/seeds.h"
#include "common/wire/open_request.h"
#include "gnnd/v1/service.pb.h"
#include "server/admission.h"
#include "server/dataset_registry.h"
#include "server/peer_credentials.h"
#include "server/sessions/slot_backend.h"
#include "server/stage_histograms.h"

namespace gnnd {

// The trainer's end of a session, as the service adapts its RPC stream. Neither call blocks.
class SessionOutput {
 public:
  virtual ~SessionOutput() = default;
  // Queues `event` for the trainer, in order; dropped if the trainer is gone. At most num_slots + 2
  // events are ever queued (a BatchReady per held slot, an EpochEnd, a Shutdown).
  virtual void Send(v1::SessionEvent event) = 0;
  // Ends the stream with `status` after the queued events. Called once, and nothing is sent after it.
  virtual void End(const absl::Status& status) = 0;
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
  int default_slots = kDefaultSlots;
  uint64_t max_session_bytes = kDefaultMaxSessionBytes;
  BatchProducer default_producer = BatchProducer::kSm;  // a CUDA session's, unless its request names one
  Admission* admission = nullptr;                       // daemon-wide limits (none if null)
  StageHistograms* histograms = nullptr;                // daemon-wide stage latencies (none if null)
};

class Session {
 public:
  // Checks the request (CheckOpenRequest), reserves its share of the daemon's limits and has `backends`
  // create the slots (the first epoch's seed order too: call it on the setup pool).
  // The session's steps run on `pool`, the seed orders of later epochs on `setup` (which outlives the
  // session). With growing slots the open samples a few batches first (slot_sizing.h), after the limits are
  // checked on the slots' least size; it stops (CANCELLED) once `abandoned` (if set) returns true.
  static absl::StatusOr<std::unique_ptr<Session>> Open(uint64_t id, const v1::OpenSession& request,
                                                       std::unique_ptr<DatasetRegistry::Lease> lease,
                                                       const SessionLimits& limits, const PeerCredentials& peer,
                                                       SlotBackends& backends, ThreadPool& pool, TaskRunner& setup,
                                                       const std::function<bool()>& abandoned = nullptr);
  // Stops the session and waits for a step or seed order in progress; `output` is not used after this.
  ~Session();

  // Sends SessionOpened to `output` and starts producing. `output` must outlive the session; the session
  // calls output.End once, when it ends: the trainer closed it (OK), broke the protocol (the error),
  // or Stop() was called (`why`).
  void Start(SessionOutput& output);
  // A request from the trainer (any thread, one at a time). A protocol error ends the session.
  void OnRequest(const v1::SessionRequest& request);
  // The trainer closed its end of the stream or went away.
  void OnTrainerClosed() { Stop(StopReason::kTrainerClosed, absl::OkStatus()); }
  // Ends the session from any thread; unless the trainer closed it, the trainer is told `why` (its code
  // and message) in a Shutdown event.
  void Stop(StopReason reason, const absl::Status& why);

  uint64_t id() const { return id_; }
  v1::SessionStats Stats() const;

 private:
  // Where the epoch loop stands.
  enum class Phase {
    kStartEpoch,      // waits for every slot to be back, then starts the epoch
    kProducing,       // delivers the backend's batches in step order
    kAwaitNextEpoch,  // EpochEnd sent; waits for NextEpoch
    kEnded,           // output.End called
  };

  // How the backend and timers reach the session: by way of this handle, cleared when the session goes,
  // so a late host callback or timer finds nothing to wake instead of a freed session.
  struct WakeHandle {
    std::mutex mutex;
    Session* session = nullptr;
    void Wake();
  };

  Session() = default;
  // Schedules a step on the pool unless one is scheduled or running (then that one runs again).
  void Wake();
  void RunSteps();
  // Advances as far as it can without waiting; false when nothing is left to do until the next Wake.
  bool Step();
  absl::Status Handle(const v1::SessionRequest& request);
  // Computes epoch `epoch`'s seed order on the setup pool and wakes the session with it.
  void PrepareEpoch(uint64_t epoch);
  // One batch, or the end of the epoch, from the backend; false if it has nothing yet.
  bool Deliver();
  // The batch of `step` in the current generation's slot has more rows than the slot holds: adds a
  // generation with room for it (its counts `counts`) and starts the epoch again from `step` there.
  absl::Status AddSlots(int64_t step, std::span<const int64_t> counts);
  SlotBackend* current() const { return generations_.back().get(); }
  // How the trainer maps the current generation's slots (SessionOpened, or SessionEvent.slots_added).
  absl::Status DescribeSlots(v1::SessionOpened& out);

  uint64_t id_ = 0;
  v1::OpenSession request_;
  v1::SessionEvent opened_;
  Device device_;
  BatchProducer producer_ = BatchProducer::kHost;  // where its batches are made (stats)
  PeerCredentials peer_;
  std::unique_ptr<DatasetRegistry::Lease> lease_;
  std::span<const int64_t> split_;
  std::span<const int64_t> split_times_;  // a temporal session's seed times, one per split entry, or none
  // Seeds the session made: a link session's positions in its edge split, or every node of the seed type.
  std::vector<int64_t> made_seeds_;
  SeedScheduleSpec schedule_;
  BatchSchema schema_;  // of every batch
  std::string seeds_;   // the split or seed ids, as stats name them
  int num_slots_ = 0;
  int64_t steps_per_epoch_ = 0;
  std::vector<std::unique_ptr<Admission::Ticket>> admitted_;  // one per reservation
  uint64_t memory_bytes_ = 0;                                 // what it holds: slots, seed lists, the backend's buffers
  // The backends, one per generation of slots (the last one produces); slot k is slot k % num_slots_ of
  // generation k / num_slots_. Added to by steps under mutex_; never removed before the session ends.
  std::vector<std::unique_ptr<SlotBackend>> generations_;
  // What adding slots needs: the shape and plan of the current generation, the limits, the epoch's seeds.
  SessionShape shape_;
  SessionPlan plan_;
  SlotBackends* backends_ = nullptr;
  SessionLimits limits_;
  EpochSeeds epoch_seeds_;  // the running epoch's (kept only with slots_may_grow)
  uint64_t largest_batch_bytes_ = 0;

  ThreadPool* pool_ = nullptr;
  TaskRunner* setup_ = nullptr;
  SessionOutput* output_ = nullptr;
  std::shared_ptr<WakeHandle> wake_handle_ = std::make_shared<WakeHandle>();

  mutable std::mutex mutex_;
  std::set<int> held_;  // slots delivered and not yet released
  std::optional<StopReason> stop_reason_;
  absl::Status stop_why_;
  Phase phase_ = Phase::kStartEpoch;  // changed by steps only
  uint64_t epoch_ = 0;
  std::optional<uint64_t> next_epoch_;
  // The seed order of epoch `ready_seeds_epoch_`, made ahead of the step that starts it.
  std::optional<EpochSeeds> ready_seeds_;
  std::vector<int64_t> epoch_positions_;  // the running epoch's seeds' positions in the split: input_id
  bool link_ = false;
  uint64_t ready_seeds_epoch_ = 0;
  bool preparing_ = false;  // a PrepareEpoch task is queued or running
  std::condition_variable prepared_;
  uint64_t batches_ = 0, bytes_ = 0;
  std::vector<std::chrono::steady_clock::time_point> delivered_at_;  // per slot
  // Where this session's stage latencies go (null without histograms).
  StageHistograms::Cell *produce_ = nullptr, *sample_ = nullptr, *gather_ = nullptr, *release_wait_ = nullptr;

  // Steps run one at a time: `stepping_` while one is scheduled or running, `again_` if woken meanwhile.
  std::mutex step_mutex_;
  std::condition_variable step_idle_;
  bool started_ = false, stepping_ = false, again_ = false, closed_ = false;
};

}  // namespace gnnd
