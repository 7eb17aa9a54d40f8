// The CPU producers' pool shared by uids: an owner alone uses `share` threads; an owner with nothing running
// starts at once while another holds its whole share with long tasks queued behind; and everything posted
// runs before the pool is gone.
#include "common/base/fair_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"

namespace gnnd {
namespace {

using namespace std::chrono_literals;

// Tasks that block until opened.
class Gate {
 public:
  void Wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }
  bool WaitForWaiting(int n) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, 10s, [&] { return waiting_ >= n; });
  }
  int waiting() {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(FairPool, AnOwnerAloneRunsItsShareAtOnceAndNoMore) {
  Gate gate;  // before the pool: its tasks use it until the pool is gone
  auto pool = FairPool::Create(3, "test");
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::unique_ptr<TaskRunner> queue = (*pool)->QueueFor(1000);
  EXPECT_EQ(queue->threads(), 3);
  for (int i = 0; i < 8; ++i) queue->Post([&] { gate.Wait(); });
  ASSERT_TRUE(gate.WaitForWaiting(3));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(gate.waiting(), 3);  // six threads, but one owner's share is three
  EXPECT_EQ((*pool)->running(1000), 3);
  gate.Open();
}

TEST(FairPool, AnIdleOwnerStartsAtOnceBesideAnOwnerHoldingItsShareWithMoreQueued) {
  Gate gate;  // before the pool: its tasks use them until the pool is gone
  std::atomic<int> light_done{0};
  auto pool = FairPool::Create(2, "test");
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::unique_ptr<TaskRunner> heavy = (*pool)->QueueFor(1), light = (*pool)->QueueFor(2), third = (*pool)->QueueFor(3);
  for (int i = 0; i < 20; ++i) heavy->Post([&] { gate.Wait(); });  // never-read sessions' long batches
  ASSERT_TRUE(gate.WaitForWaiting(2));
  light->Post([&] { ++light_done; });
  third->Post([&] { ++light_done; });
  for (int i = 0; i < 200 && light_done.load() < 2; ++i) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(light_done.load(), 2);  // neither waited for the heavy owner's running or queued tasks
  EXPECT_EQ((*pool)->running(1), 2);
  gate.Open();
}

TEST(FairPool, BusyOwnersShareThePoolTheOneRunningFewestFirst) {
  Gate gate;  // before the pool: its tasks use it until the pool is gone
  auto pool = FairPool::Create(2, "test");
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::unique_ptr<TaskRunner> a = (*pool)->QueueFor(1), b = (*pool)->QueueFor(2);
  for (int i = 0; i < 6; ++i) a->Post([&] { gate.Wait(); });
  ASSERT_TRUE(gate.WaitForWaiting(2));
  for (int i = 0; i < 6; ++i) b->Post([&] { gate.Wait(); });
  ASSERT_TRUE(gate.WaitForWaiting(3));
  std::this_thread::sleep_for(50ms);
  // b runs one beside a's two (its own first thread); a third would exceed both rules
  EXPECT_EQ((*pool)->running(1), 2);
  EXPECT_EQ((*pool)->running(2), 1);
  gate.Open();
}

TEST(FairPool, EverythingPostedRunsBeforeThePoolIsGoneAlsoWhatTasksPost) {
  std::atomic<int> ran{0};
  {
    auto pool = FairPool::Create(2, "test");
    ASSERT_TRUE(pool.ok()) << pool.status();
    std::shared_ptr<TaskRunner> queue = (*pool)->QueueFor(7);
    for (int i = 0; i < 50; ++i) {
      queue->Post([&ran, queue] {
        ++ran;
        queue->Post([&ran] { ++ran; });
      });
    }
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace gnnd
