// The batch schema, the layout and a batch's counts as they travel on the session stream
// (SessionOpened.schema and .layout, BatchReady), converted in one place for gnnd and its clients.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "common/batch/batch.h"
#include "common/batch/batch_schema.h"
#include "gnnd/v1/service.pb.h"

namespace gnnd {

v1::BatchSchema BatchSchemaToProto(const BatchSchema& schema);
// The schema gnnd described, checked as untrusted input: names unique and non-empty, dtypes known, counts
// in range, every array inside the slot at its count's capacity (no overflow). INVALID_ARGUMENT otherwise.
absl::StatusOr<BatchSchema> BatchSchemaFromProto(const v1::BatchSchema& proto);

v1::SlotLayout SlotLayoutToProto(const HomogeneousLayout& layout);
// The layout gnnd described; INVALID_ARGUMENT if an array would not fit in its slot. (Per-hop bounds
// stay with gnnd: a client needs only the offsets and capacities.)
absl::StatusOr<HomogeneousLayout> SlotLayoutFromProto(const v1::SlotLayout& proto);

// Sets `ready`'s per-hop counts (hops + 1 node counts, hops edge counts), their totals and its counts (in
// HomogeneousBatchSchema's order).
void SetBatchCounts(std::span<const int32_t> nodes_per_hop, std::span<const int32_t> edges_per_hop,
                    v1::BatchReady& ready);

}  // namespace gnnd
