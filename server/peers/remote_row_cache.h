// Rows fetched from the parts that own them, kept for later batches (--remote-cache): a bounded host cache
// of one node type's feature rows with CLOCK eviction (a row read since the hand last passed it gets a second
// chance). A batch pins the rows it finds here when it is announced until its gather has copied them, so a
// row found cannot be replaced in between; rows fetched for a batch are kept after its gather where a slot
// can be had. Thread-safe; row copies happen outside the lock.
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

  // A cache of `capacity_rows` rows (at least 1) of `row_bytes` each; memory is touched as rows arrive.
  RemoteRowCache(int64_t capacity_rows, uint64_t row_bytes);

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
  int64_t capacity_rows() const { return capacity_rows_; }

 private:
  // A slot for a new row, taken (pinned, out of the map) or -1 when every slot is pinned.
  int32_t TakeSlotLocked();

  const int64_t capacity_rows_;
  const uint64_t row_bytes_;
  const std::unique_ptr<std::byte[]> memory_;

  mutable std::mutex mutex_;
  absl::flat_hash_map<int64_t, int32_t> slot_of_;  // row -> slot, for rows ready to read
  std::vector<int64_t> row_;                       // slot -> row (-1: free)
  std::vector<int32_t> pins_;
  std::vector<uint8_t> referenced_;  // read since the hand last passed
  std::vector<int32_t> free_;        // slots given back below used_
  int64_t hand_ = 0;
  int64_t used_ = 0;  // slots ever taken; those past it are free
  RemoteRowCacheStats stats_;
};

}  // namespace gnnd
