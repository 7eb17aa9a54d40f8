#include "common/dataset/row_cache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <list>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"

namespace gnnd {
namespace {

using testing::Row;
using testing::ScratchDir;
using testing::WriteTable;

constexpr uint64_t kRowBytes = 100;
const uint64_t kRowCost = RowCache::BytesPerRow(kRowBytes);  // a cached row with its bookkeeping
constexpr int64_t kRows = 300;

int64_t Heat(int64_t row) { return row % 5; }

// Batches of distinct rows, skewed towards low ids (some rows hot, most cold), as sampled batches are.
std::vector<std::vector<int64_t>> SkewedBatches(int count, int size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::vector<int64_t>> batches(count);
  for (auto& batch : batches) {
    std::set<int64_t> rows;
    while (static_cast<int>(rows.size()) < size) rows.insert(static_cast<int64_t>(kRows * u(rng) * u(rng)));
    batch.assign(rows.begin(), rows.end());
    std::shuffle(batch.begin(), batch.end(), rng);
  }
  return batches;
}

// Belady's rule with bypass, by brute force: at batch t, batches t..t+window-1 are known; a missing row goes
// into free room, else over the cached row (not of batch t) whose next use is furthest, the coldest, the
// highest id, unless the missing row itself ranks so after batch t: then it is read into the batch alone.
int64_t BeladyMisses(const std::vector<std::vector<int64_t>>& batches, int window, int64_t capacity) {
  std::set<int64_t> cached;
  int64_t misses = 0;
  for (size_t t = 0; t < batches.size(); ++t) {
    const std::set<int64_t> now(batches[t].begin(), batches[t].end());
    auto rank = [&](int64_t r) {  // larger: evicted sooner
      for (size_t u = t + 1; u < std::min(batches.size(), t + window); ++u) {
        if (std::find(batches[u].begin(), batches[u].end(), r) != batches[u].end()) {
          return std::make_tuple(static_cast<uint64_t>(u), -Heat(r), r);
        }
      }
      return std::make_tuple(RowCache::kNever, -Heat(r), r);
    };
    for (int64_t row : batches[t]) {
      if (cached.contains(row)) continue;
      ++misses;
      if (static_cast<int64_t>(cached.size()) == capacity) {
        std::optional<int64_t> victim;
        for (int64_t r : cached) {
          if (!now.contains(r) && (!victim || rank(r) > rank(*victim))) victim = r;
        }
        if (!victim || rank(row) > rank(*victim)) continue;  // bypass
        cached.erase(*victim);
      }
      cached.insert(row);
    }
  }
  return misses;
}

int64_t LruMisses(const std::vector<std::vector<int64_t>>& batches, int64_t capacity) {
  std::list<int64_t> order;  // most recent first
  int64_t misses = 0;
  for (const auto& batch : batches) {
    for (int64_t row : batch) {
      auto it = std::find(order.begin(), order.end(), row);
      if (it != order.end()) {
        order.erase(it);
      } else {
        ++misses;
        if (static_cast<int64_t>(order.size()) == capacity) order.pop_back();
      }
      order.push_front(row);
    }
  }
  return misses;
}

void ExpectRows(const std::vector<int64_t>& ids, const std::vector<uint8_t>& out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(std::memcmp(out.data() + i * kRowBytes, Row(ids[i], kRowBytes).data(), kRowBytes), 0)
        << "row " << ids[i] << " at " << i;
  }
}

// Gathers `batches` in order with `window` batches announced ahead; returns the cache's misses.
int64_t RunWindow(RowCache& cache, const std::vector<std::vector<int64_t>>& batches, int window, bool prefetch) {
  std::vector<uint64_t> tickets;
  for (int t = 0; t < std::min<int>(window, batches.size()); ++t) tickets.push_back(cache.Announce(batches[t]));
  for (size_t t = 0; t < batches.size(); ++t) {
    if (prefetch && t + 1 < tickets.size()) {
      EXPECT_TRUE(cache.Prefetch(tickets[t + 1]).ok());
    }
    std::vector<uint8_t> out(batches[t].size() * kRowBytes);
    EXPECT_TRUE(cache.Gather(tickets[t], batches[t], out.data()).ok());
    ExpectRows(batches[t], out);
    if (t + window < batches.size()) tickets.push_back(cache.Announce(batches[t + window]));
  }
  return static_cast<int64_t>(cache.stats().misses);
}

TEST(RowCache, EvictsExactlyAsBeladyWithinTheWindowAndBeatsLru) {
  ScratchDir dir;
  const RowTable table = WriteTable(dir / "t.npy", 128, kRowBytes, kRows);
  const auto batches = SkewedBatches(60, 25, 1);
  for (const int64_t capacity : {25, 40, 80, 160}) {
    for (const int window : {1, 2, 5, 60}) {
      auto cache = RowCache::Create(table, capacity * kRowCost, Heat, {});
      ASSERT_TRUE(cache.ok()) << cache.status();
      const int64_t misses = RunWindow(**cache, batches, window, /*prefetch=*/false);
      EXPECT_EQ(misses, BeladyMisses(batches, window, capacity)) << "capacity " << capacity << " window " << window;
      const RowCacheStats stats = (*cache)->stats();
      EXPECT_EQ(stats.hits + stats.misses, 60u * 25);
      EXPECT_EQ(stats.window, 0);  // every announced batch gathered
      EXPECT_LE(stats.resident_rows, capacity);
      EXPECT_LE(stats.candidates, 2 * capacity + 64);  // the bookkeeping stays bounded by the cache's size
      if (window == 60) {
        EXPECT_LE(misses, LruMisses(batches, capacity)) << "capacity " << capacity;
      }
    }
  }
}

TEST(RowCache, PrefetchReadsAheadWithoutEvictingRowsNeededSooner) {
  ScratchDir dir;
  const RowTable table = WriteTable(dir / "t.npy", 0, kRowBytes, kRows);
  auto cache = *RowCache::Create(table, 10 * kRowCost, Heat, {});
  const std::vector<int64_t> a = {1, 2, 3, 4, 5, 6}, b = {10, 11, 12, 13, 14, 15};
  const uint64_t ta = cache->Announce(a), tb = cache->Announce(b);
  EXPECT_EQ(*cache->Prefetch(tb), 6);  // into free room
  // 4 into free room; then a's rows, never used after a, are worth less than b's (used at b): they stay out.
  EXPECT_EQ(*cache->Prefetch(ta), 4);
  EXPECT_EQ(*cache->Prefetch(tb), 0);  // all cached
  for (int64_t row : b) EXPECT_GE(cache->SlotOf(row), 0) << row;
  std::vector<uint8_t> out(a.size() * kRowBytes);
  ASSERT_TRUE(cache->Gather(ta, a, out.data()).ok());
  ExpectRows(a, out);
  EXPECT_EQ(cache->stats().misses, 2u);  // the two read straight into the batch, evicting none of b's rows
  EXPECT_EQ(cache->stats().bypassed, 2u);
  EXPECT_EQ(cache->stats().evictions, 0u);
  EXPECT_EQ(cache->stats().prefetched, 10u);
  ASSERT_TRUE(cache->Gather(tb, b, out.data()).ok());
  ExpectRows(b, out);
  EXPECT_EQ(cache->stats().misses, 2u);
  // Nothing is used again now: a row hotter than the coldest cached one takes its slot, a colder one does not.
  const std::vector<int64_t> hot = {24}, cold = {20};  // heat 4 and 0; rows 10 and 15 have heat 0
  EXPECT_EQ(*cache->Prefetch(cache->Announce(hot)), 1);
  EXPECT_EQ(cache->stats().evictions, 1u);
  EXPECT_EQ(cache->SlotOf(15), -1);  // of the coldest, the highest id
  EXPECT_EQ(*cache->Prefetch(cache->Announce(cold)), 0);
  // With every batch prefetched one ahead, gathers still see the same bytes.
  const auto batches = SkewedBatches(30, 8, 2);
  auto prefetching = *RowCache::Create(table, 20 * kRowCost, Heat, {});
  RunWindow(*prefetching, batches, 3, /*prefetch=*/true);
  EXPECT_GT(prefetching->stats().prefetched, 0u);
}

TEST(RowCache, AWarmStartReadsTheHottestRowsIntoFreeRoomOnly) {
  ScratchDir dir;
  const RowTable table = WriteTable(dir / "t.npy", 0, kRowBytes, kRows);
  auto cache = *RowCache::Create(table, 10 * kRowCost, Heat, {});
  // A row that is not one refuses the whole list, taking no slot (a taken one would stay loading forever).
  EXPECT_TRUE(absl::IsInvalidArgument(cache->WarmUp(std::vector<int64_t>{70, kRows}).status()));
  EXPECT_EQ(cache->SlotOf(70), -1);
  EXPECT_EQ(*cache->WarmUp(std::vector<int64_t>{5, 5}), 1);  // a repeated row takes one slot
  const std::vector<int64_t> hottest_first = {70, 30, 90, 10, 0, 20, 40, 50, 60, 110, 120};
  EXPECT_EQ(*cache->WarmUp(hottest_first), 9);  // the free room left
  for (size_t i = 0; i < hottest_first.size(); ++i) {
    EXPECT_EQ(cache->SlotOf(hottest_first[i]) >= 0, i < 9) << hottest_first[i];
  }
  EXPECT_EQ(*cache->WarmUp(std::vector<int64_t>{200}), 0);  // no free room left: nothing evicted
  const std::vector<int64_t> batch = {90, 70, 5};
  std::vector<uint8_t> out(batch.size() * kRowBytes);
  ASSERT_TRUE(cache->Gather(cache->Announce(batch), batch, out.data()).ok());
  ExpectRows(batch, out);
  EXPECT_EQ(cache->stats().misses, 0u);
  EXPECT_EQ(cache->stats().hits, 3u);
}

TEST(RowCache, RowsHeldElsewhereAreEvictedBeforeEveryOtherUnannouncedRow) {
  ScratchDir dir;
  const RowTable table = WriteTable(dir / "t.npy", 0, kRowBytes, kRows);
  auto cache = *RowCache::Create(table, 4 * kRowCost, Heat, {});
  // Heats 4, 4, 0, 0: without more, row 10 or 15 (heat 0) would go first.
  ASSERT_EQ(*cache->WarmUp(std::vector<int64_t>{4, 9, 10, 15}), 4);
  auto held = std::make_shared<std::vector<bool>>(kRows, false);
  (*held)[4] = (*held)[9] = true;  // a GPU tier serves the two hottest rows
  cache->SetHeldElsewhere(held);
  const std::vector<int64_t> hot = {14, 19};  // heat 4: worth a slot over any row another tier holds
  EXPECT_EQ(*cache->Prefetch(cache->Announce(hot)), 2);
  EXPECT_EQ(cache->SlotOf(4), -1);
  EXPECT_EQ(cache->SlotOf(9), -1);
  for (int64_t row : {10, 15, 14, 19}) EXPECT_GE(cache->SlotOf(row), 0) << row;
  // Held rows are still served when a batch asks for them (CPU sessions of the dataset), read again.
  const std::vector<int64_t> batch = {4};
  std::vector<uint8_t> out(kRowBytes);
  ASSERT_TRUE(cache->Gather(cache->Announce(batch), batch, out.data()).ok());
  ExpectRows(batch, out);
}

TEST(RowCache, ABatchLargerThanTheCacheIsRefusedAndOneOfItsSizeWorks) {
  ScratchDir dir;
  const RowTable table = WriteTable(dir / "t.npy", 0, kRowBytes, kRows);
  auto cache = *RowCache::Create(table, 8 * kRowCost + 50, Heat, {});
  EXPECT_EQ(cache->capacity_rows(), 8);  // the configured bytes bound the rows and their bookkeeping
  EXPECT_GT(kRowCost, kRowBytes);
  EXPECT_EQ(RowCache::Create(table, 8 * kRowCost - 1, Heat, {}).value()->capacity_rows(), 7);
  const absl::Status refused = cache->CheckBatchFits(9, "datasets[0].feature_cache");
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_NE(refused.message().find("datasets[0].feature_cache"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find(absl::StrCat(9 * kRowCost, " bytes")), std::string::npos) << refused;
  EXPECT_TRUE(cache->CheckBatchFits(8, "x").ok());
  for (int round = 0; round < 5; ++round) {  // each batch evicts the whole last one
    std::vector<int64_t> ids;
    for (int i = 0; i < 8; ++i) ids.push_back(round * 8 + i);
    std::vector<uint8_t> out(ids.size() * kRowBytes);
    ASSERT_TRUE(cache->Gather(0, ids, out.data()).ok());
    ExpectRows(ids, out);
  }
  std::vector<uint8_t> out(9 * kRowBytes);
  const std::vector<int64_t> repeats = {3, 3, 5, 3, 5};  // rows missing, each asked more than once
  ASSERT_TRUE(cache->Gather(0, repeats, out.data()).ok());
  ExpectRows(repeats, out);
  EXPECT_TRUE(absl::IsInvalidArgument(cache->Gather(0, std::vector<int64_t>{kRows}, out.data())));
  // A larger batch gathered anyway fails at once rather than waiting for room that cannot come.
  EXPECT_TRUE(
      absl::IsFailedPrecondition(cache->Gather(0, std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}, out.data())));
}

TEST(RowCache, ConcurrentGathersThatEachNeedMostOfTheCacheNeitherDeadlockNorTearRows) {
  ScratchDir dir;
  const RowTable table = WriteTable(dir / "t.npy", 64, kRowBytes, kRows);
  auto cache = *RowCache::Create(table, 30 * kRowCost, Heat, {.reader = {.queue_depth = 4}});
  std::vector<std::thread> threads;
  std::atomic<int> failures = 0;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (const auto& batch : SkewedBatches(40, 20, 10 + t)) {
        const uint64_t ticket = cache->Announce(batch);
        if (t % 2 == 0) (void)cache->Prefetch(ticket);
        std::vector<uint8_t> out(batch.size() * kRowBytes);
        if (!cache->Gather(ticket, batch, out.data()).ok()) ++failures;
        for (size_t i = 0; i < batch.size(); ++i) {
          if (std::memcmp(out.data() + i * kRowBytes, Row(batch[i], kRowBytes).data(), kRowBytes) != 0) ++failures;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(cache->stats().window, 0);
  EXPECT_LE(cache->stats().resident_rows, 30);
}

TEST(RowCache, AFileTruncatedOrReplacedFailsTheGathersThatReadItNamingFileAndRows) {
  ScratchDir dir;
  const std::string path = dir / "t.npy";
  const RowTable table = WriteTable(path, 0, kRowBytes, kRows);
  auto cache = *RowCache::Create(table, 50 * kRowCost, Heat, {});
  std::vector<uint8_t> out(3 * kRowBytes);
  const std::vector<int64_t> early = {1, 2, 3};
  ASSERT_TRUE(cache->Gather(0, early, out.data()).ok());
  std::filesystem::resize_file(path, 100 * kRowBytes);
  const std::vector<int64_t> late = {250, 251, 7};
  absl::Status failed = cache->Gather(0, late, out.data());
  EXPECT_TRUE(absl::IsDataLoss(failed)) << failed;
  EXPECT_NE(failed.message().find(path), std::string::npos) << failed;
  EXPECT_NE(failed.message().find("rows 250, 251, 7"), std::string::npos) << failed;
  ASSERT_TRUE(cache->Gather(0, early, out.data()).ok());  // cached before: still the rows read then
  ExpectRows(early, out);
  EXPECT_EQ(cache->SlotOf(250), -1);  // a failed row is not left cached

  // Replaced by another file under the same name (same size): refused too.
  const std::string other = dir / "other.npy";
  WriteTable(other, 0, kRowBytes, kRows);
  auto fresh = *RowCache::Create(WriteTable(path, 0, kRowBytes, kRows), 50 * kRowCost, Heat, {});
  std::filesystem::rename(other, path);
  failed = fresh->Gather(0, late, out.data());
  EXPECT_TRUE(absl::IsDataLoss(failed)) << failed;
  EXPECT_NE(failed.message().find("changed under gnnd"), std::string::npos) << failed;
}

// A file cut while a second reader is opened (two gathers at once: the cache holds one reader from its start):
// a gather may succeed (it read first) or fail, and a failure says the file changed under gnnd, never only that
// the new reader found it short. Raced, so tried for about a second.
TEST(RowCache, AFileCutWhileAReaderOpensSaysItChanged) {
  ScratchDir dir;
  const std::string path = dir / "t.npy";
  const RowTable table = WriteTable(path, 0, kRowBytes, kRows);
  std::mt19937 rng(5);
  int failed = 0, attempts = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (; attempts < 100000 && std::chrono::steady_clock::now() < until; ++attempts) {
    std::filesystem::resize_file(path, table.data_offset + kRows * kRowBytes);  // whole again (its rows zeros)
    auto cache = *RowCache::Create(table, 50 * kRowCost, Heat, {});
    const int spin = static_cast<int>(rng() % 100000);
    std::atomic<int> ready = 0;
    auto start_together = [&] {
      ++ready;
      while (ready < 3) {
      }
    };
    std::thread cut([&] {
      start_together();
      for (volatile int i = 0; i < spin; ++i) {
      }
      std::filesystem::resize_file(path, 100 * kRowBytes);
    });
    absl::Status statuses[2];
    std::thread gathers[2];
    for (int g = 0; g < 2; ++g) {
      gathers[g] = std::thread([&, g] {
        std::vector<uint8_t> out(3 * kRowBytes);
        const std::vector<int64_t> rows = {250 + g, 200 + g, 7 + g};
        start_together();
        statuses[g] = cache->Gather(0, rows, out.data());
      });
    }
    cut.join();
    for (std::thread& g : gathers) g.join();
    for (const absl::Status& status : statuses) {
      if (status.ok()) continue;
      ++failed;
      ASSERT_TRUE(absl::IsDataLoss(status)) << "attempt " << attempts << ": " << status;
      ASSERT_NE(status.message().find("changed under gnnd"), std::string::npos) << status;
    }
  }
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace gnnd
