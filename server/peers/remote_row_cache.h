// Rows fetched from the parts that own them, kept for later batches (--remote-cache): a bounded host cache
// of one node type's feature rows with CLOCK eviction (a row read since the hand last passed it gets a second
// chance). A batch pins the rows it finds here when it is announced until its gather has copied them, so a
// row found cannot be replaced in between; rows fetched for a batch are kept after its gather where a slot
// can be had. Thread-safe: rows are spread over shards by a hash of their id, each with its own lock, slots
// and clock, so the producer threads of several batches rarely wait on each other; row copies happen outside
// the locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace gnnd {

struct RemoteRowCacheStats {
  int64_t capacity_rows = 0;
  int64_t resident_rows = 0;
  uint64_t hits = 0;  // rows batches found here instead of fetching them
  uint64_t evictions = 0;
};

class RemoteRowCache {
 public:
  // What one cached row of `row_bytes` costs with its bookkeeping (slot arrays, the row -> slot map).
  static uint64_t BytesPerRow(uint64_t row_bytes) { return row_bytes + 32; }

  // A cache of `capacity_rows` rows, rounded up to a multiple of `shards` (1: one clock over every row, as
  // tests want), of `row_bytes` each; memory is touched as rows arrive.
  RemoteRowCache(int64_t capacity_rows, uint64_t row_bytes, int shards = kDefaultShards);

  // slots[i]: the slot holding row ids[i], pinned, or -1 where the row is not here (ids distinct). Returns
  // how many were found.
  int64_t Pin(std::span<const int64_t> ids, std::span<int32_t> slots);
  // The row in a pinned slot.
  const std::byte* row(int32_t slot) const { return memory_.get() + static_cast<size_t>(slot) * row_bytes_; }
  // Releases the slots Pin gave (-1 entries skipped).
  void Unpin(std::span<const int32_t> slots);
  // Keeps copies of rows ids[i] (at rows[i]; ids distinct) in free slots or in those of unpinned rows the
  // clock passes a second time; rows that find no slot, or are here already, are not kept.
  void Insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows);

  RemoteRowCacheStats stats() const;
  int64_t capacity_rows() const { return shard_rows_ * static_cast<int64_t>(shards_.size()); }

  static constexpr int kDefaultShards = 16;

 private:
  // Slots [first, first + rows) of the cache, the rows whose id hashes to it.
  struct Shard {
    mutable std::mutex mutex;
    int32_t first = 0;
    absl::flat_hash_map<int64_t, int32_t> slot_of;  // row -> slot, for rows ready to read
    std::vector<int32_t> free;                      // slots never used or given back
    int32_t hand = 0;                               // the clock's, from first
    RemoteRowCacheStats stats;                      // capacity_rows left 0: the cache's is capacity_rows()
  };
  size_t ShardOf(int64_t id) const;
  // The positions of `ids` by shard: order[begin[s] .. begin[s + 1]) are shard s's.
  void GroupByShard(std::span<const int64_t> ids, std::vector<uint32_t>& order, std::vector<uint32_t>& begin) const;
  // A slot of `shard` for a new row, taken (pinned, out of the map) or -1 when every slot is pinned.
  int32_t TakeSlotLocked(Shard& shard);

  const int32_t shard_rows_;
  const uint64_t row_bytes_;
  const std::unique_ptr<std::byte[]> memory_;
  // By slot, guarded by the lock of the slot's shard.
  std::vector<int64_t> row_;  // -1: free
  std::vector<int32_t> pins_;
  std::vector<uint8_t> referenced_;  // read since the hand last passed
  std::vector<Shard> shards_;
};

}  // namespace gnnd
