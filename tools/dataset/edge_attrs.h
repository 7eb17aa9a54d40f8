// Edge and node attributes at import. An edge attribute, a file of one row per input edge in the input's edge
// order, is written in CSC order beside the relation's indices — row k of the result is input row e_id[k] (the
// CSC builder's edge ids: an undirected copy shares its edge's row, a deduplicated edge keeps its first row's).
// A node attribute, one row per node, is written in id order.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd::dataset {

struct EdgeAttributeInput {
  std::string name;  // a schema name: [A-Za-z0-9_]+
  std::string path;  // an .npy of (E,) or (E, D), C order
};

// "NAME=FILE.npy" (gnnctl import --edge-attr), its name checked.
absl::StatusOr<EdgeAttributeInput> ParseEdgeAttributeFlag(absl::string_view flag);
// An edge attribute's name: a schema name that names no batch array.
absl::Status CheckEdgeAttributeName(absl::string_view name);

// Writes DIR/PREFIXedge.NAME.npy from `input` (num_input_edges rows; float64 becomes float32, float32,
// float16 and bool are kept, integers become int64; floats must be finite, bools 0 or 1), its rows in the order of
// `ids` (positions among the input rows). Returns its manifest entry. Errors name the file and, for a value, the
// element.
absl::StatusOr<v1::EdgeAttribute> WriteEdgeAttribute(const std::string& dir, const std::string& prefix,
                                                     const EdgeAttributeInput& input, int64_t num_input_edges,
                                                     std::span<const int64_t> ids);

// A node attribute at import (gnnctl import --node-attr): one row per node, in id order.
struct NodeAttributeInput {
  std::string type;         // a node type's name; empty for a homogeneous dataset
  EdgeAttributeInput attr;  // its name and file
};

// "NAME=FILE.npy" or "TYPE.NAME=FILE.npy" (gnnctl import --node-attr), its names checked.
absl::StatusOr<NodeAttributeInput> ParseNodeAttributeFlag(absl::string_view flag);

// Writes DIR/PREFIXnode.NAME.npy from `input` (num_nodes rows, in id order; dtypes as WriteEdgeAttribute's).
// Returns its manifest entry.
absl::StatusOr<v1::EdgeAttribute> WriteNodeAttribute(const std::string& dir, const std::string& prefix,
                                                     const EdgeAttributeInput& input, int64_t num_nodes);

}  // namespace gnnd::dataset
