// Fills one epoch's batches ahead into a fixed set of buffers ("slots") and hands them out in step order.
// Each batch is a pure function of its step, so the output does not depend on how many threads work on
// it. Nothing is allocated per batch: slots are filled in place and refilled when the consumer releases
// them. The work runs on a shared ThreadPool, one task per batch, at most `max_parallel` at a time;
// a producer with no free slot holds no thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/thread_pool.h"
#include "common/batch/batch.h"
#include "common/batch/layout.h"
#include "common/batch/recipe.h"
#include "common/batch/seeds.h"
#include "common/dataset/row_tier.h"
#include "kernels/cpu/batch_maker.h"

namespace gnnd {

// Where a producer's batches go: each slot's arrays and start, and per slot the (pairs, positives) of the
// link batch in it (link sessions).
struct HostTargets {
  std::vector<BatchView> views;
  std::vector<std::byte*> bases;
  std::shared_ptr<std::vector<std::pair<int64_t, int64_t>>> link_counts;
};

class CpuProducer {
 public:
  struct Ready {
    int slot;
    int64_t step;
    SampleTimes times;
  };

  // Fills slot `slot` with the batch of `seeds` (batch `batch_index` of `epoch`) using the scratch of
  // sampler `sampler` (in [0, max_parallel): one batch at a time uses each). Homogeneous or typed: the
  // producer only schedules.
  // An error stops production (status()).
  using FillBatch = std::function<absl::StatusOr<SampleTimes>(int sampler, uint64_t epoch, uint64_t batch_index,
                                                              const SeedBatch& seeds, int slot)>;
  // Production in two stages, for features on storage: batches are sampled up to `window` steps ahead of
  // their gather into a ring of `window` entries (by up to `planners` tasks at once, each with its own
  // sampler) and their rows announced in step order (the cache's look-ahead is exact only so); the rows of
  // the next `prefetch_distance` steps are read ahead (one task at a time); the gather of a step copies its
  // ring entry into the slot and reads the rows still missing. Prefetching less deep than the window keeps
  // the cache for rows in use: a row read ahead displaces one whose next use lies beyond the window, often a
  // hot row. Several planners: one core's sampling bounded a GPU session on storage whose draw costs more
  // than the disk's share of a batch (LABOR with batch_dependency; bench/NOTES.md, "Where that session waits").
  // A planned batch's announcements: one ticket per feature table it reads (RowTier::Announce).
  using Tickets = std::vector<uint64_t>;
  struct Stages {
    int window = 1;
    int planners = 1;
    int prefetch_distance = 2;
    // Samples batch `batch_index` of `epoch` around `seeds` into ring entry `entry` with sampler `planner`
    // (distinct planners may run at once): returns the seconds it took.
    std::function<double(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds, int entry, int planner)> sample;
    // Announces a sampled entry's rows to the caches (one call at a time, in step order): returns the tickets.
    std::function<Tickets(int entry)> announce;
    std::function<void(const Tickets&)> prefetch;  // reads ahead what it can (best effort)
    // Fills slot `slot` from ring entry `entry`, whose rows were announced with `tickets`.
    std::function<absl::StatusOr<double>(int entry, const Tickets& tickets, int slot)> gather;
    std::function<void(const Tickets&)> withdraw;  // planned and never gathered
  };

  // Work starts at once on `workers`. `on_ready`, if set, is called on a worker thread after each batch is
  // complete (it must not call back into the producer's destructor).
  CpuProducer(FillBatch fill, int num_slots, uint64_t epoch, EpochSeeds seeds, TaskRunner& workers, int max_parallel,
              std::function<void()> on_ready = nullptr);
  // The same in two stages.
  CpuProducer(std::shared_ptr<const Stages> stages, int num_slots, uint64_t epoch, EpochSeeds seeds,
              TaskRunner& workers, int max_parallel, std::function<void()> on_ready = nullptr);
  // Batches with the features in memory, one stage: one sampler per parallel batch fills each slot whole.
  static absl::StatusOr<FillBatch> InMemory(const BatchRecipe& recipe, HostTargets targets, int max_parallel);
  // Batches in two stages, each node type's features read through caches[type] (null: the type has none, or
  // they are in memory): ring entries laid out like the recipe's layout without features and labels. Rows
  // marked in held_elsewhere[type] (a GPU hot tier's, which fills them later; empty or null: none) are
  // neither announced nor read: their place in the batch's features is left undefined. A link batch whose
  // strict negatives fail fails at its gather.
  static absl::StatusOr<std::shared_ptr<const Stages>> OnStorage(
      const BatchRecipe& recipe, HostTargets targets, std::vector<RowTier*> caches, int window, int planners,
      int prefetch_distance = 2, std::vector<std::shared_ptr<const std::vector<bool>>> held_elsewhere = {});
  // The bytes of one entry of OnStorage's look-ahead ring: what a session with features on storage holds per
  // step of its window.
  static size_t RingEntryBytes(const BatchRecipe& recipe);
  // Waits for this producer's batches in progress.
  ~CpuProducer();
  CpuProducer(const CpuProducer&) = delete;
  CpuProducer& operator=(const CpuProducer&) = delete;

  int64_t num_steps() const { return seeds_.num_steps(); }
  // Blocks until the next step's batch is ready; nullopt once every step has been handed out.
  std::optional<Ready> Next();
  // The next step's batch if it is ready, without waiting; nullopt if it is not (yet, or at all: done()).
  std::optional<Ready> TryNext();
  // Every step handed out, or stopped.
  bool done() const;
  // The error that stopped production (a gather that failed), or OK.
  absl::Status status() const;
  // The consumer is done with `slot`: it may be refilled.
  void Release(int slot);
  // Wakes every waiter: Next() returns nullopt from now on and no new batch is started.
  void Stop();
  // Seconds spent sampling (all tasks), and with steps left but every slot held by the consumer.
  double sample_seconds() const;
  double wait_seconds() const;

 private:
  CpuProducer(FillBatch fill, std::shared_ptr<const Stages> stages, int num_slots, uint64_t epoch, EpochSeeds seeds,
              TaskRunner& workers, int max_parallel, std::function<void()> on_ready);
  // What the first stage samples into a ring entry (the batch without its feature rows), and what the
  // gather adds to the slot after the rows (a node batch's labels, a link batch's pairs).
  struct GraphStage {
    std::function<absl::Status(uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds, int entry, int planner,
                               const BatchView& graph)>
        sample;
    std::function<void(int entry, int slot)> finish;
  };
  // The two stages around `stage`: ring entries laid out by `ring_layout`, rows read through `caches`.
  static std::shared_ptr<const Stages> TwoStages(const BatchLayout& ring_layout, GraphStage stage,
                                                 std::vector<BatchView> slots, std::vector<RowTier*> caches, int window,
                                                 int planners, int prefetch_distance,
                                                 std::vector<std::shared_ptr<const std::vector<bool>>> held_elsewhere);
  // Starts tasks while there are steps, free slots and idle samplers (and the planning task while there
  // are steps to plan and free ring entries). Called with mutex_ held.
  void ScheduleLocked();
  void Fill(int64_t step, int slot, int sampler);
  // Samples `step` into `entry`, then announces every sampled step that is next in order (unless another
  // planning task is announcing: it will).
  void Plan(int64_t step, int entry, int planner);
  void Prefetch(const Tickets& tickets);
  // The step may be filled now: planned already, or there is no planning stage.
  bool PlannedLocked(int64_t step) const { return stages_ == nullptr || planned_.contains(step); }
  bool DoneLocked() const { return stopping_ || next_to_deliver_ >= seeds_.num_steps(); }
  std::optional<Ready> TakeLocked();

  const FillBatch fill_;
  const std::shared_ptr<const Stages> stages_;  // null: one stage
  const uint64_t epoch_;
  const EpochSeeds seeds_;
  TaskRunner& workers_;
  const std::function<void()> on_ready_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> free_slots_, free_samplers_;
  std::map<int64_t, std::pair<int, SampleTimes>> ready_;  // step -> slot, its times
  int64_t next_to_claim_ = 0, next_to_deliver_ = 0;
  int in_flight_ = 0;
  bool stopping_ = false;
  std::optional<std::chrono::steady_clock::time_point> starved_since_;
  double sample_seconds_ = 0, wait_seconds_ = 0;  // guarded by mutex_
  absl::Status status_;
  // The planning stage (stages_): the next step to sample and to announce, free ring entries and planners,
  // steps sampled and not yet announced, planned (announced) steps.
  struct Planned {
    int entry;
    Tickets tickets;
    double seconds;
  };
  int64_t next_to_plan_ = 0, next_to_announce_ = 0, next_to_prefetch_ = 0;
  bool announcing_ = false, prefetching_ = false;
  std::vector<int> free_entries_, free_planners_;
  std::map<int64_t, std::pair<int, double>> sampled_;  // step -> entry, seconds
  std::map<int64_t, Planned> planned_;
};

}  // namespace gnnd
