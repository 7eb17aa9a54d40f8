#include "common/batch/open_request.h"

#include "absl/strings/str_cat.h"
#include "common/base/status.h"

namespace gnnd {
namespace {

// Keeps the code, prefixes the message with the request field's path.
absl::Status InField(const absl::Status& s, absl::string_view prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// The trainer's own seeds (PyG's input_nodes): node ids of the dataset, in place of a split.
absl::Status CheckSeedIds(const v1::OpenSession& request, const v1::DatasetManifest& m) {
  if (!request.split().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.split = ", Quoted(request.split()), " and open.seed_ids: give one of them"));
  }
  for (int i = 0; i < request.seed_ids_size(); ++i) {
    const int64_t id = request.seed_ids(i);
    if (id < 0 || id >= m.num_nodes()) {
      return absl::InvalidArgumentError(absl::StrCat("open.seed_ids[", i, "] = ", id, " (not a node of '",
                                                     request.dataset(), "': ids are 0 to ", m.num_nodes() - 1, ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SessionShape> CheckOpenRequest(const v1::OpenSession& request, const v1::DatasetManifest& m,
                                              int64_t max_in_degree, const SlotLimits& limits) {
  SessionShape shape;
  if (m.format_version() != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("open.dataset = ", Quoted(request.dataset(), 100),
                     " is a typed dataset (format_version 2): sessions serve homogeneous datasets for now"));
  }
  GNND_ASSIGN_OR_RETURN(shape.device, ParseDevice(request.device(), "open.device"));
  if (request.seed_ids_size() > 0) {
    GNND_RETURN_IF_ERROR(CheckSeedIds(request, m));
  } else {
    const absl::StatusOr<ArrayId> split = SplitArrayId(request.split());
    if (!split.ok()) return InField(split.status(), "open.");
    shape.split = *split;
  }
  shape.sampling = {request.batch_size(),
                    {request.fanouts().begin(), request.fanouts().end()},
                    /*seeds_may_repeat=*/request.seed_ids_size() > 0};
  GNND_RETURN_IF_ERROR(InField(CheckSamplingSpec(shape.sampling), "open."));
  shape.schedule = {request.seed(),       !request.no_shuffle(), request.drop_last(),
                    request.batch_size(), request.rank(),        request.world_size() == 0 ? 1 : request.world_size()};
  GNND_RETURN_IF_ERROR(InField(CheckSeedScheduleSpec(shape.schedule), "open."));
  shape.num_slots = request.num_slots() == 0 ? limits.default_slots : request.num_slots();
  if (shape.num_slots < 1 || shape.num_slots > kMaxSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("open.num_slots = ", request.num_slots(), " (must be 1 to ", kMaxSlots, ")"));
  }
  GNND_ASSIGN_OR_RETURN(BatchCapacity capacity,
                        ComputeBatchCapacity(shape.sampling, m.num_nodes(), m.num_edges(), max_in_degree));
  shape.layout = BatchLayout::Make(capacity, static_cast<int>(shape.sampling.fanouts.size()), FeatureRowBytes(m));
  shape.slot_bytes = static_cast<uint64_t>(shape.layout.total_bytes) * shape.num_slots;
  if (shape.slot_bytes > limits.max_session_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("open: the session needs ", shape.slot_bytes, " bytes of slots (",
                                                   shape.num_slots, " x ", shape.layout.total_bytes,
                                                   "), over the limit of ", limits.max_session_bytes,
                                                   " (max_session_bytes): lower batch_size, fanouts or num_slots"));
  }
  return shape;
}

}  // namespace gnnd
