// What a session's open request (v1::OpenSession) asks for, checked once against its dataset: the one
// function gnnd's sessions and `gnnctl sample` both use, so a request gnnctl takes gnnd takes too. Errors
// are INVALID_ARGUMENT naming the field ("open.batch_size = 0 ..."); nothing is allocated.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/base/limits.h"
#include "common/base/vocabulary.h"
#include "common/batch/batch.h"
#include "common/batch/seeds.h"
#include "common/dataset/dataset.h"
#include "gnnd/v1/service.pb.h"

namespace gnnd {

struct SlotLimits {
  int default_slots = kDefaultSlots;                     // num_slots = 0 means this many
  uint64_t max_session_bytes = kDefaultMaxSessionBytes;  // all of a session's slots together
};

struct SessionShape {
  Device device;
  ArrayId split = ArrayId::kTrain;  // unless the request gives seed_ids
  SamplingSpec sampling;
  SeedScheduleSpec schedule;
  int num_slots = 0;
  BatchLayout layout;       // of one slot
  uint64_t slot_bytes = 0;  // of all the slots
};

absl::StatusOr<SessionShape> CheckOpenRequest(const v1::OpenSession& request, const v1::DatasetManifest& manifest,
                                              int64_t max_in_degree, const SlotLimits& limits);

}  // namespace gnnd
