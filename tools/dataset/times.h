// Times at import, for the temporal rule: a file of one integer per node (a type's node_time array,
// v1::NodeType.node_time) or per seed of a split (its SPLIT_time array, or a link split's SPLIT_edge_time).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gnnd::dataset {

struct NodeTimeInput {
  std::string type;  // a node type's name; empty for a homogeneous dataset
  std::string path;  // an .npy of (N,) or (N, 1) integers
};

// "FILE.npy" or "TYPE=FILE.npy" (gnnctl import --node-time).
absl::StatusOr<NodeTimeInput> ParseNodeTimeFlag(absl::string_view flag);

// Writes `out`, int64[count], from the .npy at `path`: (count,) or (count, 1) of an integer dtype (a time is a
// count of some unit; floats and bools are refused naming the dtype). Errors name the file, and the count as
// `count_name` ("num_nodes").
absl::Status WriteTimes(const std::string& out, const std::string& path, int64_t count, absl::string_view count_name);
// Node times for generated datasets: `out` of `count` int64, node v at time v (times grow with the ids).
absl::Status WriteIdTimes(const std::string& out, int64_t count);
// A split's seed times: DIR/SPLIT.npy (`split`: train, valid or test) of `count` integers into `out`; a split
// without seeds may have no file (then its times are empty).
absl::Status WriteSplitTimes(const std::string& out, const std::string& dir, absl::string_view split, int64_t count);

}  // namespace gnnd::dataset
