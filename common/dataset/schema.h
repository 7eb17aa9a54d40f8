// What a dataset holds, described as data: its node types (each a range of one global id space), its
// relations (src_type, name, dst_type), each one CSC, and the table of its arrays (name, role, owner,
// dtype, shape). Made from the manifest once and checked there; loading, validation, shared memory and
// GPU placement iterate `arrays`. A format_version 1 manifest (homogeneous) is the one-type,
// one-relation case, with its arrays under their old names (indptr, indices, features, ...).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/base/dtype.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd {

enum class ArrayRole : uint8_t {
  kIndptr,
  kIndices,
  kFeatures,
  kLabels,
  kSplit,
  kEdges,
  kEdgeLabels,
  kNegatives,
  kEdgeIds,
  kEdgeAttr,
  kNodeAttr,
  kNodeTime,
  kSplitTime,
  kEdgeSplitTime,
  kOwner,     // a part's owner map (int32 per node: the part holding its feature row)
  kOwnerRow,  // int64 per node: that row's position in its part's features
};

// Whether `name` may name a node type or relation: letters, digits and _, 1 to 64 bytes, no "___". Such
// names become file and segment names, so nothing else may (a "../x" from a downloaded file never does).
bool IsSchemaName(absl::string_view name);
// The node times' other name (manifest node_time_name, gnnctl import --node-time-name): a schema name, not
// "node_time" itself.
absl::Status CheckNodeTimeName(absl::string_view name);
// Whether `name` is an array a batch carries (node_ids, e_id, edge_label, ...): batches carry edge attributes
// under their names, so no attribute may take one.
bool IsBatchArrayName(absl::string_view name);
inline constexpr size_t kMaxSchemaNameBytes = 64;
inline constexpr uint32_t kMaxParts = 4096;  // parts of a partitioned dataset (gnnctl partition --parts)

// The node and edge splits, by position: their names are what sessions ask for.
inline constexpr std::array<absl::string_view, 3> kSplitNames = {"train", "valid", "test"};

// An array of a relation's edges in CSC order, or of a type's nodes (v1::EdgeAttribute).
struct EdgeAttributeSchema {
  std::string name;
  int64_t dim = 0;  // 0: one value a row, (num_edges,) or (num_nodes,)
  DType dtype = DType::kFloat32;
  int array = -1;  // its position in DatasetSchema::arrays

  // Whether its values can weight draws (the weighted rule, common/batch/sampling.h): one float32 an edge.
  bool CanWeighDraws() const { return dim == 0 && dtype == DType::kFloat32; }
  bool CanTimeDraws() const { return dim == 0 && dtype == DType::kInt64; }  // each edge's time (the temporal rule)
};

struct NodeTypeSchema {
  std::string name;
  int64_t num_nodes = 0;
  int64_t offset = 0;       // the global id of its node 0
  int64_t feature_dim = 0;  // 0: none
  DType feature_dtype = DType::kFloat32;
  int32_t num_classes = 0;  // 0: no labels
  std::array<int64_t, 3> split_sizes = {0, 0, 0};
  // Positions in DatasetSchema::arrays, -1 where the type has none. node_time: each node's time, int64.
  int features = -1, labels = -1, node_time = -1;
  std::array<int, 3> splits = {-1, -1, -1};
  std::array<int, 3> split_times = {-1, -1, -1};  // each split's seed times, int64
  std::vector<EdgeAttributeSchema> node_attrs;    // batches carry them by name, the rows of their nodes
  // A part of a partitioned dataset (DatasetSchema::partition), a type with features: each part's feature rows,
  // and the owner map's arrays (-1: none).
  std::vector<int64_t> part_rows;
  int owner = -1, owner_row = -1;

  size_t feature_row_bytes() const { return DTypeSize(feature_dtype) * static_cast<size_t>(feature_dim); }
};

// One split of a relation's seed edges (link prediction); edges < 0 where the relation has no such split.
struct EdgeSplitSchema {
  int64_t num_edges = 0;
  int64_t num_negatives = 0;  // fixed negatives per edge, for evaluation
  // Positions in DatasetSchema::arrays, -1 where absent. times: each seed edge's time, int64.
  int edges = -1, labels = -1, negatives = -1, times = -1;
};

struct RelationSchema {
  std::string src, name, dst;
  int src_type = 0, dst_type = 0;  // positions in DatasetSchema::node_types
  int64_t num_edges = 0;
  DType index_dtype = DType::kInt64;
  int indptr = -1, indices = -1;               // positions in DatasetSchema::arrays
  std::array<EdgeSplitSchema, 3> edge_splits;  // by position in kSplitNames
  int edge_ids = -1;                           // each edge's original id, int64 (-1: not stored)
  std::vector<EdgeAttributeSchema> edge_attrs;

  // "src___name___dst", OGB's spelling.
  std::string key() const { return src + "___" + name + "___" + dst; }
};

struct ArraySchema {
  std::string name;  // the file is NAME.npy and the segment gnnd.DATASET.NAME
  ArrayRole role = ArrayRole::kIndptr;
  int owner = 0;                // the relation (indptr, indices, edge splits) or node type (the rest)
  int split = -1;               // kSplit and the edge splits' arrays: a position in kSplitNames
  DType dtype = DType::kInt64;  // element dtype; a .npy holds NpyStorage(dtype)
  std::vector<int64_t> shape;

  size_t bytes() const;
  std::string file() const { return name + ".npy"; }
};

// Which part of a partitioned dataset one is (v1::Partition); num_parts 0: a whole dataset.
struct PartitionSchema {
  std::string dataset_id, method;
  uint32_t num_parts = 0, part = 0;
  uint64_t seed = 0;
};

struct DatasetSchema {
  uint32_t format_version = 0;
  PartitionSchema partition;
  std::vector<NodeTypeSchema> node_types;
  std::vector<RelationSchema> relations;
  std::vector<ArraySchema> arrays;
  int64_t num_nodes = 0;       // over all types: the size of the global id space
  std::string node_time_name;  // the node times' other name (open.time_attr), or empty

  // Checks the manifest's own consistency (version, names, positive counts, dtypes set, index dtypes wide
  // enough, sizes that fit in 64 bits) and describes it; errors name manifest.textproto and the field.
  static absl::StatusOr<DatasetSchema> FromManifest(const v1::DatasetManifest& manifest);

  bool partitioned() const { return partition.num_parts > 0; }
  // One node type and one relation: what the homogeneous samplers serve.
  bool homogeneous() const { return node_types.size() == 1 && relations.size() == 1; }
  size_t total_bytes() const;
  // The position of the type or relation named `name`, or -1.
  int NodeTypeNamed(absl::string_view name) const;
  // The relation keyed `key`: "src___rel___dst", or "src___dst" where one relation links src to dst (PyG's
  // two-part edge types); -1 if none (or several) match.
  int RelationKeyed(absl::string_view key) const;
};

}  // namespace gnnd
