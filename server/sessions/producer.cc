#include "server/sessions/producer.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "common/base/status.h"

namespace gnnd {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

CpuProducer::CpuProducer(FillBatch fill, int num_slots, uint64_t epoch, EpochSeeds seeds, TaskRunner& workers,
                         int max_parallel, std::function<void()> on_ready)
    : CpuProducer(std::move(fill), nullptr, num_slots, epoch, std::move(seeds), workers, max_parallel,
                  std::move(on_ready)) {}

CpuProducer::CpuProducer(std::shared_ptr<const Stages> stages, int num_slots, uint64_t epoch, EpochSeeds seeds,
                         TaskRunner& workers, int max_parallel, std::function<void()> on_ready)
    : CpuProducer(nullptr, std::move(stages), num_slots, epoch, std::move(seeds), workers, max_parallel,
                  std::move(on_ready)) {}

CpuProducer::CpuProducer(FillBatch fill, std::shared_ptr<const Stages> stages, int num_slots, uint64_t epoch,
                         EpochSeeds seeds, TaskRunner& workers, int max_parallel, std::function<void()> on_ready)
    : fill_(std::move(fill)),
      stages_(std::move(stages)),
      epoch_(epoch),
      seeds_(std::move(seeds)),
      workers_(workers),
      on_ready_(std::move(on_ready)) {
  for (int i = num_slots - 1; i >= 0; --i) free_slots_.push_back(i);
  for (int i = 0; i < std::max(max_parallel, 1); ++i) free_samplers_.push_back(i);
  next_to_claim_ = next_to_deliver_ = next_to_plan_ = next_to_announce_ = next_to_prefetch_ = seeds_.first_step();
  if (stages_ != nullptr) {
    for (int i = std::max(stages_->window, 1) - 1; i >= 0; --i) free_entries_.push_back(i);
    for (int i = std::max(stages_->planners, 1) - 1; i >= 0; --i) free_planners_.push_back(i);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ScheduleLocked();
}

namespace {

// A look-ahead ring entry holds what sampling writes: the batch without features and labels.
BatchLayout RingLayout(const BatchRecipe& recipe) {
  return BatchLayout::Make(recipe.layout.capacity, recipe.sampling, WithoutNodeData(recipe.graph->schema));
}

}  // namespace

absl::StatusOr<CpuProducer::FillBatch> CpuProducer::InMemory(const BatchRecipe& recipe, HostTargets targets,
                                                             int max_parallel) {
  struct Worker {
    BatchMaker maker;
    LinkBatch pairs;
  };
  GNND_ASSIGN_OR_RETURN(std::vector<BatchMaker> makers, BatchMaker::Create(recipe, max_parallel));
  auto workers = std::make_shared<std::vector<Worker>>();
  for (BatchMaker& maker : makers) workers->push_back({std::move(maker), {}});
  std::optional<PairArrays> pairs = recipe.layout.pairs;
  return
      [workers, pairs, targets = std::move(targets)](int sampler, uint64_t epoch, uint64_t batch_index,
                                                     const SeedBatch& seeds, int slot) -> absl::StatusOr<SampleTimes> {
        Worker& w = (*workers)[sampler];
        SampleTimes times;
        GNND_RETURN_IF_ERROR(w.maker.Sample(epoch, batch_index, seeds, targets.views[slot], true, w.pairs, &times));
        if (pairs) {
          const auto written = std::chrono::steady_clock::now();
          (*targets.link_counts)[slot] = WriteLinkArrays(w.pairs, *pairs, targets.bases[slot]);
          times.sample += SecondsSince(written);
        }
        return times;
      };
}

size_t CpuProducer::RingEntryBytes(const BatchRecipe& recipe) { return RingLayout(recipe).total_bytes; }

absl::StatusOr<std::shared_ptr<const CpuProducer::Stages>> CpuProducer::OnStorage(
    const BatchRecipe& recipe, HostTargets targets, std::vector<RowTier*> caches, int window, int planners,
    int prefetch_distance, std::vector<std::shared_ptr<const std::vector<bool>>> held_elsewhere) {
  window = std::max(window, 1);
  planners = std::clamp(planners, 1, window);  // more could not sample: each needs a free ring entry
  struct Planners {
    std::vector<BatchMaker> makers;  // one per planning task at once
    std::vector<LinkBatch> entries;  // a link batch's pairs, per ring entry (its graph is in the ring)
  };
  auto planning = std::make_shared<Planners>();
  GNND_ASSIGN_OR_RETURN(planning->makers, BatchMaker::Create(recipe, planners));
  planning->entries.resize(window);
  GraphStage stage;
  stage.sample = [planning](uint64_t epoch, uint64_t batch_index, const SeedBatch& seeds, int entry, int planner,
                            const BatchView& graph) {
    return planning->makers[planner].Sample(epoch, batch_index, seeds, graph, false, planning->entries[entry], nullptr);
  };
  stage.finish = [planning, pairs = recipe.layout.pairs, targets](int entry, int slot) {
    // Reads the labels and node attributes only: any planner's sampler may (it is not sampling with them).
    const CpuSampler& sampler = planning->makers[0].sampler();
    sampler.GatherNodeAttributes(targets.views[slot]);
    if (pairs) {
      (*targets.link_counts)[slot] = WriteLinkArrays(planning->entries[entry], *pairs, targets.bases[slot]);
    } else {
      sampler.GatherLabels(targets.views[slot]);
    }
  };
  return TwoStages(RingLayout(recipe), std::move(stage), std::move(targets.views), std::move(caches), window, planners,
                   prefetch_distance, std::move(held_elsewhere));
}

std::shared_ptr<const CpuProducer::Stages> CpuProducer::TwoStages(
    const BatchLayout& ring_layout, GraphStage stage, std::vector<BatchView> slots, std::vector<RowTier*> caches,
    int window, int planners, int prefetch_distance,
    std::vector<std::shared_ptr<const std::vector<bool>>> held_elsewhere) {
  auto stages = std::make_shared<Stages>();
  stages->window = std::max(window, 1);
  stages->planners = planners;  // OnStorage's: one sampler each, at most the window
  stages->prefetch_distance = std::clamp(prefetch_distance, 0, stages->window);
  struct Ring {
    std::vector<std::unique_ptr<std::byte[]>> buffers;
    std::vector<BatchView> views;
    std::vector<absl::Status> sampled;  // each entry's sampling (a link batch's may fail: strict negatives)
  };
  auto ring = std::make_shared<Ring>();
  for (int i = 0; i < stages->window; ++i) {
    // Not zeroed: an entry is laid out at the batch's bound (LABOR's is several times its batches), and only the
    // pages its batches write should take memory (a storage session runs under a memory limit beside its cache).
    ring->buffers.push_back(std::make_unique_for_overwrite<std::byte[]>(ring_layout.total_bytes));
    ring->views.push_back(BatchView::At(ring->buffers.back().get(), ring_layout));
  }
  ring->sampled.resize(stages->window);
  held_elsewhere.resize(caches.size());
  // The rows of type t this cache serves: all of the batch's, or those no other tier holds; each once (a
  // disjoint batch may hold a node in several subgraphs).
  const auto own_rows = [held_elsewhere](const BatchView& batch, size_t t, std::vector<int64_t>& scratch) {
    const std::span<const int64_t> ids(batch.types[t].node_ids, static_cast<size_t>(batch.num_nodes(t)));
    const bool repeats = batch.types[t].batch != nullptr;
    if (held_elsewhere[t] == nullptr && !repeats) return ids;
    scratch.clear();
    for (int64_t id : ids) {
      if (held_elsewhere[t] == nullptr || !(*held_elsewhere[t])[id]) scratch.push_back(id);
    }
    if (repeats) {
      std::sort(scratch.begin(), scratch.end());
      scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
    }
    return std::span<const int64_t>(scratch);
  };
  stages->sample = [ring, sample = std::move(stage.sample)](uint64_t epoch, uint64_t batch_index,
                                                            const SeedBatch& seeds, int entry, int planner) {
    const auto start = std::chrono::steady_clock::now();
    ring->sampled[entry] = sample(epoch, batch_index, seeds, entry, planner, ring->views[entry]);
    return SecondsSince(start);
  };
  // Tickets are per type, 0 for a type whose features are not on storage. A batch whose sampling failed
  // announces no rows; its gather reports the failure.
  auto announce_scratch = std::make_shared<std::vector<int64_t>>();  // announcements come one at a time
  stages->announce = [ring, caches, own_rows, announce_scratch](int entry) {
    Tickets tickets(caches.size(), 0);
    for (size_t t = 0; t < caches.size(); ++t) {
      if (caches[t] == nullptr) continue;
      tickets[t] = caches[t]->Announce(ring->sampled[entry].ok() ? own_rows(ring->views[entry], t, *announce_scratch)
                                                                 : std::span<const int64_t>());
    }
    return tickets;
  };
  stages->prefetch = [caches](const Tickets& tickets) {
    for (size_t t = 0; t < caches.size(); ++t) {
      if (caches[t] != nullptr) (void)caches[t]->Prefetch(tickets[t]);  // errors: at the gather
    }
  };
  stages->withdraw = [caches](const Tickets& tickets) {
    for (size_t t = 0; t < caches.size(); ++t) {
      if (caches[t] != nullptr) caches[t]->Withdraw(tickets[t]);
    }
  };
  stages->gather = [ring, finish = std::move(stage.finish), slots = std::move(slots), caches, own_rows, held_elsewhere,
                    withdraw = stages->withdraw](int entry, const Tickets& tickets,
                                                 int slot) -> absl::StatusOr<double> {
    const auto start = std::chrono::steady_clock::now();
    if (!ring->sampled[entry].ok()) {
      withdraw(tickets);
      return ring->sampled[entry];
    }
    const BatchView& batch = slots[slot];
    CopyBatchGraph(ring->views[entry], batch);
    for (size_t t = 0; t < caches.size(); ++t) {
      if (batch.types[t].features != nullptr && batch.num_nodes(t) > batch.types[t].feature_rows) {
        withdraw(tickets);  // more rows than the slot holds: not delivered (the session adds larger slots)
        finish(entry, slot);
        return SecondsSince(start);
      }
    }
    absl::Status status;
    thread_local std::vector<int64_t> scratch;  // gathers run on several workers at once
    thread_local std::vector<std::byte> distinct_rows;
    for (size_t t = 0; t < caches.size(); ++t) {
      if (caches[t] == nullptr) continue;  // a type without features
      const std::span<const int64_t> rows = own_rows(batch, t, scratch);
      const size_t row_bytes = caches[t]->row_bytes();
      auto* features = static_cast<std::byte*>(batch.types[t].features);
      const int64_t* ids = batch.types[t].node_ids;
      const int64_t n = batch.num_nodes(t);
      const bool repeats = batch.types[t].batch != nullptr;  // rows holds each once, ascending
      if (repeats) distinct_rows.resize(rows.size() * row_bytes);
      if (absl::Status gathered = caches[t]->Gather(tickets[t], rows, repeats ? distinct_rows.data() : features);
          !gathered.ok() && status.ok()) {
        status = gathered;  // every type's tickets are consumed still
      }
      if (!status.ok()) continue;
      const auto held = [&](int64_t i) { return held_elsewhere[t] != nullptr && (*held_elsewhere[t])[ids[i]]; };
      if (repeats) {  // each node's row from the distinct ones
        int64_t own = 0;
        for (int64_t i = 0; i < n; ++i) {
          if (held(i)) continue;
          const size_t k = static_cast<size_t>(std::lower_bound(rows.begin(), rows.end(), ids[i]) - rows.begin());
          std::memcpy(features + i * row_bytes, distinct_rows.data() + k * row_bytes, row_bytes);
          ++own;
        }
        if (held_elsewhere[t] != nullptr) caches[t]->CountHeldElsewhere(static_cast<uint64_t>(n - own));
        continue;
      }
      if (held_elsewhere[t] == nullptr) continue;
      caches[t]->CountHeldElsewhere(static_cast<uint64_t>(n) - rows.size());
      // The rows were read to the front; move each to its node's place, last first (a row only moves back).
      size_t k = rows.size();
      for (int64_t i = n - 1; i >= 0 && k > 0; --i) {
        if (held(i)) continue;
        if (--k != static_cast<size_t>(i)) std::memcpy(features + i * row_bytes, features + k * row_bytes, row_bytes);
      }
    }
    GNND_RETURN_IF_ERROR(status);
    finish(entry, slot);
    return SecondsSince(start);
  };
  return stages;
}

CpuProducer::~CpuProducer() {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = true;
  changed_.notify_all();
  changed_.wait(lock, [&] { return in_flight_ == 0; });                             // tasks refer to this object
  for (const auto& [step, planned] : planned_) stages_->withdraw(planned.tickets);  // never to be gathered
}

void CpuProducer::ScheduleLocked() {
  while (stages_ != nullptr && !stopping_ && next_to_plan_ < seeds_.num_steps() && !free_entries_.empty() &&
         !free_planners_.empty()) {
    const int64_t step = next_to_plan_++;
    const int entry = free_entries_.back(), planner = free_planners_.back();
    free_entries_.pop_back();
    free_planners_.pop_back();
    ++in_flight_;
    workers_.Post([this, step, entry, planner] { Plan(step, entry, planner); });
  }
  if (stages_ != nullptr && !prefetching_ && !stopping_) {
    next_to_prefetch_ = std::max(next_to_prefetch_, next_to_claim_);  // claimed steps gather their own rows
    auto planned = planned_.find(next_to_prefetch_);
    if (next_to_prefetch_ < next_to_claim_ + stages_->prefetch_distance && planned != planned_.end()) {
      ++next_to_prefetch_;
      prefetching_ = true;
      ++in_flight_;
      workers_.Post([this, tickets = planned->second.tickets] { Prefetch(tickets); });
    }
  }
  while (!stopping_ && next_to_claim_ < seeds_.num_steps() && PlannedLocked(next_to_claim_) && !free_slots_.empty() &&
         !free_samplers_.empty()) {
    const int64_t step = next_to_claim_++;
    const int slot = free_slots_.back(), sampler = free_samplers_.back();
    free_slots_.pop_back();
    free_samplers_.pop_back();
    ++in_flight_;
    workers_.Post([this, step, slot, sampler] { Fill(step, slot, sampler); });
  }
  // Steps left but every slot with the consumer: the time until a release is lost to it. Count it.
  const bool starved = !stopping_ && next_to_claim_ < seeds_.num_steps() && free_slots_.empty();
  if (starved && !starved_since_) starved_since_ = std::chrono::steady_clock::now();
}

void CpuProducer::Plan(int64_t step, int entry, int planner) {
  const double seconds = stages_->sample(epoch_, seeds_.batch_index(step), seeds_.at(step), entry, planner);
  std::unique_lock<std::mutex> lock(mutex_);
  free_planners_.push_back(planner);
  sample_seconds_ += seconds;
  if (stopping_) {  // never to be gathered
    free_entries_.push_back(entry);
  } else {
    sampled_[step] = {entry, seconds};
  }
  while (!announcing_ && !stopping_ && !sampled_.empty() && sampled_.begin()->first == next_to_announce_) {
    announcing_ = true;
    const auto [announced, sample] = *sampled_.begin();
    sampled_.erase(sampled_.begin());
    ++next_to_announce_;
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    Tickets tickets = stages_->announce(sample.first);
    const double announcing = SecondsSince(start);
    lock.lock();
    announcing_ = false;
    sample_seconds_ += announcing;
    if (stopping_) {  // never to be gathered: its rows need not stay announced while this producer lingers
      stages_->withdraw(tickets);
      free_entries_.push_back(sample.first);
    } else {
      planned_[announced] = {sample.first, std::move(tickets), sample.second + announcing};
    }
    ScheduleLocked();  // the planned step may be gathered, or prefetched, while this task announces the next
    changed_.notify_all();
  }
  ScheduleLocked();
  --in_flight_;
  changed_.notify_all();
}

void CpuProducer::Prefetch(const Tickets& tickets) {
  stages_->prefetch(tickets);  // read ahead while the gathers before it run
  std::lock_guard<std::mutex> lock(mutex_);
  prefetching_ = false;
  ScheduleLocked();
  --in_flight_;
  changed_.notify_all();
}

void CpuProducer::Fill(int64_t step, int slot, int sampler) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<SampleTimes> times;
  if (stages_ != nullptr) {
    Planned planned;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = planned_.find(step);
      planned = std::move(it->second);
      planned_.erase(it);
    }
    const absl::StatusOr<double> gathered = stages_->gather(planned.entry, planned.tickets, slot);
    if (gathered.ok()) {
      times = SampleTimes{planned.seconds, *gathered};
    } else {
      times = gathered.status();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    free_entries_.push_back(planned.entry);
  } else {
    times = fill_(sampler, epoch_, seeds_.batch_index(step), seeds_.at(step), slot);
  }
  const double seconds = SecondsSince(start);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_samplers_.push_back(sampler);
    sample_seconds_ += seconds;
    if (times.ok()) {
      ready_.emplace(step, std::make_pair(slot, *times));
    } else {  // the first error stops production; Poll reports it
      if (status_.ok()) status_ = times.status();
      stopping_ = true;
      free_slots_.push_back(slot);
    }
    ScheduleLocked();
    changed_.notify_all();
  }
  // Still counted in flight, so the destructor waits for this call too.
  if (on_ready_) on_ready_();
  std::lock_guard<std::mutex> lock(mutex_);
  --in_flight_;
  changed_.notify_all();
}

void CpuProducer::Stop() {
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = true;
  // Planned steps not claimed by a fill are never gathered now: their announcements go at once (a stopped
  // producer may be kept a while: a session's earlier slots are).
  for (auto it = planned_.lower_bound(next_to_claim_); it != planned_.end();) {
    stages_->withdraw(it->second.tickets);
    free_entries_.push_back(it->second.entry);
    it = planned_.erase(it);
  }
  for (const auto& [unused, sample] : sampled_) free_entries_.push_back(sample.first);
  sampled_.clear();
  changed_.notify_all();
}

double CpuProducer::sample_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sample_seconds_;
}

double CpuProducer::wait_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return wait_seconds_;
}

std::optional<CpuProducer::Ready> CpuProducer::Next() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return DoneLocked() || ready_.contains(next_to_deliver_); });
  return TakeLocked();
}

std::optional<CpuProducer::Ready> CpuProducer::TryNext() {
  std::lock_guard<std::mutex> lock(mutex_);
  return TakeLocked();
}

absl::Status CpuProducer::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

bool CpuProducer::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return DoneLocked();
}

std::optional<CpuProducer::Ready> CpuProducer::TakeLocked() {
  if (DoneLocked()) return std::nullopt;
  auto it = ready_.find(next_to_deliver_);
  if (it == ready_.end()) return std::nullopt;
  Ready ready{it->second.first, it->first, it->second.second};
  ready_.erase(it);
  ++next_to_deliver_;
  return ready;
}

void CpuProducer::Release(int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_slots_.push_back(slot);
  if (starved_since_) {
    wait_seconds_ += SecondsSince(*starved_since_);
    starved_since_.reset();
  }
  ScheduleLocked();
}

}  // namespace gnnd
