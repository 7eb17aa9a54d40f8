// Slots sized by the batches a session samples (OpenSession.slots_may_grow). Feature rows are most of a
// slot, and their bound — every node a batch could reach — is often the whole graph: a typed graph's
// relations reach most of its nodes within three hops. Real batches hold a small part of it. So each node
// type's feature rows are sized from a few batches of the first epoch sampled at open (graph only, on the
// host: the rule is the same on every device), with headroom; the rare batch that needs more makes the
// session add larger slots (server/sessions/session.h), rows grown geometrically so that it stays rare.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/batch/seeds.h"
#include "common/wire/open_request.h"
#include "server/sessions/slot_backend.h"

namespace gnnd {

// Batches sampled at open, at steps spread over the first epoch.
inline constexpr int kSizingBatches = 16;
// No batch is started after this long (one at least is sampled): an open with heavy batches sizes its slots
// by fewer, and the session grows them if a later batch needs more.
inline constexpr std::chrono::milliseconds kSizingTime{300};

// The feature rows per node type for slots sized by the batches of `plan` (laid out as `shape`): the most
// nodes of each type among up to kSizingBatches batches of `seeds`, with headroom (RowsWithHeadroom). The
// batches are sampled into at most plan.num_slots slots without feature rows (what the session's least size
// counts); CANCELLED once `abandoned` (if set) returns true, checked before each batch.
absl::StatusOr<std::vector<int64_t>> SampledFeatureRows(const SessionPlan& plan, const SessionShape& shape,
                                                        const EpochSeeds& seeds,
                                                        const std::function<bool()>& abandoned = nullptr);
// Rows for batches of up to `nodes` nodes: a quarter more and 64 rows, at most `bound`.
int64_t RowsWithHeadroom(int64_t nodes, int64_t bound);
// Rows after a batch of `needed` nodes did not fit in `held`: the larger of RowsWithHeadroom(needed) and
// 1.5 x held, at most `bound` (so that a session adds slots a few times at most).
int64_t GrownRows(int64_t needed, int64_t held, int64_t bound);

}  // namespace gnnd
