#include "common/batch/seeds.h"

#include <map>
#include <numeric>
#include <set>

#include "gtest/gtest.h"

namespace gnnd {
namespace {

std::vector<int64_t> Split(int64_t n) {
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = 1000 + 3 * i;  // not 0..n-1: ids, not positions
  return ids;
}

TEST(EpochPermutation, IsAPermutationThatChangesPerEpoch) {
  const auto a = EpochPermutation(7, 0, 1001), b = EpochPermutation(7, 1, 1001);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1001);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(a, b);
  EXPECT_NE(a, iota);
  EXPECT_EQ(a, EpochPermutation(7, 0, 1001));
  EXPECT_NE(a, EpochPermutation(8, 0, 1001));
}

struct Case {
  int64_t n, batch_size;
  int32_t world;
  bool drop_last;
  friend void PrintTo(const Case& c, std::ostream* os) {
    *os << "n=" << c.n << " batch=" << c.batch_size << " world=" << c.world << " drop_last=" << c.drop_last;
  }
};

class SeedSchedule : public ::testing::TestWithParam<Case> {};

TEST_P(SeedSchedule, EveryIdOncePerEpochAndEqualStepsOnEveryRank) {
  const auto [n, batch_size, world, drop_last] = GetParam();
  const std::vector<int64_t> split = Split(n);
  std::map<int64_t, int> seen;
  std::set<uint64_t> batch_indices;
  int64_t steps = -1;
  for (int32_t rank = 0; rank < world; ++rank) {
    SeedScheduleSpec spec{.seed = 5,
                          .shuffle = true,
                          .drop_last = drop_last,
                          .batch_size = batch_size,
                          .rank = rank,
                          .world_size = world};
    ASSERT_TRUE(CheckSeedScheduleSpec(spec).ok());
    EpochSeeds seeds(split, spec, 3);
    if (steps < 0) steps = seeds.num_steps();
    ASSERT_EQ(seeds.num_steps(), steps) << "rank " << rank;
    for (int64_t s = 0; s < steps; ++s) {
      const auto batch = seeds.batch(s);
      ASSERT_GE(batch.size(), 1u);
      ASSERT_LE(static_cast<int64_t>(batch.size()), batch_size);
      if (drop_last || s + 1 < steps) {
        ASSERT_EQ(static_cast<int64_t>(batch.size()), batch_size);
      }
      for (int64_t id : batch) ++seen[id];
      EXPECT_TRUE(batch_indices.insert(seeds.batch_index(s)).second);
    }
  }
  int64_t total = 0, repeated = 0;
  for (const auto& [id, count] : seen) {
    total += count;
    repeated += count - 1;
    ASSERT_LE(count, 2);
  }
  if (drop_last) {
    const int64_t per_rank = n / world;
    EXPECT_EQ(repeated, 0);
    EXPECT_EQ(total, world * (per_rank / batch_size) * batch_size);  // only the remainder is dropped
    EXPECT_GT(total, n - world * batch_size - world);
  } else {
    EXPECT_EQ(static_cast<int64_t>(seen.size()), n);   // every id
    EXPECT_EQ(repeated, (world - n % world) % world);  // plus DistributedSampler-style padding
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SeedSchedule,
                         ::testing::Values(Case{1000, 64, 1, false}, Case{1000, 64, 1, true}, Case{1000, 64, 3, false},
                                           Case{1000, 64, 3, true}, Case{10, 3, 3, false}, Case{10, 3, 3, true},
                                           Case{997, 1, 8, false}, Case{997, 1000, 2, false}, Case{64, 8, 8, true}));

TEST(SeedSchedule, ShuffleOffKeepsTheSplitOrder) {
  const std::vector<int64_t> split = Split(10);
  SeedScheduleSpec spec{.shuffle = false, .batch_size = 4, .rank = 1, .world_size = 2};
  EpochSeeds seeds(split, spec, 0);
  ASSERT_EQ(seeds.num_steps(), 2);
  EXPECT_EQ(std::vector<int64_t>(seeds.batch(0).begin(), seeds.batch(0).end()),
            (std::vector<int64_t>{split[1], split[3], split[5], split[7]}));
  EXPECT_EQ(std::vector<int64_t>(seeds.batch(1).begin(), seeds.batch(1).end()), (std::vector<int64_t>{split[9]}));
}

TEST(SeedSchedule, EpochsDifferAndRepeat) {
  const std::vector<int64_t> split = Split(500);
  SeedScheduleSpec spec{.seed = 1, .batch_size = 500};
  EpochSeeds e0(split, spec, 0), e1(split, spec, 1), again(split, spec, 0);
  EXPECT_FALSE(std::equal(e0.batch(0).begin(), e0.batch(0).end(), e1.batch(0).begin()));
  EXPECT_TRUE(std::equal(e0.batch(0).begin(), e0.batch(0).end(), again.batch(0).begin()));
}

TEST(SeedSchedule, PositionsAreWhereEachSeedIsInTheSplit) {
  const std::vector<int64_t> split = Split(37);
  SeedScheduleSpec spec{.seed = 3, .batch_size = 8, .rank = 1, .world_size = 3};  // padded: 37 is not 3 * 13
  EpochSeeds seeds(split, spec, 2);
  const std::vector<int64_t> ids(seeds.all().begin(), seeds.all().end());
  const std::vector<int64_t> positions = seeds.TakePositions();
  ASSERT_EQ(positions.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(split[positions[i]], ids[i]) << i;
  EXPECT_TRUE(seeds.TakePositions().empty());  // moved out: the seeds a backend gets do not carry them
  EXPECT_EQ(std::vector<int64_t>(seeds.all().begin(), seeds.all().end()), ids);
}

TEST(SeedSchedule, BadSpecsAreNamed) {
  EXPECT_EQ(CheckSeedScheduleSpec({.batch_size = 0}).message(), "batch_size = 0 (must be 1 to 2147483647)");
  // A batch size whose step count would wrap (it once gave a silently empty epoch).
  EXPECT_EQ(CheckSeedScheduleSpec({.batch_size = INT64_MAX}).message(),
            "batch_size = 9223372036854775807 (must be 1 to 2147483647)");
  EXPECT_EQ(CheckSeedScheduleSpec({.rank = 2, .world_size = 2}).message(), "rank = 2 (must be in [0, world_size = 2))");
  EXPECT_EQ(CheckSeedScheduleSpec({.world_size = 0}).message(), "world_size = 0 (must be at least 1)");
}

}  // namespace
}  // namespace gnnd
