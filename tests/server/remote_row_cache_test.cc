// The remote cache: rows kept are read back as they were given, a pinned row is never replaced, CLOCK gives a
// row read since the hand passed a second chance, and threads pinning, reading and inserting at once read
// only the rows they asked for, over every shard.
#include "server/peers/remote_row_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <random>
#include <thread>

namespace gnnd {
namespace {

constexpr uint64_t kCacheRowBytes = 16;

// Row `id`'s bytes: the id, twice.
std::vector<std::byte> CachedRowOf(int64_t id) {
  std::vector<std::byte> row(kCacheRowBytes);
  std::memcpy(row.data(), &id, 8);
  std::memcpy(row.data() + 8, &id, 8);
  return row;
}

void KeepRows(RemoteRowCache& cache, const std::vector<int64_t>& ids) {
  std::vector<std::vector<std::byte>> rows;
  std::vector<const std::byte*> pointers;
  for (int64_t id : ids) rows.push_back(CachedRowOf(id));
  for (const auto& row : rows) pointers.push_back(row.data());
  cache.Insert(ids, pointers);
}

// Which of `ids` are cached (pinned and released at once).
std::vector<bool> HeldOf(RemoteRowCache& cache, const std::vector<int64_t>& ids) {
  std::vector<int32_t> slots(ids.size());
  cache.Pin(ids, slots);
  std::vector<bool> held;
  for (int32_t slot : slots) held.push_back(slot >= 0);
  cache.Unpin(slots);
  return held;
}

TEST(RemoteRowCache, KeepsRowsAndReadsThemBack) {
  RemoteRowCache cache(4, kCacheRowBytes, /*shards=*/1);
  KeepRows(cache, {10, 20, 30});
  const std::vector<int64_t> ids = {30, 99, 10};
  std::vector<int32_t> slots(ids.size());
  EXPECT_EQ(cache.Pin(ids, slots), 2);
  EXPECT_EQ(slots[1], -1);
  EXPECT_EQ(std::memcmp(cache.row(slots[0]), CachedRowOf(30).data(), kCacheRowBytes), 0);
  EXPECT_EQ(std::memcmp(cache.row(slots[2]), CachedRowOf(10).data(), kCacheRowBytes), 0);
  cache.Unpin(slots);
  const RemoteRowCacheStats stats = cache.stats();
  EXPECT_EQ(stats.capacity_rows, 4);
  EXPECT_EQ(stats.resident_rows, 3);
  EXPECT_EQ(stats.hits, 2u);
  EXPECT_EQ(stats.evictions, 0u);
}

TEST(RemoteRowCache, ClockSparesRowsReadSinceTheHandPassed) {
  RemoteRowCache cache(3, kCacheRowBytes, /*shards=*/1);
  KeepRows(cache, {1, 2, 3});
  EXPECT_EQ(HeldOf(cache, {2}), std::vector<bool>{true});  // 2 referenced
  KeepRows(cache, {4});                                    // the hand takes 1 (unreferenced)
  EXPECT_EQ(HeldOf(cache, {1, 2, 3, 4}), (std::vector<bool>{false, true, true, true}));
  // Now 2, 3 and 4 are referenced: a full turn clears them and the hand, past 1's slot, takes 2's.
  KeepRows(cache, {5});
  EXPECT_EQ(HeldOf(cache, {2, 3, 4, 5}), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(cache.stats().evictions, 2u);
  EXPECT_EQ(cache.stats().resident_rows, 3);
}

TEST(RemoteRowCache, NeverReplacesAPinnedRow) {
  RemoteRowCache cache(2, kCacheRowBytes, /*shards=*/1);
  KeepRows(cache, {1, 2});
  std::vector<int32_t> slots(2);
  ASSERT_EQ(cache.Pin(std::vector<int64_t>{1, 2}, slots), 2);
  KeepRows(cache, {3, 4});  // no slot to be had: not kept
  EXPECT_EQ(std::memcmp(cache.row(slots[0]), CachedRowOf(1).data(), kCacheRowBytes), 0);
  EXPECT_EQ(std::memcmp(cache.row(slots[1]), CachedRowOf(2).data(), kCacheRowBytes), 0);
  cache.Unpin(slots);
  EXPECT_EQ(HeldOf(cache, {3, 4}), (std::vector<bool>{false, false}));
  KeepRows(cache, {3});  // unpinned now: the hand takes one after a turn
  EXPECT_EQ(HeldOf(cache, {3}), std::vector<bool>{true});
  KeepRows(cache, {3});  // held already: nothing changes
  EXPECT_EQ(cache.stats().resident_rows, 2);
}

TEST(RemoteRowCache, ShardsSplitTheCapacityRoundedUp) {
  EXPECT_EQ(RemoteRowCache(65, kCacheRowBytes, 16).capacity_rows(), 80);
  EXPECT_EQ(RemoteRowCache(3, kCacheRowBytes, 16).capacity_rows(), 16);  // a row a shard at least
  RemoteRowCache cache(32, kCacheRowBytes, 4);
  std::vector<int64_t> ids(32);
  for (int64_t i = 0; i < 32; ++i) ids[i] = 1000 + i;
  KeepRows(cache, ids);
  const std::vector<bool> held = HeldOf(cache, ids);
  const auto kept = std::count(held.begin(), held.end(), true);
  EXPECT_EQ(cache.stats().resident_rows, kept);
  EXPECT_GT(kept, 16);                     // every shard took rows: ids spread over them
  EXPECT_EQ(cache.stats().evictions, 0u);  // a shard full keeps no more, it evicts nothing in the same batch
}

TEST(RemoteRowCache, ThreadsReadOnlyTheRowsTheyAskFor) {
  RemoteRowCache cache(64, kCacheRowBytes);
  std::atomic<int64_t> wrong{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(t);
      for (int round = 0; round < 2000; ++round) {
        std::vector<int64_t> ids;
        for (int64_t id = random() % 200; ids.size() < 12; id = (id + 1 + random() % 7) % 200) {
          if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
        }
        std::vector<int32_t> slots(ids.size());
        hits += cache.Pin(ids, slots);
        std::vector<int64_t> missing;
        for (size_t i = 0; i < ids.size(); ++i) {
          if (slots[i] < 0) {
            missing.push_back(ids[i]);
          } else if (std::memcmp(cache.row(slots[i]), CachedRowOf(ids[i]).data(), kCacheRowBytes) != 0) {
            ++wrong;
          }
        }
        KeepRows(cache, missing);
        cache.Unpin(slots);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0);
  const RemoteRowCacheStats stats = cache.stats();
  EXPECT_EQ(stats.resident_rows, 64);
  EXPECT_EQ(stats.hits, static_cast<uint64_t>(hits.load()));
}

}  // namespace
}  // namespace gnnd
