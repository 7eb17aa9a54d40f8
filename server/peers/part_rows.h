// The feature rows of one node type of a part of a partitioned dataset, as a two-stage producer reads them
// (common/dataset/row_tier.h): the part's own rows from its memory, the others from the parts that own them
// (PeerNetwork). A batch's remote rows are asked for when it is announced, as soon as it is sampled, so they
// travel while the producer gathers earlier batches; its gather waits for them. Without a remote cache nothing
// is kept after a gather: every batch fetches the remote rows it needs; with one (--remote-cache), a batch
// fetches only the rows not in it when the batch is announced, and the rows it fetched are kept there.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/dataset/row_tier.h"
#include "server/peers/peer_network.h"
#include "server/peers/remote_row_cache.h"

namespace gnnd {

struct PartRowsStats {
  uint64_t local_rows = 0, remote_rows = 0;  // remote: fetched from the owners
  uint64_t cached_rows = 0;                  // owned elsewhere, read from the remote cache
  double wait_seconds = 0;                   // gathers waiting for remote rows
  RemoteRowCacheStats cache;                 // zero without one
};

class PartRows final : public RowTier {
 public:
  // Node type `type` of part `network->options().part`: its own rows at local (row r at local + r * row_bytes),
  // every node's part and row in it by owner / owner_row (indexed by the type's node id); rows fetched are
  // kept in `cache` (may be null).
  PartRows(std::shared_ptr<PeerNetwork> network, int type, const std::byte* local, uint64_t row_bytes,
           std::span<const int32_t> owner, std::span<const int64_t> owner_row,
           std::unique_ptr<RemoteRowCache> cache = nullptr);

  uint64_t row_bytes() const override { return row_bytes_; }
  absl::Status CheckBatchFits(int64_t /*max_rows*/, absl::string_view /*what*/) const override {
    return absl::OkStatus();  // rows are fetched per batch: no bound but the batch's
  }
  uint64_t Announce(std::span<const int64_t> ids) override;
  void Withdraw(uint64_t ticket) override;
  absl::StatusOr<int64_t> Prefetch(uint64_t /*ticket*/) override { return 0; }  // asked at the announcement
  absl::Status Gather(uint64_t ticket, std::span<const int64_t> ids, void* out) override;
  void CountHeldElsewhere(uint64_t /*rows*/) override {}

  PartRowsStats stats() const;

 private:
  // A batch's rows on the way: each part's fetch (null for this part and parts it reads nothing from), and
  // for each id owned elsewhere, in the order of the ids, the remote cache's slot, pinned (-1: fetched; empty
  // without a cache).
  struct Asked {
    std::vector<std::shared_ptr<RowFetch>> fetches;
    std::vector<int32_t> cached;
  };
  Asked Ask(std::span<const int64_t> ids);
  void Release(const Asked& asked);

  const std::shared_ptr<PeerNetwork> network_;
  const int type_;
  const uint32_t part_;
  const std::byte* const local_;
  const uint64_t row_bytes_;
  const std::span<const int32_t> owner_;
  const std::span<const int64_t> owner_row_;
  const std::unique_ptr<RemoteRowCache> cache_;

  mutable std::mutex mutex_;
  absl::flat_hash_map<uint64_t, Asked> announced_;
  uint64_t next_ticket_ = 1;
  std::atomic<uint64_t> local_rows_{0}, remote_rows_{0}, cached_rows_{0}, wait_nanos_{0};
};

}  // namespace gnnd
