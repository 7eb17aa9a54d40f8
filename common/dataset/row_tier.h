// Where a two-stage producer (server/sessions/producer.h) gets the feature rows of batches it sampled ahead:
// a batch's rows are announced when it is sampled, so a tier can start reading them (from storage: RowCache;
// from the nodes that own them: server/peers/part_rows.h) while earlier batches are gathered, and gathered
// later in the same order. Thread-safe: any number of gathers at once; announcements come one at a time.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gnnd {

class RowTier {
 public:
  virtual ~RowTier() = default;

  virtual uint64_t row_bytes() const = 0;
  // FAILED_PRECONDITION, naming `what`, when a batch of up to `max_rows` rows cannot be served.
  virtual absl::Status CheckBatchFits(int64_t max_rows, absl::string_view what) const = 0;
  // A batch that will be gathered later reads rows `ids` (each row once): its ticket (tickets increase).
  virtual uint64_t Announce(std::span<const int64_t> ids) = 0;
  // A batch announced and never to be gathered.
  virtual void Withdraw(uint64_t ticket) = 0;
  // Reads ahead what an announced batch needs, where that is worth doing now (best effort; errors come
  // again at the gather). Returns the rows read.
  virtual absl::StatusOr<int64_t> Prefetch(uint64_t ticket) = 0;
  // Copies row ids[i] (the ids announced as `ticket`) to out + i * row_bytes(); the ticket is done after.
  virtual absl::Status Gather(uint64_t ticket, std::span<const int64_t> ids, void* out) = 0;
  // A batch read `rows` rows from another tier (a GPU's) instead of this one.
  virtual void CountHeldElsewhere(uint64_t rows) = 0;
};

}  // namespace gnnd
