// The C++ client of gnnd: datasets, stats and health over gRPC, and sessions whose batches are read in
// place from the slots gnnd fills (a shared-memory segment mapped once per session).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cpp/session_stream.h"
#include "common/batch/batch.h"
#include "common/batch/batch_schema.h"
#include "gnnd/v1/service.grpc.pb.h"
#include "grpcpp/channel.h"

namespace gnnd::client {

class Session;

// A session's slots as this process maps them, unmapped when the last holder lets go: the Session, or a
// view handed out over them (the C ABI's DLPack tensors). So a batch kept past Close stays readable, and
// a tensor's deleter may run at any time, on any thread, also while the process exits.
class SlotMapping {
 public:
  ~SlotMapping();
  SlotMapping(const SlotMapping&) = delete;
  SlotMapping& operator=(const SlotMapping&) = delete;
  void* base() const { return base_; }
  int device() const { return device_; }  // the CUDA device, or -1: host memory

 private:
  friend class Session;
  SlotMapping() = default;
  void* base_ = nullptr;
  size_t bytes_ = 0;
  int device_ = -1;
  // Let go of after the slots are unmapped; the last of a session's mappings to go runs a GPU session's end
  // at gnnd, which may free the slots only then (freeing an exported allocation that another process still
  // has open is undefined).
  std::shared_ptr<void> then_;
};

class Client {
 public:
  // address: "unix:/path/to/gnnd.sock" or "host:port". Fails (UNAVAILABLE) if gnnd does not answer
  // within `timeout_ms`.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& address, int timeout_ms = 5000);

  absl::StatusOr<std::vector<v1::DatasetInfo>> ListDatasets();
  absl::StatusOr<v1::DatasetInfo> LoadDataset(const v1::LoadDatasetRequest& request,
                                              const std::function<void(const v1::LoadProgress&)>& progress);
  absl::Status UnloadDataset(const std::string& name);
  absl::StatusOr<v1::DatasetInfo> DescribeDataset(const std::string& name);
  absl::StatusOr<v1::Stats> GetStats();
  // grpc.health.v1 Check of the whole server: "SERVING", "NOT_SERVING", ...
  absl::StatusOr<std::string> Health();
  absl::StatusOr<std::unique_ptr<Session>> OpenSession(const v1::OpenSession& request);

  const std::string& address() const { return address_; }

 private:
  Client() = default;
  std::string address_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Gnnd::Stub> stub_;
};

// A batch inside a slot: valid until Release(slot).
struct Batch {
  int slot = 0;
  uint64_t epoch = 0;
  int64_t step = 0;
  int64_t num_nodes = 0, num_edges = 0, num_seeds = 0;
  int device = -1;       // the CUDA device holding the arrays, or -1: host memory
  HomogeneousView view;  // device pointers when device >= 0; homogeneous sessions only (else empty)
};

// A batch's per-hop counts, as gnnd announced them (host memory, whatever the device).
struct HopCounts {
  std::vector<int32_t> nodes;  // hops + 1
  std::vector<int32_t> edges;  // hops
};

class Session {
 public:
  ~Session();
  // The next batch of the current epoch; nullopt at its end (then StartEpoch for another). Errors
  // (gnnd gone, session ended) are UNAVAILABLE / the session's status, never a hang.
  // GPU sessions: `cuda_stream` (a cudaStream_t; null = the default stream) is ordered after the batch's
  // `ready` event, and Release records the slot's `consumed` event on it, so neither side synchronizes.
  absl::StatusOr<std::optional<Batch>> Next(void* cuda_stream = nullptr);
  absl::Status Release(int slot, void* cuda_stream = nullptr);
  // Asks for epoch `epoch` after the previous one ended (every batch released first).
  absl::Status StartEpoch(uint64_t epoch);
  // Ends the session and waits (up to kCloseTimeout) until gnnd has freed it: its slots, and its share of
  // the daemon's session limits, are back when Close returns. Next and Release fail from then on. Views
  // still holding the slot mapping (mapping()) keep it: a CPU session's batches stay readable; a GPU
  // session is ended at gnnd only once the last such view lets go (the slots are unmapped after the work
  // this process queued, which may read them, is done).
  void Close();
  static constexpr std::chrono::seconds kCloseTimeout{10};

  const v1::SessionOpened& opened() const { return opened_; }
  int64_t steps_per_epoch() const { return opened_.steps_per_epoch(); }
  // The slots so far: a session opened with slots_may_grow may add some (their indices go on from these)
  // when a batch needs more rows than its slots hold; Next() maps them before it gives out a batch there.
  int num_slots() const { return groups_.empty() ? 0 : groups_.back().first_slot + opened_.num_slots(); }
  // A session of a homogeneous dataset: its batches have the canonical layout (common/batch/batch.h), and
  // SlotView, capacity, hop_counts and Batch::view describe them. A typed session's batches are read by
  // schema() alone.
  bool homogeneous() const { return opened_.has_layout(); }
  // The arrays of `slot` (in [0, num_slots())) at the slot's capacity(), where every batch given out in it
  // lies for the whole session; device pointers for a GPU session (device() >= 0). Homogeneous sessions.
  HomogeneousView SlotView(int slot) const { return HomogeneousView::At(SlotBase(slot), GroupOf(slot).layout); }
  const HomogeneousCapacity& capacity() const { return groups_.back().layout.capacity; }
  // The batch as data (common/batch/batch_schema.h): array i of slot s starts at SlotBase(s) +
  // slot_schema(s).arrays[i].offset and holds counts(s)[arrays[i].count] rows of the batch last given out
  // there. Every slot's schema has the same arrays and counts; added slots have their own offsets and rows.
  const BatchSchema& schema() const { return groups_.back().schema; }
  const BatchSchema& slot_schema(int slot) const { return GroupOf(slot).schema; }
  void* SlotBase(int slot) const {
    const SlotGroup& g = GroupOf(slot);
    return static_cast<std::byte*>(g.mapping->base()) + (slot - g.first_slot) * g.schema.slot_bytes;
  }
  // The mapping of `slot`, for a view that must keep it readable for as long as it lives (null once closed).
  std::shared_ptr<const SlotMapping> mapping(int slot) const { return GroupOf(slot).mapping; }
  // The count values of the batch last given out in `slot` (schema().counts' order); null if none.
  const std::vector<int64_t>* counts(int slot) const {
    return slot >= 0 && slot < static_cast<int>(counts_.size()) && !counts_[slot].empty() ? &counts_[slot] : nullptr;
  }
  int device() const { return device_; }
  // The counts of the batch last given out in `slot`; null if there is none.
  // A node batch's seeds' positions in their split (PyG's input_id), of the batch last given out in `slot`.
  const std::vector<int64_t>* input_id(int slot) const {
    return slot >= 0 && slot < static_cast<int>(input_ids_.size()) && !counts_[slot].empty() ? &input_ids_[slot]
                                                                                             : nullptr;
  }
  const HopCounts* hop_counts(int slot) const {
    return slot >= 0 && slot < static_cast<int>(hop_counts_.size()) && !hop_counts_[slot].nodes.empty()
               ? &hop_counts_[slot]
               : nullptr;
  }

 private:
  friend class Client;
  // The session's gRPC call; shared, so a GPU session can end it after the Session is gone (Close).
  struct Call {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionEvent>> stream;
    std::unique_ptr<SessionStream> io;  // once attached: reads and writes off the trainer's thread
    // Half-closes and waits (up to kCloseTimeout) for gnnd to end the session; once.
    void End();
  };
  // The slots gnnd described in one SessionOpened (the first ones, or added ones): slots first_slot ..
  // first_slot + num_slots - 1.
  struct SlotGroup {
    int first_slot = 0;
    BatchSchema schema;
    HomogeneousLayout layout;  // homogeneous sessions
    std::shared_ptr<SlotMapping> mapping;
    std::vector<void*> ready_events, consumed_events;  // cudaEvent_t, opened from IPC handles
  };
  const SlotGroup& GroupOf(int slot) const {
    size_t g = groups_.size() - 1;
    while (g > 0 && slot < groups_[g].first_slot) --g;
    return groups_[g];
  }
  Session() = default;
  // Checks and maps the slots `described` describes (`first` of them: the first ones) as a new group.
  absl::Status AddGroup(const v1::SessionOpened& described, bool first);
  absl::Status Broken(absl::string_view what);
  // Why the session could not be attached: gnnd's own end status where it ended the session (a first
  // batch that failed, say), else `failure`.
  absl::Status AttachFailed(absl::Status failure);
  absl::Status MapGpuSlots(const v1::SessionOpened& described, SlotGroup& group);
  absl::Status MapCpuSlots(const v1::SessionOpened& described, SlotGroup& group);
  void DestroyEvents();

  std::string address_;
  std::shared_ptr<Call> call_;
  v1::SessionOpened opened_;
  std::vector<SlotGroup> groups_;                // never empty once opened
  bool slots_may_grow_ = false;                  // asked for (OpenSession.slots_may_grow)
  int device_ = -1;                              // GPU sessions: the CUDA device of the slots
  std::vector<HopCounts> hop_counts_;            // per slot
  std::vector<std::vector<int64_t>> counts_;     // per slot
  std::vector<std::vector<int64_t>> input_ids_;  // per slot
  absl::Status failed_;
  bool closed_ = false;
};

}  // namespace gnnd::client
