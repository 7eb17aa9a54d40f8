#include "server/peers/remote_row_cache.h"

#include <algorithm>
#include <cstring>

namespace gnnd {

RemoteRowCache::RemoteRowCache(int64_t capacity_rows, uint64_t row_bytes, int shards)
    : shard_rows_(static_cast<int32_t>(std::max<int64_t>((capacity_rows + shards - 1) / std::max(shards, 1), 1))),
      row_bytes_(row_bytes),
      // Not zeroed: large allocations come straight from mmap, so pages are touched as rows arrive.
      memory_(std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(shard_rows_) * std::max(shards, 1) *
                                                          row_bytes)),
      row_(static_cast<size_t>(shard_rows_) * std::max(shards, 1), -1),
      pins_(row_.size(), 0),
      referenced_(row_.size(), 0),
      shards_(static_cast<size_t>(std::max(shards, 1))) {
  for (size_t s = 0; s < shards_.size(); ++s) {
    Shard& shard = shards_[s];
    shard.first = static_cast<int32_t>(s) * shard_rows_;
    shard.free.resize(static_cast<size_t>(shard_rows_));
    for (int32_t i = 0; i < shard_rows_; ++i) shard.free[i] = shard.first + shard_rows_ - 1 - i;  // first on top
  }
}

size_t RemoteRowCache::ShardOf(int64_t id) const {
  // Fibonacci hashing: neighboring ids (a partition's rows often are) land on different shards.
  return static_cast<size_t>(((static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull) >> 32) % shards_.size());
}

void RemoteRowCache::GroupByShard(std::span<const int64_t> ids, std::vector<uint32_t>& order,
                                  std::vector<uint32_t>& begin) const {
  std::vector<uint8_t> shard_of(ids.size());
  begin.assign(shards_.size() + 1, 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    shard_of[i] = static_cast<uint8_t>(ShardOf(ids[i]));
    ++begin[shard_of[i] + 1];
  }
  for (size_t s = 0; s < shards_.size(); ++s) begin[s + 1] += begin[s];
  std::vector<uint32_t> next(begin.begin(), begin.end() - 1);
  order.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) order[next[shard_of[i]]++] = static_cast<uint32_t>(i);
}

int64_t RemoteRowCache::Pin(std::span<const int64_t> ids, std::span<int32_t> slots) {
  std::vector<uint32_t> order, begin;
  GroupByShard(ids, order, begin);
  int64_t found = 0;
  for (size_t s = 0; s < shards_.size(); ++s) {
    Shard& shard = shards_[s];
    int64_t found_here = 0;
    std::lock_guard<std::mutex> lock(shard.mutex);
    for (uint32_t k = begin[s]; k < begin[s + 1]; ++k) {
      const uint32_t i = order[k];
      const auto it = shard.slot_of.find(ids[i]);
      slots[i] = it == shard.slot_of.end() ? -1 : it->second;
      if (slots[i] < 0) continue;
      ++pins_[slots[i]];
      referenced_[slots[i]] = 1;
      ++found_here;
    }
    shard.stats.hits += static_cast<uint64_t>(found_here);
    found += found_here;
  }
  return found;
}

void RemoteRowCache::Unpin(std::span<const int32_t> slots) {
  std::vector<std::vector<int32_t>> by_shard(shards_.size());
  for (int32_t slot : slots) {
    if (slot >= 0) by_shard[static_cast<size_t>(slot / shard_rows_)].push_back(slot);
  }
  for (size_t s = 0; s < shards_.size(); ++s) {
    if (by_shard[s].empty()) continue;
    std::lock_guard<std::mutex> lock(shards_[s].mutex);
    for (int32_t slot : by_shard[s]) --pins_[slot];
  }
}

int32_t RemoteRowCache::TakeSlotLocked(Shard& shard) {
  if (!shard.free.empty()) {
    const int32_t slot = shard.free.back();
    shard.free.pop_back();
    return slot;
  }
  // Two turns of the hand clear every reference bit, so a slot is found unless every row is pinned.
  for (int64_t step = 0; step < 2 * int64_t{shard_rows_}; ++step) {
    const int32_t slot = shard.first + shard.hand;
    shard.hand = shard.hand + 1 == shard_rows_ ? 0 : shard.hand + 1;
    if (pins_[slot] > 0 || row_[slot] < 0) continue;  // read by a batch, or being filled
    if (referenced_[slot]) {
      referenced_[slot] = 0;
      continue;
    }
    shard.slot_of.erase(row_[slot]);
    row_[slot] = -1;
    ++shard.stats.evictions;
    --shard.stats.resident_rows;
    return slot;
  }
  return -1;
}

void RemoteRowCache::Insert(std::span<const int64_t> ids, std::span<const std::byte* const> rows) {
  std::vector<uint32_t> order, begin;
  GroupByShard(ids, order, begin);
  std::vector<int32_t> slots(ids.size(), -1);
  for (size_t s = 0; s < shards_.size(); ++s) {
    Shard& shard = shards_[s];
    std::lock_guard<std::mutex> lock(shard.mutex);
    for (uint32_t k = begin[s]; k < begin[s + 1]; ++k) {
      const uint32_t i = order[k];
      if (shard.slot_of.contains(ids[i])) continue;
      slots[i] = TakeSlotLocked(shard);
      if (slots[i] < 0) break;
      pins_[slots[i]] = 1;  // being filled: no row, so no batch finds it and the hand skips it
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (slots[i] >= 0) std::memcpy(memory_.get() + static_cast<size_t>(slots[i]) * row_bytes_, rows[i], row_bytes_);
  }
  for (size_t s = 0; s < shards_.size(); ++s) {
    Shard& shard = shards_[s];
    std::lock_guard<std::mutex> lock(shard.mutex);
    for (uint32_t k = begin[s]; k < begin[s + 1]; ++k) {
      const uint32_t i = order[k];
      const int32_t slot = slots[i];
      if (slot < 0) continue;
      pins_[slot] = 0;
      referenced_[slot] = 0;
      if (shard.slot_of.emplace(ids[i], slot).second) {
        row_[slot] = ids[i];
        ++shard.stats.resident_rows;
      } else {
        shard.free.push_back(slot);  // another gather kept the row meanwhile
      }
    }
  }
}

RemoteRowCacheStats RemoteRowCache::stats() const {
  RemoteRowCacheStats total{.capacity_rows = capacity_rows()};
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mutex);
    total.resident_rows += shard.stats.resident_rows;
    total.hits += shard.stats.hits;
    total.evictions += shard.stats.evictions;
  }
  return total;
}

}  // namespace gnnd
