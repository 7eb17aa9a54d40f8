#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "tools/dataset/import.h"
#include "tools/dataset/input.h"

namespace gnnd::dataset {
namespace {

bool IsNpy(const std::string& path) { return absl::EndsWith(path, ".npy"); }

// The node count when no features give it: --num-nodes, else the largest id of the edges and the edge
// splits plus one (a pass over the edge list before the import's own).
absl::StatusOr<int64_t> NodeCount(const std::string& source, const std::string& name, const ImportOptions& options) {
  if (auto it = options.num_nodes.find(""); it != options.num_nodes.end()) return it->second;
  int64_t largest = -1;
  if (IsNpy(source)) {
    GNND_ASSIGN_OR_RETURN(largest, LargestId(source, name));
  } else {
    GNND_RETURN_IF_ERROR(ForEachEdgeLine(
        source, name, ' ',
        [&](int64_t src, int64_t dst, absl::string_view where) {
          if (src < 0 || dst < 0) return CheckNodeId(std::min(src, dst), INT64_MAX, where);
          largest = std::max({largest, src, dst});
          return absl::OkStatus();
        },
        [](double, absl::string_view) { return absl::OkStatus(); }));  // a weight column: read at the import
  }
  if (!options.edge_splits_dir.empty()) {
    GNND_ASSIGN_OR_RETURN(const int64_t in_splits, LargestEdgeSplitId(options.edge_splits_dir));
    largest = std::max(largest, in_splits);
  }
  return largest + 1;
}

}  // namespace

absl::Status ImportEdgeList(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  // An edge list carries only structure. Features, labels and node splits come from .npy files, each
  // optional: a graph alone (with edge splits) serves link prediction.
  if (!options.splits_dir.empty() && options.labels_npy.empty()) {
    return absl::InvalidArgumentError("--splits needs --labels (a split's nodes must be labeled)");
  }
  for (const auto& [type, count] : options.num_nodes) {
    if (!type.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--num-nodes ", type, "=", count, ": an edge list has one node type (give --num-nodes N)"));
    }
  }
  const std::string name = source.substr(source.find_last_of('/') + 1);
  std::optional<NpyStreamReader> features;
  int64_t num_nodes = 0;
  if (!options.features_npy.empty()) {
    GNND_ASSIGN_OR_RETURN(features, OpenNpyStream(options.features_npy, options.features_npy));
    if (features->header().shape.empty())
      return absl::InvalidArgumentError(absl::StrCat(options.features_npy, ": a scalar, expected (num_nodes, dim)"));
    num_nodes = features->header().shape[0];
    if (auto it = options.num_nodes.find(""); it != options.num_nodes.end() && it->second != num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("--num-nodes ", it->second, " but ", options.features_npy, " has ", num_nodes, " rows"));
    }
  } else {
    GNND_ASSIGN_OR_RETURN(num_nodes, NodeCount(source, name, options));
  }
  GNND_ASSIGN_OR_RETURN(ImportBuilder builder, ImportBuilder::Create(out_dir, num_nodes, options));
  builder.AllowNoFeatures();
  if (IsNpy(source)) {  // a (2, E) edge index, as torch_geometric's edge_index saved with numpy
    GNND_RETURN_IF_ERROR(builder.ReadEdgeIndex([&]() { return OpenNpyStream(source, name); }));
  } else {
    GNND_RETURN_IF_ERROR(builder.ReadEdgeLines(source, name, ' ', /*weight_column=*/true));
  }
  if (features.has_value()) GNND_RETURN_IF_ERROR(builder.ReadFeatures(*features));
  if (!options.labels_npy.empty()) {
    GNND_ASSIGN_OR_RETURN(NpyStreamReader labels, OpenNpyStream(options.labels_npy, options.labels_npy));
    GNND_RETURN_IF_ERROR(builder.ReadLabels(labels));
  }
  if (!options.splits_dir.empty()) {
    for (ArrayId split : kSplits) {
      const absl::string_view split_name = ArrayName(split);
      const std::string path = absl::StrCat(options.splits_dir, "/", split_name, ".npy");
      GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpyStream(path, absl::StrCat(split_name, ".npy")));
      GNND_RETURN_IF_ERROR(builder.ReadSplit(split, reader));
    }
  }
  if (!options.edge_splits_dir.empty()) GNND_RETURN_IF_ERROR(builder.ReadEdgeSplits());
  return builder.Finish(absl::StrCat("edgelist:", source));
}

}  // namespace gnnd::dataset
