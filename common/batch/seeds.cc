#include "common/batch/seeds.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/philox.h"
#include "common/batch/sampling.h"

namespace gnnd {

absl::Status CheckSeedScheduleSpec(const SeedScheduleSpec& spec) {
  // A batch's seeds are int32-indexed in the layout, and the step count must not wrap.
  constexpr int64_t kMaxBatchSize = (int64_t{1} << 31) - 1;
  if (spec.batch_size < 1 || spec.batch_size > kMaxBatchSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size = ", spec.batch_size, " (must be 1 to ", kMaxBatchSize, ")"));
  }
  if (spec.world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("world_size = ", spec.world_size, " (must be at least 1)"));
  }
  if (spec.rank < 0 || spec.rank >= spec.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank = ", spec.rank, " (must be in [0, world_size = ", spec.world_size, "))"));
  }
  return absl::OkStatus();
}

std::vector<int64_t> EpochPermutation(uint64_t seed, uint64_t epoch, int64_t n) {
  const SamplingKey key = MakeSamplingKey(seed, epoch, RandomPurpose::kSeedPermutation);
  std::vector<std::pair<uint64_t, int64_t>> keyed(n);
  for (int64_t i = 0; i < n; i += 2) {  // one Philox block gives two 64-bit keys
    const Philox4x32 w =
        Philox4x32_10({{static_cast<uint32_t>(i >> 1), static_cast<uint32_t>(static_cast<uint64_t>(i) >> 33), 0, 0}},
                      key.key0, key.key1);
    keyed[i] = {(static_cast<uint64_t>(w.v[0]) << 32) | w.v[1], i};
    if (i + 1 < n) keyed[i + 1] = {(static_cast<uint64_t>(w.v[2]) << 32) | w.v[3], i + 1};
  }
  std::sort(keyed.begin(), keyed.end());
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = keyed[i].second;
  return perm;
}

EpochSeeds::EpochSeeds(std::span<const int64_t> split, const SeedScheduleSpec& spec, uint64_t epoch,
                       std::span<const int64_t> times)
    : batch_size_(spec.batch_size), rank_(spec.rank), world_size_(spec.world_size) {
  const int64_t n = static_cast<int64_t>(split.size());
  const int64_t w = spec.world_size;
  std::vector<int64_t> order;
  if (spec.shuffle) {
    order = EpochPermutation(spec.seed, epoch, n);
  } else {
    order.resize(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
  }
  // Positions in the (padded or truncated) epoch order that this rank takes.
  const int64_t per_rank = spec.drop_last ? n / w : (n + w - 1) / w;
  ids_.reserve(per_rank);
  positions_.reserve(per_rank);
  for (int64_t k = 0; k < per_rank; ++k) {
    const int64_t position = (k * w + spec.rank) % std::max<int64_t>(n, 1);  // wraps onto the padding
    if (n == 0) continue;
    ids_.push_back(split[order[position]]);
    positions_.push_back(order[position]);
    if (!times.empty()) times_.push_back(times[order[position]]);
  }
  num_steps_ = spec.drop_last ? static_cast<int64_t>(ids_.size()) / batch_size_
                              : (static_cast<int64_t>(ids_.size()) + batch_size_ - 1) / batch_size_;
}

std::span<const int64_t> EpochSeeds::batch(int64_t step) const {
  const int64_t begin = step * batch_size_;
  const int64_t end = std::min<int64_t>(begin + batch_size_, static_cast<int64_t>(ids_.size()));
  return std::span<const int64_t>(ids_).subspan(begin, end - begin);
}

std::span<const int64_t> EpochSeeds::times(int64_t step) const {
  if (times_.empty()) return {};
  const std::span<const int64_t> ids = batch(step);
  return std::span<const int64_t>(times_).subspan(static_cast<size_t>(ids.data() - ids_.data()), ids.size());
}

}  // namespace gnnd
