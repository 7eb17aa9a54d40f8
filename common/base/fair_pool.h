// One set of threads shared fairly by the tasks of many owners (trainers' uids). gnnd's CPU producers run
// every session's batches on one pool, and a batch, once started, runs to its end: on a plain FIFO pool a
// few heavy sessions of one uid, never read, kept every thread busy and another uid's first batch queued
// behind theirs for half a minute. Here each owner has its own queue, and the pool, of 2 x `share`
// threads, starts an owner's next task only where
//   - fewer than `share` tasks run in all and fewer than `share` of that owner's, or
//   - that owner runs none (up to 2 x `share` in all),
// picking among such owners the one running fewest, then the one served longest ago. So an owner alone
// runs as on a plain pool of `share` threads, and an owner with nothing running gets a thread at once while
// fewer than `share` others are busy: the cores are then shared by the kernel, not queued for.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/base/thread_pool.h"

namespace gnnd {

class FairPool {
 public:
  // RESOURCE_EXHAUSTED if the system refuses a thread (none is left running then).
  static absl::StatusOr<std::unique_ptr<FairPool>> Create(int share, absl::string_view what);
  // Runs everything posted (also what tasks post while it does), then joins the threads.
  ~FairPool();
  FairPool(const FairPool&) = delete;
  FairPool& operator=(const FairPool&) = delete;

  int share() const { return share_; }
  // Tasks posted to the queue are `owner`'s, started in the order posted. The queue may outlive nothing
  // but the pool; its threads() is the share.
  std::unique_ptr<TaskRunner> QueueFor(uid_t owner);
  // Tasks of `owner` running now (for tests and stats).
  int running(uid_t owner) const;

 private:
  class Queue;
  struct Owner {
    std::deque<std::function<void()>> pending;
    int running = 0;
    uint64_t last_started = 0;
  };
  explicit FairPool(int share) : share_(share) {}
  void Post(uid_t owner, std::function<void()> task);
  void Finished(uid_t owner);
  void StartLocked();  // with mutex_ held

  const int share_;
  // std::mutex, as everywhere in gnnd: the sanitizers see it (Debian's Abseil is not instrumented).
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  absl::flat_hash_map<uid_t, Owner> owners_;  // guarded by mutex_, as the counts below
  int running_ = 0;
  uint64_t started_ = 0;
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace gnnd
