// The two-stage producer (features on storage): several planners sample steps at once, their rows are
// announced in step order whatever order the samples finish in, and every announced step is gathered or
// withdrawn. Stages here are fakes that record what the producer asks of them.
#include "server/sessions/producer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "common/base/thread_pool.h"
#include "gtest/gtest.h"

namespace gnnd {
namespace {

using namespace std::chrono_literals;

struct Recorder {
  std::mutex mutex;
  std::condition_variable changed;
  int sampling = 0, most_at_once = 0;
  std::vector<int64_t> entry_step;  // the step each ring entry holds
  std::vector<int64_t> announced;   // steps in the order their rows were announced
  std::vector<int64_t> slot_step;   // the step each slot was filled with
  int gathered = 0, withdrawn = 0;
};

// Stages of `window` entries and `planners` planners: a sample waits (at most 200 ms) until `planners` samples
// run at once, then even steps take 20 ms longer than odd ones, so later steps often finish first.
std::shared_ptr<CpuProducer::Stages> FakeStages(Recorder& r, int window, int planners, int slots) {
  r.entry_step.assign(window, -1);
  r.slot_step.assign(slots, -1);
  auto stages = std::make_shared<CpuProducer::Stages>();
  stages->window = window;
  stages->planners = planners;
  stages->prefetch_distance = 0;
  stages->sample = [&r, planners](uint64_t, uint64_t batch_index, const SeedBatch&, int entry, int) {
    {
      std::unique_lock<std::mutex> lock(r.mutex);
      r.most_at_once = std::max(r.most_at_once, ++r.sampling);
      r.changed.notify_all();
      r.changed.wait_for(lock, 200ms, [&] { return r.sampling >= planners; });
      r.entry_step[entry] = static_cast<int64_t>(batch_index);
    }
    if (batch_index % 2 == 0) std::this_thread::sleep_for(20ms);
    std::lock_guard<std::mutex> lock(r.mutex);
    --r.sampling;
    return 0.0;
  };
  stages->announce = [&r](int entry) {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.announced.push_back(r.entry_step[entry]);
    return CpuProducer::Tickets{static_cast<uint64_t>(r.entry_step[entry])};
  };
  stages->prefetch = [](const CpuProducer::Tickets&) {};
  stages->gather = [&r](int entry, const CpuProducer::Tickets& tickets, int slot) -> absl::StatusOr<double> {
    std::lock_guard<std::mutex> lock(r.mutex);
    EXPECT_EQ(static_cast<uint64_t>(r.entry_step[entry]), tickets[0]) << "an entry gathered with another's tickets";
    r.slot_step[slot] = r.entry_step[entry];
    ++r.gathered;
    return 0.0;
  };
  stages->withdraw = [&r](const CpuProducer::Tickets&) {
    std::lock_guard<std::mutex> lock(r.mutex);
    ++r.withdrawn;
  };
  return stages;
}

EpochSeeds Steps(std::vector<int64_t>& ids, int steps) {
  ids.resize(steps);
  std::iota(ids.begin(), ids.end(), 0);
  return EpochSeeds(ids, {.seed = 1, .batch_size = 1}, 0);
}

TEST(TwoStageProducer, PlannersSampleAtOnceAndAnnounceInStepOrder) {
  constexpr int kWindow = 4, kPlanners = 3, kSlots = 2, kSteps = 24;
  Recorder r;
  std::vector<int64_t> ids;
  const std::unique_ptr<ThreadPool> workers = *ThreadPool::Create(6, "the test's producers");
  {
    CpuProducer producer(FakeStages(r, kWindow, kPlanners, kSlots), kSlots, 0, Steps(ids, kSteps), *workers, 2);
    int64_t expected = 0;
    while (auto ready = producer.Next()) {
      EXPECT_EQ(ready->step, expected++);
      int64_t in_slot = -1;
      {
        std::lock_guard<std::mutex> lock(r.mutex);  // not held into the producer, whose lock calls the stages
        in_slot = r.slot_step[ready->slot];
      }
      EXPECT_EQ(in_slot, ready->step) << "the slot holds its step's batch";
      producer.Release(ready->slot);
    }
    EXPECT_EQ(expected, kSteps);
    EXPECT_TRUE(producer.status().ok()) << producer.status();
  }
  std::vector<int64_t> in_order(kSteps);
  std::iota(in_order.begin(), in_order.end(), 0);
  EXPECT_EQ(r.announced, in_order) << "announcements in step order";
  EXPECT_EQ(r.most_at_once, kPlanners) << "planners sample at once, never more than there are";
  EXPECT_EQ(r.gathered, kSteps);
  EXPECT_EQ(r.withdrawn, 0);
}

TEST(TwoStageProducer, OnePlannerSamplesOneStepAtATime) {
  Recorder r;
  std::vector<int64_t> ids;
  const std::unique_ptr<ThreadPool> workers = *ThreadPool::Create(4, "the test's producers");
  {
    CpuProducer producer(FakeStages(r, 4, 1, 2), 2, 0, Steps(ids, 8), *workers, 2);
    while (auto ready = producer.Next()) producer.Release(ready->slot);
  }
  EXPECT_EQ(r.most_at_once, 1);
  EXPECT_EQ(r.announced.size(), 8u);
}

// A producer stopped or destroyed with steps sampled, announced and not gathered leaves none announced.
TEST(TwoStageProducer, StepsAnnouncedAndNeverGatheredAreWithdrawn) {
  for (bool stop_first : {false, true}) {
    Recorder r;
    std::vector<int64_t> ids;
    const std::unique_ptr<ThreadPool> workers = *ThreadPool::Create(6, "the test's producers");
    {
      CpuProducer producer(FakeStages(r, 6, 4, 2), 2, 0, Steps(ids, 40), *workers, 2);
      for (int i = 0; i < 3; ++i) {
        auto ready = producer.Next();
        ASSERT_TRUE(ready.has_value());
        producer.Release(ready->slot);
      }
      if (stop_first) producer.Stop();
    }
    std::lock_guard<std::mutex> lock(r.mutex);
    EXPECT_EQ(static_cast<int>(r.announced.size()), r.gathered + r.withdrawn) << "stop first: " << stop_first;
    EXPECT_GE(r.gathered, 3);
  }
}

}  // namespace
}  // namespace gnnd
