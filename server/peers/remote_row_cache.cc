#include "server/peers/remote_row_cache.h"

#include <algorithm>
#include <cstring>

namespace gnnd {

RemoteRowCache::RemoteRowCache(int64_t capacity_rows, uint64_t row_bytes)
    : capacity_rows_(std::max<int64_t>(capacity_rows, 1)),
      row_bytes_(row_bytes),
      // Not zeroed: large allocations come straight from mmap, so pages are touched as rows arrive.
      memory_(std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(capacity_rows_) * row_bytes)),
      row_(static_cast<size_t>(capacity_rows_), -1),
      pins_(static_cast<size_t>(capacity_rows_), 0),
      referenced_(static_cast<size_t>(capacity_rows_), 0) {
  stats_.capacity_rows = capacity_rows_;
}

int64_t RemoteRowCache::Pin(std::span<const int64_t> ids, std::span<int32_t> slots) {
  int64_t found = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto it = slot_of_.find(ids[i]);
    slots[i] = it == slot_of_.end() ? -1 : it->second;
    if (slots[i] < 0) continue;
    ++pins_[slots[i]];
    referenced_[slots[i]] = 1;
    ++found;
  }
  stats_.hits += static_cast<uint64_t>(found);
  return found;
}

void RemoteRowCache::Unpin(std::span<const int32_t> slots) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (int32_t slot : slots) {
    if (slot >= 0) --pins_[slot];
  }
}

int32_t RemoteRowCache::TakeSlotLocked() {
  if (!free_.empty()) {
    const int32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  if (used_ < capacity_rows_) return static_cast<int32_t>(used_++);
  // Two turns of the hand clear every reference bit, so a slot is found unless every row is pinned.
  for (int64_t step = 0; step < 2 * capacity_rows_; ++step) {
    const auto slot = static_cast<int32_t>(hand_);
    hand_ = hand_ + 1 == capacity_rows_ ? 0 : hand_ + 1;
    if (pins_[slot] > 0 || row_[slot] < 0) continue;  // read by a batch, being filled, or free
    if (referenced_[slot]) {
      referenced_[slot] = 0;
      continue;
    }
    slot_of_.erase(row_[slot]);
    row_[slot] = -1;
    ++stats_.evictions;
    --stats_.resident_rows;
    return slot;
  }
  return -1;
}

void RemoteRowCache::Insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows) {
  std::vector<int32_t> slots(ids.size(), -1);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (slot_of_.contains(ids[i])) continue;
      slots[i] = TakeSlotLocked();
      if (slots[i] < 0) break;
      pins_[slots[i]] = 1;  // being filled: no row, so no batch finds it and the hand skips it
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (slots[i] >= 0) std::memcpy(memory_.get() + static_cast<size_t>(slots[i]) * row_bytes_, rows[i], row_bytes_);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t slot = slots[i];
    if (slot < 0) continue;
    pins_[slot] = 0;
    referenced_[slot] = 0;
    if (slot_of_.emplace(ids[i], slot).second) {
      row_[slot] = ids[i];
      ++stats_.resident_rows;
    } else {
      free_.push_back(slot);  // another gather kept the row meanwhile
    }
  }
}

RemoteRowCacheStats RemoteRowCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace gnnd
