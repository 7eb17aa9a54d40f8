// The hot-tier ranking stored with a dataset: DIR/hot_order.npy, int64 node ids, hottest first (written
// by `gnnctl hotness --write`, read by gnnd when it builds a GPU hot tier). Its bytes come from outside,
// so reading it checks every id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gnnd {

inline constexpr char kHotOrderFile[] = "hot_order.npy";

// The ranking of the dataset in `dir` with `num_nodes` nodes: NOT_FOUND when it has none;
// INVALID_ARGUMENT naming what is wrong (dtype, shape, an id out of range or repeated).
absl::StatusOr<std::vector<int64_t>> ReadHotOrder(const std::string& dir, int64_t num_nodes);

}  // namespace gnnd
