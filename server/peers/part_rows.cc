#include "server/peers/part_rows.h"

#include <chrono>
#include <cstring>
#include <optional>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"

namespace gnnd {

PartRows::PartRows(std::shared_ptr<PeerNetwork> network, int type, const std::byte* local, uint64_t row_bytes,
                   std::span<const int32_t> owner, std::span<const int64_t> owner_row,
                   std::unique_ptr<RemoteRowCache> cache)
    : network_(std::move(network)),
      type_(type),
      part_(network_->options().part),
      local_(local),
      row_bytes_(row_bytes),
      owner_(owner),
      owner_row_(owner_row),
      cache_(std::move(cache)) {}

PartRows::Asked PartRows::Ask(std::span<const int64_t> ids) {
  Asked asked;
  if (cache_ != nullptr) {  // only rows owned elsewhere are looked up
    std::vector<int64_t> remote;
    for (int64_t id : ids) {
      if (static_cast<uint32_t>(owner_[id]) != part_) remote.push_back(id);
    }
    asked.cached.resize(remote.size());
    cache_->Pin(remote, asked.cached);
  }
  std::vector<std::vector<int64_t>> rows(network_->options().peers.size());
  for (size_t i = 0, r = 0; i < ids.size(); ++i) {
    const auto part = static_cast<uint32_t>(owner_[ids[i]]);
    if (part == part_) continue;
    if (asked.cached.empty() || asked.cached[r++] < 0) rows[part].push_back(owner_row_[ids[i]]);
  }
  asked.fetches.resize(rows.size());
  for (uint32_t part = 0; part < rows.size(); ++part) {
    if (!rows[part].empty()) asked.fetches[part] = network_->Fetch(part, type_, std::move(rows[part]));
  }
  return asked;
}

void PartRows::Release(const Asked& asked) {
  if (cache_ != nullptr) cache_->Unpin(asked.cached);
}

uint64_t PartRows::Announce(std::span<const int64_t> ids) {
  Asked asked = Ask(ids);
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  announced_.emplace(ticket, std::move(asked));
  return ticket;
}

void PartRows::Withdraw(uint64_t ticket) {
  Asked asked;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = announced_.find(ticket);
    if (it == announced_.end()) return;
    asked = std::move(it->second);
    announced_.erase(it);
  }
  Release(asked);  // its fetches finish on their own, unread
}

absl::Status PartRows::Gather(uint64_t ticket, std::span<const int64_t> ids, void* out) {
  std::optional<Asked> announced;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = announced_.find(ticket); it != announced_.end()) {
      announced = std::move(it->second);
      announced_.erase(it);
    }
  }
  const Asked asked = announced.has_value() ? *std::move(announced) : Ask(ids);  // not announced: asked now
  absl::Cleanup release = [&] { Release(asked); };
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::span<const std::byte>> remote(asked.fetches.size());
  absl::Status status;
  for (size_t part = 0; part < asked.fetches.size(); ++part) {
    if (asked.fetches[part] == nullptr) continue;
    absl::StatusOr<std::span<const std::byte>> rows = PeerNetwork::Wait(*asked.fetches[part]);
    if (!rows.ok() && status.ok()) status = rows.status();
    if (rows.ok()) remote[part] = *rows;
  }
  wait_nanos_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return status;
  auto* to = static_cast<std::byte*>(out);
  std::vector<size_t> next(asked.fetches.size(), 0);  // each part's rows come in the order of `ids`
  std::vector<int64_t> fetched_ids;                   // to keep in the cache
  std::vector<const std::byte*> fetched_rows;
  uint64_t local = 0, cached = 0;
  for (size_t i = 0, r = 0; i < ids.size(); ++i) {
    const auto part = static_cast<uint32_t>(owner_[ids[i]]);
    const int32_t slot = part == part_ || asked.cached.empty() ? -1 : asked.cached[r++];
    const std::byte* from;
    if (part == part_) {
      from = local_ + owner_row_[ids[i]] * row_bytes_;
      ++local;
    } else if (slot >= 0) {
      from = cache_->row(slot);
      ++cached;
    } else {
      if ((next[part] + 1) * row_bytes_ > remote[part].size()) {
        return absl::InternalError(absl::StrCat("peers: the rows gathered for a batch are not those announced"));
      }
      from = remote[part].data() + next[part]++ * row_bytes_;
      if (cache_ != nullptr) {
        fetched_ids.push_back(ids[i]);
        fetched_rows.push_back(from);
      }
    }
    std::memcpy(to + i * row_bytes_, from, row_bytes_);
  }
  if (cache_ != nullptr) cache_->Insert(fetched_ids, fetched_rows);  // while the fetches' buffers live
  local_rows_ += local;
  cached_rows_ += cached;
  remote_rows_ += ids.size() - local - cached;
  return absl::OkStatus();
}

PartRowsStats PartRows::stats() const {
  return {.local_rows = local_rows_.load(),
          .remote_rows = remote_rows_.load(),
          .cached_rows = cached_rows_.load(),
          .wait_seconds = static_cast<double>(wait_nanos_.load()) * 1e-9,
          .cache = cache_ != nullptr ? cache_->stats() : RemoteRowCacheStats{}};
}

}  // namespace gnnd
