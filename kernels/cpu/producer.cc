#include "kernels/cpu/producer.h"

namespace gnnd {

CpuProducer::CpuProducer(const GraphData& graph, const std::vector<int32_t>& fanouts, uint64_t seed, uint64_t epoch,
                         EpochSeeds seeds, std::vector<BatchView> slots, int threads)
    : epoch_(epoch), seeds_(std::move(seeds)), slots_(std::move(slots)) {
  for (int i = static_cast<int>(slots_.size()) - 1; i >= 0; --i) free_slots_.push_back(i);
  for (int t = 0; t < std::max(threads, 1); ++t)
    workers_.emplace_back(&CpuProducer::Work, this, CpuSampler(graph, fanouts, seed));
}

CpuProducer::~CpuProducer() {
  Stop();
  for (std::thread& t : workers_) t.join();
}

void CpuProducer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
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

void CpuProducer::Work(CpuSampler sampler) {
  for (;;) {
    int64_t step;
    int slot;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Waiting with steps left but every slot taken is time lost to the consumer: count it.
      const bool starved = free_slots_.empty() && next_to_claim_ < seeds_.num_steps();
      const auto wait_start = std::chrono::steady_clock::now();
      changed_.wait(lock, [&] { return stopping_ || (!free_slots_.empty() && next_to_claim_ < seeds_.num_steps()); });
      if (stopping_) return;
      if (starved)
        wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - wait_start).count();
      step = next_to_claim_++;
      slot = free_slots_.back();
      free_slots_.pop_back();
    }
    const auto start = std::chrono::steady_clock::now();
    sampler.Sample(epoch_, seeds_.batch_index(step), seeds_.batch(step), slots_[slot]);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_.emplace(step, slot);
      sample_seconds_ += seconds;
    }
    changed_.notify_all();
  }
}

std::optional<CpuProducer::Ready> CpuProducer::Next() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(
      lock, [&] { return stopping_ || next_to_deliver_ >= seeds_.num_steps() || ready_.contains(next_to_deliver_); });
  if (stopping_ || next_to_deliver_ >= seeds_.num_steps()) return std::nullopt;
  auto it = ready_.find(next_to_deliver_);
  Ready ready{it->second, it->first};
  ready_.erase(it);
  ++next_to_deliver_;
  return ready;
}

void CpuProducer::Release(int slot) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    free_slots_.push_back(slot);
  }
  changed_.notify_all();
}

}  // namespace gnnd
