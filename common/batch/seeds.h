// Which seed nodes go into which batch: a seeded per-epoch permutation of a split (or the split's own
// order when shuffle is off), rank r of W taking perm[r::W], and the same number of steps on every
// rank so that DDP never waits on a rank that ran out.
//   drop_last = false: as torch's DistributedSampler, the permutation is padded with its own first
//     (W - n % W) % W ids so every rank gets ceil(n / W); each rank's last batch may be short.
//   drop_last = true: the tail is dropped so every rank gets floor(n / W) ids and only full batches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace gnnd {

// One batch's seeds: node ids (a link batch's: positions of its positives in their split) and, where the
// session's seeds come with times, each one's time (else empty).
struct SeedBatch {
  std::span<const int64_t> ids, times;
};

struct SeedScheduleSpec {
  uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = false;
  int64_t batch_size = 1;
  int32_t rank = 0;
  int32_t world_size = 1;
};

absl::Status CheckSeedScheduleSpec(const SeedScheduleSpec& spec);

// The permutation of positions [0, n) for an epoch: positions sorted by a 64-bit Philox key each
// (ties by position). A pure function of (seed, epoch, n).
std::vector<int64_t> EpochPermutation(uint64_t seed, uint64_t epoch, int64_t n);

// One rank's seeds for one epoch.
class EpochSeeds {
 public:
  EpochSeeds() = default;  // no seeds, no steps
  // `times`: empty, or each split entry's time (a temporal session's given seed times), kept beside its id.
  EpochSeeds(std::span<const int64_t> split, const SeedScheduleSpec& spec, uint64_t epoch,
             std::span<const int64_t> times = {});

  int64_t num_steps() const { return num_steps_; }
  // The step production starts at: 0, or where a session made its epoch again in larger slots.
  int64_t first_step() const { return first_step_; }
  void set_first_step(int64_t step) { first_step_ = step; }
  // The seeds of `step` (0 <= step < num_steps()).
  std::span<const int64_t> batch(int64_t step) const;
  // Their times (empty where the split came without).
  std::span<const int64_t> times(int64_t step) const;
  SeedBatch at(int64_t step) const { return {batch(step), times(step)}; }
  // All of this rank's seeds for the epoch, in order (batch(step) is a slice of it).
  std::span<const int64_t> all() const { return ids_; }
  std::span<const int64_t> all_times() const { return times_; }
  // The global batch index of `step` (step * world_size + rank): what the sampling rule is keyed on.
  uint64_t batch_index(int64_t step) const { return static_cast<uint64_t>(step) * world_size_ + rank_; }
  // Each of all()'s seeds' position in the split it came from (PyG's input_id), moved out: a backend that
  // gets these seeds afterwards does not carry them.
  std::vector<int64_t> TakePositions() { return std::move(positions_); }

 private:
  std::vector<int64_t> ids_;        // this rank's seeds, in order
  std::vector<int64_t> times_;      // their times, or none
  std::vector<int64_t> positions_;  // their positions in the split
  int64_t batch_size_ = 1, num_steps_ = 0, first_step_ = 0;
  int32_t rank_ = 0, world_size_ = 1;
};

}  // namespace gnnd
