#include "common/dataset/hot_order.h"

#include <algorithm>
#include <numeric>

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

std::vector<int32_t> HeatRanks(std::span<const int64_t> hottest_first, int64_t begin, int64_t count) {
  std::vector<int32_t> rank(count, -1);
  int64_t next = count - 1;
  for (int64_t id : hottest_first) {
    if (id >= begin && id < begin + count && rank[id - begin] < 0) rank[id - begin] = static_cast<int32_t>(next--);
  }
  for (int64_t i = count - 1; i >= 0; --i) {  // the unlisted, below every listed one
    if (rank[i] < 0) rank[i] = static_cast<int32_t>(next--);
  }
  return rank;
}

std::vector<int32_t> DegreeRanks(const int64_t* indptr, int64_t count) {
  std::vector<int64_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return indptr[a + 1] - indptr[a] > indptr[b + 1] - indptr[b]; });
  return HeatRanks(order, 0, count);
}

std::vector<int64_t> HottestRows(std::span<const int32_t> ranks, int64_t count) {
  const auto n = static_cast<int64_t>(ranks.size());
  std::vector<int64_t> out(std::clamp<int64_t>(count, 0, n));
  for (int64_t row = 0; row < n; ++row) {
    const int64_t position = n - 1 - ranks[row];
    if (position < static_cast<int64_t>(out.size())) out[position] = row;
  }
  return out;
}

}  // namespace gnnd
