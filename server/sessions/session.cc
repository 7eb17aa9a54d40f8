#include "server/sessions/session.h"

#include <unistd.h>

#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "common/batch/batch_schema.h"
#include "common/wire/batch_proto.h"
#include "kernels/cpu/batch_maker.h"
#include "server/sessions/slot_sizing.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<Session>> Session::Open(uint64_t id, const v1::OpenSession& request,
                                                       std::unique_ptr<DatasetRegistry::Lease> lease,
                                                       const SessionLimits& limits, const PeerCredentials& peer,
                                                       SlotBackends& backends, ThreadPool& pool, TaskRunner& setup,
                                                       const std::function<bool()>& abandoned) {
  auto s = std::unique_ptr<Session>(new Session());
  s->pool_ = &pool;
  s->setup_ = &setup;
  s->id_ = id;
  s->request_ = request;
  s->peer_ = peer;
  const LoadedDataset& dataset = lease->dataset();
  const GraphData& graph = dataset.graph;
  GNND_ASSIGN_OR_RETURN(SessionShape shape,
                        CheckOpenRequest(request, graph, dataset.summary,
                                         {limits.default_slots, limits.max_session_bytes, limits.default_producer}));
  s->device_ = shape.device;
  s->producer_ = shape.producer;
  s->schedule_ = shape.schedule;
  s->num_slots_ = shape.num_slots;
  s->schema_ = shape.schema;
  // What `gnnctl stats` says the seeds are: "train", "paper.train", "seed_ids (N)".
  s->seeds_ = request.seed_ids_size() > 0 ? absl::StrCat("seed_ids (", request.seed_ids_size(), ")") : request.split();
  if (!shape.layout.homogeneous && !shape.link)
    s->seeds_ = absl::StrCat(graph.schema.node_types[shape.seed_type].name, ".", s->seeds_);
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
  } else {  // from the request the session keeps (its seed ids and times), or the dataset
    s->split_ = SplitSeeds(s->request_, shape, graph, s->made_seeds_);
    s->split_times_ = SplitSeedTimes(s->request_, shape, graph, s->split_.size());
  }
  SessionPlan plan;
  plan.session_id = id;
  plan.dataset = &dataset;
  plan.SetShape(shape);
  plan.seed = request.seed();
  plan.num_slots = s->num_slots_;
  plan.device = s->device_;
  plan.trainer_uid = trainer_uid;
  if (plan.device.is_cuda() && plan.producer == BatchProducer::kHost && !dataset.features_staged()) {
    plan.staging_slots = std::max(plan.num_slots, backends.producer_threads());
  }
  plan.first_epoch = EpochSeeds(s->split_, s->schedule_, request.epoch(), s->split_times_);
  plan.first_epoch_number = request.epoch();
  plan.max_epoch_seeds =
      (static_cast<int64_t>(s->split_.size()) + s->schedule_.world_size - 1) / s->schedule_.world_size;
  s->wake_handle_->session = s.get();
  plan.wake = [handle = s->wake_handle_] { handle->Wake(); };
  plan.wake_after = [handle = s->wake_handle_, &pool](std::chrono::microseconds delay) {
    pool.PostAfter(delay, [handle] { handle->Wake(); });
  };
  s->steps_per_epoch_ = plan.first_epoch.num_steps();
  // Every byte the session holds counts, not its slots alone: the seed lists (the request's ids or edge
  // positions; this epoch's and the next's order, each with its seeds' positions; with slots_may_grow a copy
  // of the epoch's order) and the backend's buffers.
  // A temporal link session's given pair times and its negatives' index of the nodes by time count too.
  const uint64_t seed_bytes =
      sizeof(int64_t) *
          (static_cast<uint64_t>(request.seed_ids_size() + request.seed_times_size() + request.edge_label_time_size()) +
           s->made_seeds_.size() + (request.slots_may_grow() ? 5 : 4) * static_cast<uint64_t>(plan.max_epoch_seeds) +
           (s->split_times_.empty() ? 0 : 2) * static_cast<uint64_t>(plan.max_epoch_seeds)) +
      (shape.link ? NodesByTimeBytes(graph.schema, shape.link->seeds.relation, shape.sampling) : 0);
  // What the session's draw policies read that this dataset has not built yet (a temporal session's time orders):
  // built for it (before its first batch, by its backend or its slots' sizing) and kept with the dataset, so it
  // counts here.
  const uint64_t order_bytes = BatchMaker::PreparationBytes(plan.recipe());
  // The session's bytes with `plan`'s slots, or the refusal naming max_session_bytes.
  auto count_bytes = [&](const SessionShape& slots, absl::string_view least) -> absl::Status {
    uint64_t buffer_bytes = SlotBackends::BufferBytes(plan);
    s->memory_bytes_ = slots.slot_bytes + seed_bytes + order_bytes + buffer_bytes;
    if (s->memory_bytes_ > limits.max_session_bytes && plan.device.is_cuda() && plan.producer == BatchProducer::kAuto &&
        !plan.auto_over_memory) {
      plan.auto_over_memory = true;  // "auto" without host_gather's copies: sm, as the session would be
      buffer_bytes = SlotBackends::BufferBytes(plan);
      s->memory_bytes_ = slots.slot_bytes + seed_bytes + order_bytes + buffer_bytes;
    }
    if (s->memory_bytes_ <= limits.max_session_bytes) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("open: the session needs ", least, s->memory_bytes_, " bytes (slots ", slots.slot_bytes,
                     ", seed lists and time indexes ", seed_bytes,
                     order_bytes > 0 ? absl::StrCat(", time orders to build ", order_bytes) : "",
                     ", look-ahead and staging ", buffer_bytes, "), over the limit of ", limits.max_session_bytes,
                     " (max_session_bytes): lower batch_size, fanouts, num_slots or the dataset's look_ahead"));
  };
  // Slots sized by sampled batches: the limits are checked (and the share reserved) on their least size,
  // slots without feature rows, before any batch is sampled; then on the size the batches give.
  SessionShape least = shape;
  if (request.slots_may_grow()) {
    SetFeatureRows(graph, std::vector<int64_t>(shape.layout.capacity.max_nodes.size(), 0), least);
    plan.SetShape(least);
  }
  GNND_RETURN_IF_ERROR(count_bytes(least, request.slots_may_grow() ? "at least " : ""));
  if (limits.admission != nullptr) {
    GNND_ASSIGN_OR_RETURN(s->admitted_.emplace_back(), limits.admission->Reserve(trainer_uid, s->memory_bytes_));
  }
  if (request.slots_may_grow()) {
    GNND_ASSIGN_OR_RETURN(const std::vector<int64_t> rows,
                          SampledFeatureRows(plan, shape, plan.first_epoch, abandoned));
    SetFeatureRows(graph, rows, shape);
    plan.SetShape(shape);
    s->schema_ = shape.schema;
    GNND_RETURN_IF_ERROR(count_bytes(shape, ""));
    if (limits.admission != nullptr) {
      GNND_RETURN_IF_ERROR(limits.admission->Grow(*s->admitted_.back(), s->memory_bytes_));
    }
  }
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<SlotBackend> backend, backends.Create(plan));
  s->generations_.push_back(std::move(backend));
  s->ready_seeds_ = std::move(plan.first_epoch);  // the first epoch starts with it
  s->ready_seeds_epoch_ = request.epoch();
  s->shape_ = std::move(shape);
  s->plan_ = std::move(plan);
  s->backends_ = &backends;
  s->limits_ = limits;
  GNND_RETURN_IF_ERROR(s->DescribeSlots(*s->opened_.mutable_opened()));
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
  generations_.clear();  // waits for their work in flight, while the step state still exists
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
  std::vector<SlotBackend*> backends;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& b : generations_) backends.push_back(b.get());  // none if Open failed before making one
  }
  for (SlotBackend* b : backends) b->Stop();
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
      current()->Attached();  // the newest slots (earlier ones were attached before they were added)
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
      generations_[slot / num_slots_]->Release(slot % num_slots_);
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
      if (request_.slots_may_grow()) epoch_seeds_ = seeds;  // to make the epoch again in larger slots
      SlotBackend* backend = current();
      lock.unlock();
      const absl::Status started = backend->StartEpoch(epoch, seeds);
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
    seeds.emplace(split_, schedule_, epoch, split_times_);  // split_, split_times_ and schedule_ stay as they are
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
  SlotBackend* backend;
  int first_slot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    backend = current();
    first_slot = static_cast<int>(generations_.size() - 1) * num_slots_;
  }
  const absl::StatusOr<PollResult> polled = backend->Poll(*event.mutable_ready(), times);
  if (!polled.ok()) {
    LogError("session %d: %s", id_, polled.status().message());
    Stop(StopReason::kProducerFailed, polled.status());
    return true;
  }
  if (*polled == PollResult::kPending) return false;  // the backend, or a Release, wakes us
  if (*polled == PollResult::kBatch) {
    const v1::BatchReady& ready = event.ready();
    const std::span<const int64_t> counts(ready.counts().data(), static_cast<size_t>(ready.counts_size()));
    if (counts.size() == schema_.counts.size() && FirstArrayOverflowing(schema_, counts) >= 0) {
      backend->Stop();  // its slots stay as they are: the trainer may hold some
      if (absl::Status added = AddSlots(ready.step(), counts); !added.ok()) {
        LogError("session %d: %s", id_, added.message());
        Stop(StopReason::kProducerFailed, added);
      }
      return true;
    }
    event.mutable_ready()->set_slot(first_slot + ready.slot());
  }
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
        const uint64_t bytes = BatchBytes(schema_, {ready.counts().data(), static_cast<size_t>(ready.counts_size())});
        bytes_ += bytes;
        largest_batch_bytes_ = std::max(largest_batch_bytes_, bytes);
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

absl::Status Session::DescribeSlots(v1::SessionOpened& out) {
  out.set_session_id(id_);
  out.set_device(device_.ToString());
  GNND_RETURN_IF_ERROR(current()->Describe(out));
  out.set_num_slots(num_slots_);
  out.set_first_slot(static_cast<int32_t>(generations_.size() - 1) * num_slots_);
  *out.mutable_schema() = BatchSchemaToProto(schema_);
  // What API 1.0-1.2 clients read (gnnd_batch's seven arrays): a homogeneous node session's with features and
  // labels; one without them is read by its schema alone, as a link session is.
  const NodeTypeSchema& nodes = plan_.dataset->graph.schema.node_types[0];
  if (plan_.layout.homogeneous && !plan_.link && nodes.features >= 0 && nodes.labels >= 0) {
    const GraphData& graph = plan_.dataset->graph;
    *out.mutable_layout() = SlotLayoutToProto(HomogeneousLayoutOf(plan_.layout));
    out.set_feature_dim(graph.manifest.feature_dim());
    out.set_feature_dtype(graph.manifest.feature_dtype());
  }
  out.set_steps_per_epoch(steps_per_epoch_);
  return absl::OkStatus();
}

absl::Status Session::AddSlots(int64_t step, std::span<const int64_t> counts) {
  const GraphData& graph = plan_.dataset->graph;
  const DatasetSchema& schema = graph.schema;
  const std::vector<int64_t>& bound = shape_.layout.capacity.max_nodes;
  std::vector<int64_t> rows = plan_.feature_rows();
  std::string needs;  // what did not fit, for the messages
  for (size_t t = 0; t < rows.size(); ++t) {
    const int array =
        schema_.ArrayNamed(shape_.layout.homogeneous ? "features" : schema.node_types[t].name + ".features");
    if (array < 0) continue;
    const int64_t nodes = counts[schema_.arrays[array].count];
    if (nodes <= rows[t]) continue;
    absl::StrAppend(&needs, needs.empty() ? "" : ", ", nodes, " rows of ", schema_.arrays[array].name, " (slots hold ",
                    rows[t], ")");
    rows[t] = GrownRows(nodes, rows[t], bound[t]);
  }
  SessionShape shape = shape_;
  SetFeatureRows(graph, rows, shape);
  SessionPlan plan = plan_;
  plan.SetShape(shape);
  plan.first_epoch = epoch_seeds_;
  const uint64_t more = shape.slot_bytes + SlotBackends::BufferBytes(plan);
  const std::string what = absl::StrCat("step ", step, " of epoch ", epoch_, " needs ", needs);
  if (memory_bytes_ + more > limits_.max_session_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, ": larger slots (", shape.slot_bytes, " bytes) would bring the session to ", memory_bytes_ + more,
        " bytes, over the limit of ", limits_.max_session_bytes, " (max_session_bytes)"));
  }
  std::unique_ptr<Admission::Ticket> ticket;
  if (limits_.admission != nullptr) {
    const uid_t uid = peer_.known ? peer_.uid : ::geteuid();
    absl::StatusOr<std::unique_ptr<Admission::Ticket>> reserved = limits_.admission->Reserve(uid, more);
    if (!reserved.ok())
      return absl::Status(reserved.status().code(), absl::StrCat(what, ": ", reserved.status().message()));
    ticket = *std::move(reserved);
  }
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<SlotBackend> backend, backends_->Create(plan));
  EpochSeeds seeds = epoch_seeds_;
  seeds.set_first_step(step);  // the batch that did not fit, and on
  plan.first_epoch = {};
  v1::SessionEvent event;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_reason_) backend->Stop();
    generations_.push_back(std::move(backend));
    if (ticket) admitted_.push_back(std::move(ticket));
    memory_bytes_ += more;
    delivered_at_.resize(generations_.size() * num_slots_);
    shape_ = std::move(shape);
    plan_ = std::move(plan);
    schema_ = shape_.schema;
    GNND_RETURN_IF_ERROR(DescribeSlots(*event.mutable_slots_added()));
  }
  GNND_RETURN_IF_ERROR(current()->StartEpoch(epoch_, seeds));
  LogInfo("session %d: %s: %d slots of %d bytes added", id_, what, num_slots_, shape_.schema.slot_bytes);
  output_->Send(std::move(event));
  return absl::OkStatus();
}

v1::SessionStats Session::Stats() const {
  std::vector<SlotBackend*> backends;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& b : generations_) backends.push_back(b.get());
  }
  ProducerTimes times;
  for (SlotBackend* b : backends) {
    const ProducerTimes t = b->times();
    times.sample_seconds += t.sample_seconds;
    times.wait_seconds += t.wait_seconds;
  }
  // Under "auto", the newest slots' choice (they make the batches now).
  const std::optional<ProducerChoice> choice = backends.empty() ? std::nullopt : backends.back()->producer_choice();
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
  s.set_slot_bytes(schema_.slot_bytes);
  s.set_largest_batch_bytes(largest_batch_bytes_);
  s.set_slots_added(static_cast<uint32_t>(generations_.size() - 1));
  s.set_producer(BatchProducerName(choice ? choice->producer : producer_));
  if (choice) s.set_producer_choice(choice->why);
  return s;
}

}  // namespace gnnd
