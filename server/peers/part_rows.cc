#include "server/peers/part_rows.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gnnd {

PartRows::PartRows(std::shared_ptr<PeerNetwork> network, int type, const std::byte* local, uint64_t row_bytes,
                   std::span<const int32_t> owner, std::span<const int64_t> owner_row)
    : network_(std::move(network)),
      type_(type),
      part_(network_->options().part),
      local_(local),
      row_bytes_(row_bytes),
      owner_(owner),
      owner_row_(owner_row) {}

PartRows::Fetches PartRows::Ask(std::span<const int64_t> ids) {
  std::vector<std::vector<int64_t>> rows(network_->options().peers.size());
  for (int64_t id : ids) {
    const auto part = static_cast<uint32_t>(owner_[id]);
    if (part != part_) rows[part].push_back(owner_row_[id]);
  }
  Fetches fetches(rows.size());
  for (uint32_t part = 0; part < rows.size(); ++part) {
    if (!rows[part].empty()) fetches[part] = network_->Fetch(part, type_, std::move(rows[part]));
  }
  return fetches;
}

uint64_t PartRows::Announce(std::span<const int64_t> ids) {
  Fetches fetches = Ask(ids);
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t ticket = next_ticket_++;
  announced_.emplace(ticket, std::move(fetches));
  return ticket;
}

void PartRows::Withdraw(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  announced_.erase(ticket);  // its fetches finish on their own, unread
}

absl::Status PartRows::Gather(uint64_t ticket, std::span<const int64_t> ids, void* out) {
  Fetches fetches;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = announced_.find(ticket); it != announced_.end()) {
      fetches = std::move(it->second);
      announced_.erase(it);
    }
  }
  if (fetches.empty()) fetches = Ask(ids);  // not announced: asked now
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::span<const std::byte>> remote(fetches.size());
  absl::Status status;
  for (size_t part = 0; part < fetches.size(); ++part) {
    if (fetches[part] == nullptr) continue;
    absl::StatusOr<std::span<const std::byte>> rows = PeerNetwork::Wait(*fetches[part]);
    if (!rows.ok() && status.ok()) status = rows.status();
    if (rows.ok()) remote[part] = *rows;
  }
  wait_nanos_ += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) return status;
  auto* to = static_cast<std::byte*>(out);
  std::vector<size_t> next(fetches.size(), 0);  // each part's rows come in the order of `ids`
  uint64_t local = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto part = static_cast<uint32_t>(owner_[ids[i]]);
    const std::byte* from;
    if (part == part_) {
      from = local_ + owner_row_[ids[i]] * row_bytes_;
      ++local;
    } else {
      if ((next[part] + 1) * row_bytes_ > remote[part].size()) {
        return absl::InternalError(absl::StrCat("peers: the rows gathered for a batch are not those announced"));
      }
      from = remote[part].data() + next[part]++ * row_bytes_;
    }
    std::memcpy(to + i * row_bytes_, from, row_bytes_);
  }
  local_rows_ += local;
  remote_rows_ += ids.size() - local;
  return absl::OkStatus();
}

PartRowsStats PartRows::stats() const {
  return {local_rows_.load(), remote_rows_.load(), static_cast<double>(wait_nanos_.load()) * 1e-9};
}

}  // namespace gnnd
