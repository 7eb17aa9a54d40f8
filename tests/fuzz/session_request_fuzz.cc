// Fuzzes the session request validator with whatever bytes a peer may send as an OpenSession message,
// against a fixed dataset shape; an accepted request's layout must fit the limits it was checked against.
#include <cstdint>
#include <cstdlib>

#include "common/batch/open_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gnnd::v1::OpenSession request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  gnnd::v1::DatasetManifest manifest;
  manifest.set_format_version(1);
  manifest.set_num_nodes(2'449'029);
  manifest.set_num_edges(61'859'140);
  manifest.set_index_dtype(gnnd::v1::INDEX_DTYPE_INT32);
  manifest.set_feature_dim(100);
  manifest.set_feature_dtype(gnnd::v1::FEATURE_DTYPE_FLOAT32);
  manifest.set_num_classes(47);
  manifest.set_num_train(196'615);
  const gnnd::SlotLimits limits;
  auto shape = gnnd::CheckOpenRequest(request, manifest, 7'626, limits);
  if (shape.ok() &&
      (shape->slot_bytes > limits.max_session_bytes || shape->num_slots < 1 || shape->layout.total_bytes == 0)) {
    std::abort();  // an accepted request must be one the daemon can hold
  }
  return 0;
}
