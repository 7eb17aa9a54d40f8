#include "common/base/fair_pool.h"

#include <algorithm>
#include <utility>

#include "common/base/status.h"

namespace gnnd {

class FairPool::Queue : public TaskRunner {
 public:
  Queue(FairPool* pool, uid_t owner) : pool_(pool), owner_(owner) {}
  void Post(std::function<void()> task) override { pool_->Post(owner_, std::move(task)); }
  int threads() const override { return pool_->share(); }

 private:
  FairPool* pool_;
  uid_t owner_;
};

absl::StatusOr<std::unique_ptr<FairPool>> FairPool::Create(int share, absl::string_view what) {
  share = std::max(share, 1);
  auto fair = std::unique_ptr<FairPool>(new FairPool(share));
  GNND_ASSIGN_OR_RETURN(fair->pool_, ThreadPool::Create(2 * share, what));
  return fair;
}

FairPool::~FairPool() {
  {  // everything posted runs first (tasks may post more): then the threads are idle and join
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return running_ == 0 && owners_.empty(); });
  }
  pool_.reset();
}

std::unique_ptr<TaskRunner> FairPool::QueueFor(uid_t owner) { return std::make_unique<Queue>(this, owner); }

int FairPool::running(uid_t owner) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = owners_.find(owner);
  return it == owners_.end() ? 0 : it->second.running;
}

void FairPool::Post(uid_t owner, std::function<void()> task) {
  std::lock_guard<std::mutex> lock(mutex_);
  owners_[owner].pending.push_back(std::move(task));
  StartLocked();
}

void FairPool::Finished(uid_t owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  Owner& o = owners_[owner];
  --o.running;
  --running_;
  if (o.running == 0 && o.pending.empty()) owners_.erase(owner);
  StartLocked();
  if (running_ == 0 && owners_.empty()) idle_.notify_all();
}

void FairPool::StartLocked() {
  for (;;) {
    Owner* next = nullptr;
    uid_t next_uid = 0;
    for (auto& [uid, o] : owners_) {
      if (o.pending.empty()) continue;
      const bool may = (running_ < share_ && o.running < share_) || (o.running == 0 && running_ < 2 * share_);
      if (!may) continue;
      if (next == nullptr || o.running < next->running ||
          (o.running == next->running && o.last_started < next->last_started)) {
        next = &o;
        next_uid = uid;
      }
    }
    if (next == nullptr) return;
    std::function<void()> task = std::move(next->pending.front());
    next->pending.pop_front();
    ++next->running;
    ++running_;
    next->last_started = ++started_;
    pool_->Post([this, next_uid, task = std::move(task)] {
      task();
      Finished(next_uid);
    });
  }
}

}  // namespace gnnd
