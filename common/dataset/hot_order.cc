#include "common/dataset/hot_order.h"

#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/dataset/npy.h"

namespace gnnd {

absl::StatusOr<std::vector<int64_t>> ReadHotOrder(const std::string& dir, int64_t num_nodes) {
  const std::string path = absl::StrCat(dir, "/", kHotOrderFile);
  GNND_ASSIGN_OR_RETURN(NpyFile file, NpyFile::Open(path));
  const NpyHeader& h = file.header();
  if (h.dtype != DType::kInt64 || h.shape.size() != 1 || h.fortran_order) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": expected a 1-D int64 array of node ids"));
  }
  if (h.shape[0] > num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", h.shape[0], " ids for a dataset of ", num_nodes, " nodes"));
  }
  const int64_t* ids = file.as<int64_t>();
  std::vector<int64_t> order(ids, ids + h.shape[0]);
  std::vector<bool> seen(static_cast<size_t>(num_nodes));
  for (size_t i = 0; i < order.size(); ++i) {
    const int64_t id = order[i];
    if (id < 0 || id >= num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": entry ", i, " is ", id, ", not a node id below ", num_nodes));
    }
    if (seen[id]) return absl::InvalidArgumentError(absl::StrCat(path, ": node ", id, " appears twice"));
    seen[id] = true;
  }
  return order;
}

}  // namespace gnnd
