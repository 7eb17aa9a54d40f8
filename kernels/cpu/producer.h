// Fills one epoch's batches ahead, on a pool of threads, into a fixed set of buffers ("slots"), and
// hands them out in step order. Each batch is a pure function of its step, so the output does not
// depend on the thread count. Nothing is allocated per batch: slots are filled in place and refilled
// when the consumer releases them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "common/batch.h"
#include "common/seeds.h"
#include "kernels/cpu/sampler.h"

namespace gnnd {

class CpuProducer {
 public:
  struct Ready {
    int slot;
    int64_t step;
  };

  // `slots` must each have room for the spec's capacity; `threads` >= 1 workers start at once.
  CpuProducer(const GraphData& graph, const std::vector<int32_t>& fanouts, uint64_t seed, uint64_t epoch,
              EpochSeeds seeds, std::vector<BatchView> slots, int threads);
  ~CpuProducer();
  CpuProducer(const CpuProducer&) = delete;
  CpuProducer& operator=(const CpuProducer&) = delete;

  int64_t num_steps() const { return seeds_.num_steps(); }
  // Blocks until the next step's batch is ready; nullopt once every step has been handed out.
  std::optional<Ready> Next();
  // The consumer is done with `slot`: it may be refilled.
  void Release(int slot);
  // Wakes every waiter: Next() returns nullopt from now on and the workers exit.
  void Stop();
  // Seconds spent sampling (all workers), and waiting for a free slot (the consumer holding them all).
  double sample_seconds() const;
  double wait_seconds() const;
  const BatchView& slot(int index) const { return slots_[index]; }

 private:
  void Work(CpuSampler sampler);

  const uint64_t epoch_;
  const EpochSeeds seeds_;
  const std::vector<BatchView> slots_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<int> free_slots_;
  std::map<int64_t, int> ready_;  // step -> slot
  int64_t next_to_claim_ = 0, next_to_deliver_ = 0;
  bool stopping_ = false;
  double sample_seconds_ = 0, wait_seconds_ = 0;  // guarded by mutex_
  std::vector<std::thread> workers_;
};

}  // namespace gnnd
