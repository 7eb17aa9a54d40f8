// The session protocol and epoch loop over the CPU slot backend, driven through an in-memory stream the
// way a trainer drives the gRPC one: every batch is checked against the reference sampler in the slots
// the trainer maps; protocol errors and shutdowns reach the trainer as Shutdown events.
#include "server/sessions/session.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "common/base/status.h"
#include "common/wire/batch_proto.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd {
namespace {

using testing::ScratchDir;

// The trainer's end of a session's stream: the session sends events and ends it; the test, as the
// trainer, awaits them and passes requests to the session.
class FakeOutput final : public SessionOutput {
 public:
  void Send(v1::SessionEvent event) override {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_FALSE(ended_) << "an event after End: " << event.DebugString();
    events_.push_back(std::move(event));
    changed_.notify_all();
  }
  void End(const absl::Status& status) override {
    std::lock_guard<std::mutex> lock(mutex_);
    EXPECT_FALSE(ended_) << "End twice";
    ended_ = true;
    status_ = status;
    changed_.notify_all();
  }

  // The next event; fails the test if none comes within 10 s.
  v1::SessionEvent Await() {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool arrived = changed_.wait_for(lock, std::chrono::seconds(10), [&] { return !events_.empty(); });
    EXPECT_TRUE(arrived) << "no event from the session";
    if (!arrived) return {};
    v1::SessionEvent event = events_.front();
    events_.pop_front();
    return event;
  }
  // The status the stream ended with; fails the test if it does not end within 10 s.
  absl::Status AwaitEnd() {
    std::unique_lock<std::mutex> lock(mutex_);
    const bool ended = changed_.wait_for(lock, std::chrono::seconds(10), [&] { return ended_; });
    EXPECT_TRUE(ended) << "the session did not end";
    return status_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<v1::SessionEvent> events_;
  bool ended_ = false;
  absl::Status status_;
};

v1::SessionRequest Release(int slot) {
  v1::SessionRequest r;
  r.mutable_release()->set_slot(slot);
  return r;
}

class SessionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    auto spec = dataset::PresetSpec("tiny", 0.2);
    ASSERT_TRUE(spec.ok());
    ASSERT_TRUE(dataset::Generate(*spec, {.seed = 3, .threads = 2}, *dir_ / "g").ok());
    registry_ = new DatasetRegistry(/*keep_segments=*/false, 2);
    v1::DatasetConfig dataset;
    dataset.set_name(Name());
    dataset.set_path(*dir_ / "g");
    ASSERT_TRUE(registry_->Load(dataset, nullptr).ok());
  }
  static void TearDownTestSuite() {
    registry_->UnloadAll();
    delete registry_;
    delete dir_;
  }
  static std::string Name() { return absl::StrCat("session-test-", ::getpid()); }

  v1::OpenSession Request() const {
    v1::OpenSession r;
    r.set_dataset(Name());
    r.set_split("train");
    r.set_batch_size(100);
    r.add_fanouts(5);
    r.add_fanouts(3);
    r.set_seed(17);
    r.set_num_slots(2);
    return r;
  }
  absl::StatusOr<std::unique_ptr<Session>> Open(const v1::OpenSession& request, ThreadPool* setup = nullptr) {
    GNND_ASSIGN_OR_RETURN(auto lease, registry_->Acquire(request.dataset()));
    return Session::Open(1, request, std::move(lease), SessionLimits{}, PeerCredentials{}, *backends_, *pool_,
                         setup != nullptr ? *setup : *pool_);
  }

  void ExpectRefused(const v1::SessionRequest& bad, const std::string& reason, absl::StatusCode code);

  static ScratchDir* dir_;
  static DatasetRegistry* registry_;
  std::unique_ptr<SlotBackends> backends_ = *SlotBackends::Create({.producer_threads = 2});
  // One thread for the sessions' steps: a step that waited would stop every session.
  std::unique_ptr<ThreadPool> pool_ = *ThreadPool::Create(1, "the sessions' steps");
};
ScratchDir* SessionTest::dir_ = nullptr;
DatasetRegistry* SessionTest::registry_ = nullptr;

// Another session's setup (an open, an epoch's seed order: a sort of the split) takes a thread of the
// setup pool for long; this session's batches flow meanwhile, and its next epoch starts once its own seed
// order is made there.
TEST_F(SessionTest, StepsNeverWaitForTheSetupPool) {
  const std::unique_ptr<ThreadPool> setup = *ThreadPool::Create(1, "the sessions' setups");
  FakeOutput stream;
  auto session = Open(Request(), setup.get());
  ASSERT_TRUE(session.ok()) << session.status();
  std::mutex mutex;
  std::condition_variable changed;
  bool busy = true;
  setup->Post([&] {  // another session's long setup
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return !busy; });
  });
  (*session)->Start(stream);
  const v1::SessionEvent opened = stream.Await();
  ASSERT_TRUE(opened.has_opened());
  v1::SessionRequest attached;
  attached.mutable_attached();
  (*session)->OnRequest(attached);
  for (int64_t step = 0; step < opened.opened().steps_per_epoch(); ++step) {  // the first epoch, setup busy
    const v1::SessionEvent event = stream.Await();
    ASSERT_TRUE(event.has_ready()) << event.DebugString();
    EXPECT_EQ(event.ready().step(), step);
    (*session)->OnRequest(Release(event.ready().slot()));
  }
  ASSERT_TRUE(stream.Await().has_epoch_end());
  v1::SessionRequest next;
  next.mutable_next_epoch()->set_epoch(1);
  (*session)->OnRequest(next);
  {
    std::lock_guard<std::mutex> lock(mutex);
    busy = false;
  }
  changed.notify_all();
  const v1::SessionEvent event = stream.Await();  // epoch 1's seeds, made on the setup pool
  ASSERT_TRUE(event.has_ready()) << event.DebugString();
  EXPECT_EQ(event.ready().epoch(), 1u);
  EXPECT_EQ(event.ready().step(), 0);
  session->reset();
}

// A session that ends while its next epoch's seed order waits on the setup pool is freed without it.
TEST_F(SessionTest, EndingWhileTheNextEpochIsPreparedWaitsForNothing) {
  const std::unique_ptr<ThreadPool> setup = *ThreadPool::Create(1, "the sessions' setups");
  FakeOutput stream;
  auto session = Open(Request(), setup.get());
  ASSERT_TRUE(session.ok()) << session.status();
  (*session)->Start(stream);
  ASSERT_TRUE(stream.Await().has_opened());
  v1::SessionRequest attached;
  attached.mutable_attached();
  (*session)->OnRequest(attached);
  for (;;) {
    const v1::SessionEvent event = stream.Await();
    if (event.has_epoch_end()) break;
    ASSERT_TRUE(event.has_ready()) << event.DebugString();
    (*session)->OnRequest(Release(event.ready().slot()));
  }
  v1::SessionRequest next;
  next.mutable_next_epoch()->set_epoch(1);
  (*session)->OnRequest(next);
  (*session)->OnTrainerClosed();
  EXPECT_TRUE(stream.AwaitEnd().ok());
  session->reset();  // waits for the seed order task, which sees the session stopping
}

TEST_F(SessionTest, EpochsArriveInStepOrderAndEqualTheReference) {
  const v1::OpenSession request = Request();
  FakeOutput stream;  // outlives the session
  auto session = Open(request);
  ASSERT_TRUE(session.ok()) << session.status();
  (*session)->Start(stream);

  const v1::SessionEvent opened = stream.Await();
  ASSERT_TRUE(opened.has_opened());
  auto layout = SlotLayoutFromProto(opened.opened().layout());
  ASSERT_TRUE(layout.ok()) << layout.status();
  const std::string shm = "/" + opened.opened().shm_name();
  const int fd = ::shm_open(shm.c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  const size_t bytes = layout->total_bytes * opened.opened().num_slots();
  void* slots = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  ASSERT_NE(slots, MAP_FAILED);
  v1::SessionRequest attached;
  attached.mutable_attached();
  (*session)->OnRequest(attached);

  auto lease = registry_->Acquire(Name());
  ASSERT_TRUE(lease.ok());
  const GraphData& graph = (*lease)->dataset().graph;
  CpuSampler reference(graph, {.fanouts = {{5, 3}}}, 17);
  HomogeneousBuffer expected(*layout);
  const auto* train = static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]);
  const std::span<const int64_t> split(train, graph.manifest.num_train());
  uint64_t served = 0;
  for (uint64_t epoch : {0, 1}) {
    if (epoch > 0) {
      v1::SessionRequest next;
      next.mutable_next_epoch()->set_epoch(epoch);
      (*session)->OnRequest(next);
    }
    const EpochSeeds seeds(split, {.seed = 17, .batch_size = 100}, epoch);
    ASSERT_EQ(opened.opened().steps_per_epoch(), seeds.num_steps());
    for (int64_t step = 0; step < seeds.num_steps(); ++step) {
      const v1::SessionEvent event = stream.Await();
      ASSERT_TRUE(event.has_ready()) << event.DebugString();
      const v1::BatchReady& ready = event.ready();
      EXPECT_EQ(ready.epoch(), epoch);
      EXPECT_EQ(ready.step(), step);
      reference.Sample(epoch, seeds.batch_index(step), seeds.batch(step), expected.view());
      const HomogeneousView got =
          HomogeneousView::At(static_cast<std::byte*>(slots) + ready.slot() * layout->total_bytes, *layout);
      EXPECT_EQ(ready.num_nodes(), got.num_nodes());
      EXPECT_EQ(ready.num_edges(), got.num_edges());
      ASSERT_EQ(testing::BatchContents(got, layout->feature_row_bytes),
                testing::BatchContents(expected.view(), layout->feature_row_bytes))
          << "epoch " << epoch << " step " << step;
      served += BatchArrayBytes(got.num_nodes(), got.num_edges(), got.num_seeds(), 2, layout->feature_row_bytes);
      (*session)->OnRequest(Release(ready.slot()));
    }
    const v1::SessionEvent end = stream.Await();
    ASSERT_TRUE(end.has_epoch_end()) << end.DebugString();
    EXPECT_EQ(end.epoch_end().epoch(), epoch);
  }
  // The slot segment's name went away once the trainer attached.
  EXPECT_LT(::shm_open(shm.c_str(), O_RDONLY, 0), 0);
  const v1::SessionStats stats = (*session)->Stats();
  EXPECT_EQ(stats.batches(), 2 * static_cast<uint64_t>(opened.opened().steps_per_epoch()));
  EXPECT_EQ(stats.bytes(), served);
  EXPECT_EQ(stats.device(), "cpu");

  (*session)->OnTrainerClosed();
  const absl::Status result = stream.AwaitEnd();
  EXPECT_TRUE(result.ok()) << result;
  ::munmap(slots, bytes);
}

// With slots_may_grow the slots hold the feature rows of the batches sampled at open; single-seed batches over
// two full hops vary far more than those cover, so slots are added. The trainer holds each batch until the next
// one has come (so it holds one of the first slots when more are added) and reads every batch where the
// event says, in the slots the events described: all equal the reference, over two epochs.
TEST_F(SessionTest, BatchesLargerThanTheSlotsComeInSlotsAddedForThem) {
  v1::OpenSession request = Request();
  request.set_batch_size(1);
  request.clear_fanouts();
  request.add_fanouts(-1);
  request.add_fanouts(-1);
  request.set_slots_may_grow(true);
  FakeOutput stream;
  auto session = Open(request);
  ASSERT_TRUE(session.ok()) << session.status();
  (*session)->Start(stream);

  struct Generation {
    HomogeneousLayout layout;
    void* base = nullptr;
    size_t bytes = 0;
  };
  std::vector<Generation> generations;
  auto map = [&](const v1::SessionOpened& described) {
    absl::StatusOr<HomogeneousLayout> layout = SlotLayoutFromProto(described.layout());
    ASSERT_TRUE(layout.ok()) << layout.status();
    EXPECT_EQ(described.first_slot(), static_cast<int>(generations.size()) * 2);
    const int fd = ::shm_open(("/" + described.shm_name()).c_str(), O_RDWR, 0);
    ASSERT_GE(fd, 0);
    Generation& g = generations.emplace_back();
    g.layout = *layout;
    g.bytes = layout->total_bytes * described.num_slots();
    g.base = ::mmap(nullptr, g.bytes, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    ASSERT_NE(g.base, MAP_FAILED);
    v1::SessionRequest attached;
    attached.mutable_attached();
    (*session)->OnRequest(attached);
  };
  const v1::SessionEvent opened = stream.Await();
  ASSERT_TRUE(opened.has_opened());
  map(opened.opened());
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_LT(generations[0].layout.capacity.feature_rows(), generations[0].layout.capacity.max_nodes);

  auto lease = registry_->Acquire(Name());
  ASSERT_TRUE(lease.ok());
  const GraphData& graph = (*lease)->dataset().graph;
  CpuSampler reference(graph, {.fanouts = {{-1, -1}}}, 17);
  HomogeneousCapacity bound = generations[0].layout.capacity;
  bound.max_feature_rows = -1;  // the reference holds every row
  HomogeneousBuffer expected(HomogeneousLayout::Make(bound, 2, generations[0].layout.feature_row_bytes));
  const auto* train = static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]);
  const std::span<const int64_t> split(train, graph.manifest.num_train());
  int64_t most_nodes = 0;
  for (uint64_t epoch : {0, 1}) {
    if (epoch > 0) {
      v1::SessionRequest next;
      next.mutable_next_epoch()->set_epoch(epoch);
      (*session)->OnRequest(next);
    }
    const EpochSeeds seeds(split, {.seed = 17, .batch_size = 1}, epoch);
    int held = -1;
    for (int64_t step = 0; step < seeds.num_steps(); ++step) {
      v1::SessionEvent event = stream.Await();
      while (event.has_slots_added()) {
        map(event.slots_added());
        ASSERT_FALSE(HasFatalFailure());
        event = stream.Await();
      }
      ASSERT_TRUE(event.has_ready()) << event.DebugString();
      const v1::BatchReady& ready = event.ready();
      ASSERT_EQ(ready.step(), step);
      const Generation& g = generations.at(ready.slot() / 2);
      const HomogeneousView got =
          HomogeneousView::At(static_cast<std::byte*>(g.base) + (ready.slot() % 2) * g.layout.total_bytes, g.layout);
      reference.Sample(epoch, seeds.batch_index(step), seeds.batch(step), expected.view());
      ASSERT_EQ(testing::BatchContents(got, g.layout.feature_row_bytes),
                testing::BatchContents(expected.view(), g.layout.feature_row_bytes))
          << "epoch " << epoch << " step " << step;
      most_nodes = std::max(most_nodes, got.num_nodes());
      if (held >= 0) (*session)->OnRequest(Release(held));
      held = ready.slot();
    }
    (*session)->OnRequest(Release(held));
    const v1::SessionEvent end = stream.Await();
    ASSERT_TRUE(end.has_epoch_end()) << end.DebugString();
  }
  const v1::SessionStats stats = (*session)->Stats();
  EXPECT_GE(stats.slots_added(), 1u);
  EXPECT_EQ(stats.slots_added() + 1, generations.size());
  EXPECT_EQ(stats.slot_bytes(), generations.back().layout.total_bytes);
  EXPECT_GE(generations.back().layout.capacity.feature_rows(), most_nodes);
  (*session)->OnTrainerClosed();
  EXPECT_TRUE(stream.AwaitEnd().ok());
  for (const Generation& g : generations) ::munmap(g.base, g.bytes);
}

// Sends `bad` on a fresh session's stream: the session must end, telling the trainer `reason` and `code`.
void SessionTest::ExpectRefused(const v1::SessionRequest& bad, const std::string& reason, absl::StatusCode code) {
  FakeOutput stream;
  auto session = Open(Request());
  ASSERT_TRUE(session.ok()) << session.status();
  (*session)->Start(stream);
  ASSERT_TRUE(stream.Await().has_opened());
  (*session)->OnRequest(bad);
  v1::SessionEvent event;
  do {
    event = stream.Await();
  } while (event.has_ready());
  EXPECT_TRUE(event.has_shutdown()) << event.DebugString();
  EXPECT_EQ(event.shutdown().reason(), reason);
  EXPECT_EQ(event.shutdown().code(), static_cast<int>(code));
  EXPECT_EQ(stream.AwaitEnd().code(), code);
}

TEST_F(SessionTest, ProtocolErrorEndsTheSessionAndTellsTheTrainer) {
  ExpectRefused(Release(7), "release.slot = 7 (not a batch this trainer holds)",  // a slot never given out
                absl::StatusCode::kInvalidArgument);
}

TEST_F(SessionTest, SecondOpenOnTheStreamIsAFailedPrecondition) {
  v1::SessionRequest open;
  *open.mutable_open() = Request();
  ExpectRefused(open, "open: the session is already open", absl::StatusCode::kFailedPrecondition);
}

TEST_F(SessionTest, DaemonShutdownEndsASessionWaitingForSlots) {
  v1::OpenSession request = Request();
  request.set_num_slots(1);
  FakeOutput stream;
  auto session = Open(request);
  ASSERT_TRUE(session.ok()) << session.status();
  (*session)->Start(stream);
  ASSERT_TRUE(stream.Await().has_opened());
  ASSERT_TRUE(stream.Await().has_ready());  // the one slot, never released: the producer now waits
  (*session)->Stop(StopReason::kDaemonShutdown, absl::UnavailableError("gnnd is shutting down"));
  const v1::SessionEvent event = stream.Await();
  ASSERT_TRUE(event.has_shutdown()) << event.DebugString();
  EXPECT_EQ(event.shutdown().reason(), "gnnd is shutting down");
  EXPECT_EQ(event.shutdown().code(), static_cast<int>(absl::StatusCode::kUnavailable));
  EXPECT_EQ(stream.AwaitEnd().code(), absl::StatusCode::kUnavailable);
}

// The sessions' pool has one thread here: a session whose trainer holds every slot must not keep it,
// or the second session would never get a batch.
TEST_F(SessionTest, ASessionWaitingForItsTrainerHoldsNoThread) {
  v1::OpenSession request = Request();
  request.set_num_slots(1);
  FakeOutput idle_stream, busy_stream;
  auto idle = Open(request);
  ASSERT_TRUE(idle.ok()) << idle.status();
  (*idle)->Start(idle_stream);
  ASSERT_TRUE(idle_stream.Await().has_opened());
  ASSERT_TRUE(idle_stream.Await().has_ready());  // held, never released

  auto busy = Open(request);
  ASSERT_TRUE(busy.ok()) << busy.status();
  (*busy)->Start(busy_stream);
  const v1::SessionEvent opened = busy_stream.Await();
  ASSERT_TRUE(opened.has_opened());
  for (int64_t step = 0; step < opened.opened().steps_per_epoch(); ++step) {
    const v1::SessionEvent event = busy_stream.Await();
    ASSERT_TRUE(event.has_ready()) << event.DebugString();
    EXPECT_EQ(event.ready().step(), step);
    (*busy)->OnRequest(Release(event.ready().slot()));
  }
  EXPECT_TRUE(busy_stream.Await().has_epoch_end());
  EXPECT_EQ((*idle)->Stats().batches(), 1u);
}

TEST_F(SessionTest, BadDeviceIsRefusedNamingTheField) {
  v1::OpenSession request = Request();
  request.set_device("gpu");
  auto session = Open(request);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().message(), "open.device = 'gpu' (cpu or cuda:N)");
  request.set_device("cuda:63");  // no such GPU here, or no CUDA in this build
  session = Open(request);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(session.status().message().find("open.device = 'cuda:63'"), std::string::npos) << session.status();
}

// One GPU thread draws a node's fanout of its in-list, in O(fanout^2): a CUDA session is refused a fanout that
// would hold a batch for minutes, naming the relation; -1, the CPU and LABOR are not bounded.
TEST_F(SessionTest, CudaFanoutsBeyondWhatOneThreadDrawsAreRefused) {
  auto lease = registry_->Acquire(Request().dataset());
  ASSERT_TRUE(lease.ok()) << lease.status();
  const GraphData& graph = (*lease)->dataset().graph;
  const GraphSummary hub{{100000}};  // as if a node had 100 000 in-edges
  v1::OpenSession request = Request();
  request.clear_fanouts();
  request.add_fanouts(kMaxCudaFanout + 1);
  request.set_device("cuda:0");
  const SlotLimits limits{2, uint64_t{1} << 40};
  auto refused = CheckOpenRequest(request, graph, hub, limits);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find(absl::StrCat("draws 4097 at hop 1 of in-lists of up to 100000: a CUDA "
                                                         "session draws at most 4096")),
            std::string::npos)
      << refused.status();
  request.set_device("cpu");
  EXPECT_TRUE(CheckOpenRequest(request, graph, hub, limits).ok());
  request.set_device("cuda:0");
  request.set_labor(true);
  EXPECT_TRUE(CheckOpenRequest(request, graph, hub, limits).ok());
  request.set_labor(false);
  request.set_fanouts(0, -1);
  EXPECT_TRUE(CheckOpenRequest(request, graph, hub, limits).ok());
  request.set_fanouts(0, kMaxCudaFanout);
  EXPECT_TRUE(CheckOpenRequest(request, graph, hub, limits).ok());
  // Made on the host, a CUDA session draws on the CPU: not bounded.
  request.set_fanouts(0, kMaxCudaFanout + 1);
  request.set_producer("host");
  EXPECT_TRUE(CheckOpenRequest(request, graph, hub, limits).ok());
}

// open.producer: where a CUDA session's batches are made, "sm" or "host", else gnnd's default; a CPU session's
// are the host's; anything else is refused naming the field.
TEST_F(SessionTest, ProducerIsTheRequestsOrTheDaemonsDefault) {
  auto lease = registry_->Acquire(Request().dataset());
  ASSERT_TRUE(lease.ok()) << lease.status();
  const GraphData& graph = (*lease)->dataset().graph;
  const GraphSummary summary = GraphSummary::Of(graph);
  v1::OpenSession request = Request();
  request.set_device("cuda:0");
  auto producer_of = [&](const SlotLimits& limits) -> absl::StatusOr<BatchProducer> {
    GNND_ASSIGN_OR_RETURN(SessionShape shape, CheckOpenRequest(request, graph, summary, limits));
    return shape.producer;
  };
  const SlotLimits sm_default{2, uint64_t{1} << 40, BatchProducer::kSm};
  const SlotLimits host_default{2, uint64_t{1} << 40, BatchProducer::kHost};
  EXPECT_EQ(*producer_of(sm_default), BatchProducer::kSm);
  EXPECT_EQ(*producer_of(host_default), BatchProducer::kHost);
  request.set_producer("host");
  EXPECT_EQ(*producer_of(sm_default), BatchProducer::kHost);
  request.set_producer("sm");
  EXPECT_EQ(*producer_of(host_default), BatchProducer::kSm);
  request.set_producer("gpu");
  EXPECT_EQ(producer_of(sm_default).status().message(), "open.producer = 'gpu' (sm, host_gather, host or auto)");
  request.set_producer("auto");
  EXPECT_EQ(*producer_of(sm_default), BatchProducer::kAuto);
  request.set_device("cpu");
  EXPECT_EQ(*producer_of(sm_default), BatchProducer::kHost);  // a CPU session's "auto" is the host
  request.set_producer("");
  EXPECT_EQ(*producer_of(sm_default), BatchProducer::kHost);
  request.set_producer("host");
  EXPECT_EQ(*producer_of(sm_default), BatchProducer::kHost);
  request.set_producer("sm");
  EXPECT_EQ(producer_of(sm_default).status().message(),
            "open.producer = 'sm' (a CPU session's batches are made on the host: host, auto or empty)");
  // The session says where its batches are made.
  request.set_producer("");
  auto session = Open(request);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ((*session)->Stats().producer(), "host");
}

}  // namespace
}  // namespace gnnd
