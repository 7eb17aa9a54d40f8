#include "client/cpp/client.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/wire/batch_proto.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#if GNND_WITH_CUDA
#include <cuda.h>  // CUcontext; the driver's functions come through the runtime (the client loads without one)
#include <cuda_runtime.h>

#include "common/base/cuda_check.h"
#endif

namespace gnnd::client {
namespace {

#if GNND_WITH_CUDA
// The session's GPU current on this thread for a scope, then the thread's own context again (none if it had
// none). A trainer may hold sessions on several GPUs: CUDA calls on one must not run against another's
// context, and the client must neither move the device the trainer selected nor create a context on a GPU
// it never used (restoring "device 0" by cudaSetDevice would).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) {
    static const auto get = Driver<CUresult (*)(CUcontext*)>("cuCtxGetCurrent");
    static const auto set = Driver<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
    restore_ = set;
    if (get == nullptr || set == nullptr || get(&previous_) != CUDA_SUCCESS) restore_ = nullptr;
    status_ = ::gnnd::cuda::CudaStatus(cudaSetDevice(device), absl::StrCat("select cuda:", device));
  }
  ~ScopedDevice() {
    if (restore_ != nullptr) restore_(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  const absl::Status& status() const { return status_; }

 private:
  template <typename F>
  static F Driver(const char* name) {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion(name, &function, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<F>(function);
  }

  CUcontext previous_ = nullptr;
  CUresult (*restore_)(CUcontext) = nullptr;
  absl::Status status_;
};
#endif

absl::Status FromGrpc(const grpc::Status& s, absl::string_view address) {
  if (s.ok()) return absl::OkStatus();
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return absl::UnavailableError(absl::StrCat("gnnd at ", address, " is unavailable: ", s.error_message()));
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

// Deadline for control-plane calls; loads may take long and get none.
std::unique_ptr<grpc::ClientContext> Context(int seconds) {
  auto context = std::make_unique<grpc::ClientContext>();
  if (seconds > 0) context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return context;
}

// A Unix socket nobody can answer on fails at once: no socket file, one left by a gnnd that is gone, or one
// this user may not connect to (waiting the timeout out would only delay the same answer).
absl::Status ProbeUnixSocket(const std::string& address) {
  const std::string path = address.substr(5);
  sockaddr_un peer{};
  if (path.size() >= sizeof(peer.sun_path)) return absl::OkStatus();
  peer.sun_family = AF_UNIX;
  std::memcpy(peer.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::OkStatus();
  const int connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof(peer));
  const int error = errno;
  ::close(fd);
  if (connected == 0) return absl::OkStatus();
  if (error == ENOENT) {
    return absl::UnavailableError(
        absl::StrCat("gnnd at ", address, " does not answer: there is no socket ", path, " (is gnnd running?)"));
  }
  if (error == EACCES) {
    return absl::PermissionDeniedError(absl::StrCat("gnnd at ", address, ": permission denied on the socket ", path,
                                                    " (its group or socket_mode decide who may connect)"));
  }
  if (error == ECONNREFUSED) {
    return absl::UnavailableError(absl::StrCat("gnnd at ", address, " does not answer: nothing listens on ", path,
                                               " (left by a gnnd that is gone?)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const std::string& address, int timeout_ms) {
  auto client = std::unique_ptr<Client>(new Client());
  client->address_ = address;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  client->channel_ = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  if (absl::StartsWith(address, "unix:")) GNND_RETURN_IF_ERROR(ProbeUnixSocket(address));
  if (!client->channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms))) {
    return absl::UnavailableError(absl::StrCat("gnnd at ", address, " does not answer (is it running?)"));
  }
  client->stub_ = v1::Gnnd::NewStub(client->channel_);
  return client;
}

absl::StatusOr<std::vector<v1::DatasetInfo>> Client::ListDatasets() {
  v1::ListDatasetsResponse response;
  GNND_RETURN_IF_ERROR(FromGrpc(stub_->ListDatasets(Context(30).get(), {}, &response), address_));
  return std::vector<v1::DatasetInfo>(response.datasets().begin(), response.datasets().end());
}

absl::StatusOr<v1::DatasetInfo> Client::LoadDataset(const v1::LoadDatasetRequest& request,
                                                    const std::function<void(const v1::LoadProgress&)>& progress) {
  auto context = Context(0);
  auto reader = stub_->LoadDataset(context.get(), request);
  v1::LoadProgress message;
  std::optional<v1::DatasetInfo> info;
  while (reader->Read(&message)) {
    if (progress) progress(message);
    if (message.done()) info = message.dataset();
  }
  GNND_RETURN_IF_ERROR(FromGrpc(reader->Finish(), address_));
  if (!info) return absl::InternalError("gnnd ended the load without a result");
  return *info;
}

absl::Status Client::UnloadDataset(const std::string& name) {
  v1::UnloadDatasetRequest request;
  request.set_name(name);
  v1::UnloadDatasetResponse response;
  return FromGrpc(stub_->UnloadDataset(Context(60).get(), request, &response), address_);
}

absl::StatusOr<v1::DatasetInfo> Client::DescribeDataset(const std::string& name) {
  v1::DescribeDatasetRequest request;
  request.set_name(name);
  v1::DatasetInfo info;
  GNND_RETURN_IF_ERROR(FromGrpc(stub_->DescribeDataset(Context(30).get(), request, &info), address_));
  return info;
}

absl::StatusOr<v1::Stats> Client::GetStats() {
  v1::Stats stats;
  GNND_RETURN_IF_ERROR(FromGrpc(stub_->GetStats(Context(30).get(), {}, &stats), address_));
  return stats;
}

absl::StatusOr<std::string> Client::Health() {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckResponse response;
  GNND_RETURN_IF_ERROR(FromGrpc(stub->Check(Context(10).get(), {}, &response), address_));
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status());
}

absl::StatusOr<std::unique_ptr<Session>> Client::OpenSession(const v1::OpenSession& request) {
  auto session = std::unique_ptr<Session>(new Session());
  session->address_ = address_;
  session->call_ = std::make_shared<Session::Call>();
  Session::Call& call = *session->call_;
  call.context = std::make_unique<grpc::ClientContext>();
  call.stream = stub_->Session(call.context.get());
  v1::SessionRequest open;
  *open.mutable_open() = request;
  v1::SessionEvent event;
  if (!call.stream->Write(open) || !call.stream->Read(&event)) {
    session->closed_ = true;  // Finish may be called once
    absl::Status refused = FromGrpc(call.stream->Finish(), address_);
    if (absl::IsNotFound(refused)) {  // which gnnd was asked: there may be several
      return absl::NotFoundError(absl::StrCat("gnnd at ", address_, ": ", refused.message()));
    }
    return refused;
  }
  if (!event.has_opened()) return absl::InternalError("gnnd answered the open request with something else");
  session->opened_ = event.opened();
  session->slots_may_grow_ = request.slots_may_grow();
  // From here on gnnd holds the session: the stream's threads run, so that Close() (also on the errors
  // below) waits for gnnd to end it.
  call.io = std::make_unique<SessionStream>(call.stream.get());
  GNND_RETURN_IF_ERROR(session->AddGroup(session->opened_, /*first=*/true));
  return session;
}

absl::Status Session::AddGroup(const v1::SessionOpened& described, bool first) {
  SlotGroup group;
  group.first_slot = first ? 0 : num_slots();
  if (!first && (described.first_slot() != group.first_slot || described.num_slots() != opened_.num_slots() ||
                 described.device() != opened_.device())) {
    return absl::InternalError("gnnd added slots that do not follow the session's");
  }
  GNND_ASSIGN_OR_RETURN(group.schema, BatchSchemaFromProto(described.schema()));
  if (!first && (group.schema.counts != schema().counts || group.schema.arrays.size() != schema().arrays.size())) {
    return absl::InternalError("gnnd added slots whose batches differ from the session's");
  }
  if (homogeneous()) {
    if (!described.has_layout()) return absl::InternalError("gnnd added slots without their layout");
    GNND_ASSIGN_OR_RETURN(group.layout, SlotLayoutFromProto(described.layout()));
    if (group.schema.slot_bytes != group.layout.total_bytes) {
      return absl::InternalError("gnnd's batch schema and slot layout disagree on the slot size");
    }
  }
  GNND_ASSIGN_OR_RETURN(const Device device, ParseDevice(described.device(), "the session's device"));
  absl::Status mapped = device.is_cuda() ? MapGpuSlots(described, group) : MapCpuSlots(described, group);
  if (!mapped.ok()) {
    if (first) return AttachFailed(std::move(mapped));
    return mapped;
  }
  groups_.push_back(std::move(group));
  v1::SessionRequest attached;
  attached.mutable_attached();
  if (!call_->io->Put(std::move(attached))) return Broken("attaching to the slots");
  return absl::OkStatus();
}

absl::Status Session::AttachFailed(absl::Status failure) {
  // gnnd removes a session's slots when it ends it, which may be before they are mapped here: its
  // reason, not the missing segment, is what the caller needs.
  if (!call_->io->ReadEndedWithin(std::chrono::seconds(2))) return failure;
  v1::SessionEvent event;
  while (call_->io->Take(&event)) {
    if (!event.has_shutdown()) continue;
    const auto code = static_cast<absl::StatusCode>(event.shutdown().code());
    if (code == absl::StatusCode::kOk) break;
    return absl::Status(code, event.shutdown().reason());
  }
  return Broken("attaching to the slots");
}

SlotMapping::~SlotMapping() {
#if GNND_WITH_CUDA
  if (device_ >= 0 && base_ != nullptr) {
    const ScopedDevice current(device_);
    // Work this process queued may still read the slots: it finishes first.
    cudaDeviceSynchronize();
    cudaIpcCloseMemHandle(base_);
    (void)cudaGetLastError();  // a process that is exiting may have no CUDA left: nothing to report to
  }
#endif
  if (device_ < 0 && base_ != nullptr) ::munmap(base_, bytes_);
  then_.reset();  // after the unmapping: the last mapping to go ends the session at gnnd
}

absl::Status Session::MapCpuSlots(const v1::SessionOpened& described, SlotGroup& group) {
  const std::string name = "/" + described.shm_name();
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("map the session's slots (", name, ")"));
  const size_t bytes = group.schema.slot_bytes * described.num_slots();
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) < bytes) {
    ::close(fd);
    return absl::DataLossError(absl::StrCat("the session's slots (", name, ") are not a segment of ", bytes, " bytes"));
  }
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (data == MAP_FAILED) return ErrnoStatus(errno, absl::StrCat("mmap ", name));
  group.mapping = std::shared_ptr<SlotMapping>(new SlotMapping());
  group.mapping->base_ = data;
  group.mapping->bytes_ = bytes;
  return absl::OkStatus();
}

absl::Status Session::MapGpuSlots(const v1::SessionOpened& described, SlotGroup& group) {
#if GNND_WITH_CUDA
  GNND_ASSIGN_OR_RETURN(const Device device, ParseDevice(described.device(), "the session's device"));
  device_ = device.cuda;
  const ScopedDevice current(device_);
  GNND_RETURN_IF_ERROR(current.status());
  cudaIpcMemHandle_t memory;
  if (described.slots_ipc_handle().size() != sizeof(memory)) return absl::InternalError("bad IPC handle from gnnd");
  std::memcpy(&memory, described.slots_ipc_handle().data(), sizeof(memory));
  void* slots = nullptr;
  GNND_CUDA(cudaIpcOpenMemHandle(&slots, memory, cudaIpcMemLazyEnablePeerAccess), "open the slots (CUDA IPC)");
  group.mapping = std::shared_ptr<SlotMapping>(new SlotMapping());
  group.mapping->base_ = slots;
  group.mapping->device_ = device_;
  if (described.ready_event_handles_size() != described.num_slots() ||
      described.consumed_event_handles_size() != described.num_slots()) {
    return absl::InternalError("gnnd sent no event pair per slot");
  }
  for (const auto* handles : {&described.ready_event_handles(), &described.consumed_event_handles()}) {
    auto& events = handles == &described.ready_event_handles() ? group.ready_events : group.consumed_events;
    for (const std::string& bytes : *handles) {
      cudaIpcEventHandle_t handle;
      if (bytes.size() != sizeof(handle)) return absl::InternalError("bad event handle from gnnd");
      std::memcpy(&handle, bytes.data(), sizeof(handle));
      cudaEvent_t event;
      GNND_CUDA(cudaIpcOpenEventHandle(&event, handle), "open a slot event (CUDA IPC)");
      events.push_back(event);
    }
  }
  return absl::OkStatus();
#else
  (void)group;
  return absl::UnimplementedError(absl::StrCat("a ", described.device(), " session needs a client built with CUDA"));
#endif
}

Session::~Session() { Close(); }

void Session::DestroyEvents() {
#if GNND_WITH_CUDA
  if (device_ < 0) return;
  const ScopedDevice current(device_);
  // An event recorded but not yet reached is released once it completes.
  for (SlotGroup& g : groups_) {
    for (void* e : g.ready_events) cudaEventDestroy(static_cast<cudaEvent_t>(e));
    for (void* e : g.consumed_events) cudaEventDestroy(static_cast<cudaEvent_t>(e));
    g.ready_events.clear();
    g.consumed_events.clear();
  }
#endif
}

absl::Status Session::Broken(absl::string_view what) {
  if (!failed_.ok()) return failed_;
  Call& call = *call_;
  // A failed write means gnnd ended the call: its status, soon read, says why. Cancelling at once would
  // replace that reason with CANCELLED; cancel only if the end does not arrive.
  if (call.io == nullptr || !call.io->ReadEndedWithin(std::chrono::seconds(5))) call.context->TryCancel();
  if (call.io) call.io->Join();  // Finish only once nothing else uses the stream
  const grpc::Status status = call.stream->Finish();
  failed_ = status.ok() || status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                    status.error_code() == grpc::StatusCode::CANCELLED
                ? absl::UnavailableError(absl::StrCat("gnnd at ", address_, " ended the session while ", what,
                                                      status.ok() ? "" : ": ", status.error_message()))
                : FromGrpc(status, address_);
  closed_ = true;
  return failed_;
}

absl::StatusOr<std::optional<Batch>> Session::Next(void* cuda_stream) {
  if (!failed_.ok()) return failed_;
  if (closed_) return absl::FailedPreconditionError("the session is closed");
  v1::SessionEvent event;
  if (!call_->io->Take(&event)) return Broken("waiting for a batch");
  while (event.has_slots_added()) {  // larger slots for the batches from here on
    if (!slots_may_grow_) return absl::InternalError("gnnd added slots the session did not ask for");
    GNND_RETURN_IF_ERROR(AddGroup(event.slots_added(), /*first=*/false));
    if (!call_->io->Take(&event)) return Broken("waiting for a batch");
  }
  switch (event.kind_case()) {
    case v1::SessionEvent::kReady: {
      const v1::BatchReady& r = event.ready();
      if (r.slot() < 0 || r.slot() >= num_slots()) return absl::InternalError("gnnd named a slot that does not exist");
      const SlotGroup& group = GroupOf(r.slot());
      Batch batch;
      batch.slot = r.slot();
      batch.epoch = r.epoch();
      batch.step = r.step();
      batch.device = device_;
      if (homogeneous()) {
        batch.view = SlotView(r.slot());
        batch.num_nodes = r.num_nodes();
        batch.num_edges = r.num_edges();
        batch.num_seeds = r.num_seeds();
        if (r.num_nodes_per_hop_size() != group.layout.num_hops + 1 ||
            r.num_edges_per_hop_size() != group.layout.num_hops)
          return absl::InternalError("gnnd sent per-hop counts that do not match the session's hops");
        hop_counts_.resize(num_slots());
        hop_counts_[r.slot()] = {{r.num_nodes_per_hop().begin(), r.num_nodes_per_hop().end()},
                                 {r.num_edges_per_hop().begin(), r.num_edges_per_hop().end()}};
      }
      const std::span<const int64_t> counts(r.counts().data(), static_cast<size_t>(r.counts_size()));
      GNND_RETURN_IF_ERROR(CheckBatchCounts(group.schema, counts));
      if (FirstArrayOverflowing(group.schema, counts) >= 0) {
        return absl::InternalError("gnnd gave out a batch with more rows than its slot holds");
      }
      counts_.resize(num_slots());
      counts_[r.slot()].assign(r.counts().begin(), r.counts().end());
      input_ids_.resize(num_slots());
      input_ids_[r.slot()].assign(r.input_id().begin(), r.input_id().end());
#if GNND_WITH_CUDA
      if (device_ >= 0) {
        const ScopedDevice current(device_);
        GNND_RETURN_IF_ERROR(current.status());
        GNND_CUDA(cudaStreamWaitEvent(static_cast<cudaStream_t>(cuda_stream),
                                      static_cast<cudaEvent_t>(group.ready_events[r.slot() - group.first_slot]), 0),
                  "order the trainer's stream after the batch");
      }
#else
      (void)cuda_stream;
#endif
      return batch;
    }
    case v1::SessionEvent::kEpochEnd:
      return std::nullopt;
    case v1::SessionEvent::kShutdown: {
      // A request gnnd could not take keeps its own code; gnnd going away is UNAVAILABLE.
      const auto code = static_cast<absl::StatusCode>(event.shutdown().code());
      failed_ = code == absl::StatusCode::kOk || code == absl::StatusCode::kUnavailable
                    ? absl::UnavailableError(
                          absl::StrCat("gnnd at ", address_, " ended the session: ", event.shutdown().reason()))
                    : absl::Status(code, event.shutdown().reason());
      return failed_;
    }
    default:
      return absl::InternalError("unexpected message from gnnd");
  }
}

absl::Status Session::Release(int slot, void* cuda_stream) {
  if (!failed_.ok()) return failed_;
  if (closed_) return absl::FailedPreconditionError("the session is closed");
#if GNND_WITH_CUDA
  if (device_ >= 0 && slot >= 0 && slot < num_slots()) {
    const SlotGroup& group = GroupOf(slot);
    const ScopedDevice current(device_);
    GNND_RETURN_IF_ERROR(current.status());
    GNND_CUDA(cudaEventRecord(static_cast<cudaEvent_t>(group.consumed_events[slot - group.first_slot]),
                              static_cast<cudaStream_t>(cuda_stream)),
              "record the slot as consumed");
  }
#else
  (void)cuda_stream;
#endif
  v1::SessionRequest request;
  request.mutable_release()->set_slot(slot);
  if (!call_->io->Put(std::move(request))) return Broken("releasing a batch");
  return absl::OkStatus();
}

absl::Status Session::StartEpoch(uint64_t epoch) {
  if (!failed_.ok()) return failed_;
  if (closed_) return absl::FailedPreconditionError("the session is closed");
  v1::SessionRequest request;
  request.mutable_next_epoch()->set_epoch(epoch);
  if (!call_->io->Put(std::move(request))) return Broken("starting an epoch");
  return absl::OkStatus();
}

void Session::Close() {
  DestroyEvents();
  const bool ended = closed_;
  closed_ = true;
  // The groups' schemas stay (schema(), num_slots() keep answering); their mappings go.
  auto unmap = [this] {
    for (SlotGroup& g : groups_) g.mapping.reset();
  };
  if (ended || call_ == nullptr) {  // never opened, or the call already finished (Broken)
    unmap();
    return;
  }
  if (device_ >= 0 && !groups_.empty()) {
    // gnnd frees the slots once every mapping of them here is gone: the last one ends the session.
    std::shared_ptr<void> end(nullptr, [call = call_](void*) { call->End(); });
    for (SlotGroup& g : groups_) {
      if (g.mapping != nullptr) g.mapping->then_ = end;
    }
    unmap();
    return;
  }
  call_->End();
  unmap();
}

void Session::Call::End() {
  if (stream == nullptr) return;
  if (io == nullptr) {  // never attached: nothing of it is left in gnnd
    context->TryCancel();
  } else {
    // Half-close, and wait for gnnd to end the stream: it does so once the session's slots are freed and
    // its share of the daemon's limits is back, so a session opened after Close() never finds this one
    // counted. A gnnd that does not answer in time is cancelled (it then frees the session on its own).
    io->CloseWrites();
    if (!io->ReadEndedWithin(kCloseTimeout)) context->TryCancel();
    io->Join();
  }
  (void)stream->Finish();
  io.reset();
  stream.reset();
}

}  // namespace gnnd::client
