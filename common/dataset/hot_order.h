// The hot-tier ranking stored with a dataset: DIR/hot_order.npy, int64 node ids, hottest first (written
// by `gnnctl hotness --write`, read by gnnd when it builds a GPU hot tier). Its bytes come from outside,
// so reading it checks every id.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gnnd {

inline constexpr char kHotOrderFile[] = "hot_order.npy";

// The ranking of the dataset in `dir` with `num_nodes` nodes: NOT_FOUND when it has none;
// INVALID_ARGUMENT naming what is wrong (dtype, shape, an id out of range or repeated).
absl::StatusOr<std::vector<int64_t>> ReadHotOrder(const std::string& dir, int64_t num_nodes);

// The rank of each id in [begin, begin + count), from the coldest (0) to the hottest (count - 1), by a
// ranking hottest first (ids outside the range skipped; ids it leaves out are colder than every one it
// lists, in id order). What the storage tier's eviction calls heat.
std::vector<int32_t> HeatRanks(std::span<const int64_t> hottest_first, int64_t begin, int64_t count);
// The same by in-degree (a CSC's indptr over `count` nodes), highest first.
std::vector<int32_t> DegreeRanks(const int64_t* indptr, int64_t count);
// The `count` hottest ids by ranks as those two give them (a permutation of 0..n-1), hottest first.
std::vector<int64_t> HottestRows(std::span<const int32_t> ranks, int64_t count);

}  // namespace gnnd
