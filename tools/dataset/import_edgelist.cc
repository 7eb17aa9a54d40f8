#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "tools/dataset/import.h"
#include "tools/dataset/input.h"

namespace gnnd::dataset {

absl::Status ImportEdgeList(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  // An edge list carries only structure: features, labels and splits come from .npy files, and the
  // features' row count is the node count.
  if (options.features_npy.empty() || options.labels_npy.empty() || options.splits_dir.empty()) {
    return absl::InvalidArgumentError(
        "edgelist import needs --features F.npy, --labels L.npy and --splits DIR (with train.npy, valid.npy, "
        "test.npy)");
  }
  GNND_ASSIGN_OR_RETURN(NpyStreamReader features, OpenNpyStream(options.features_npy, options.features_npy));
  if (features.header().shape.empty())
    return absl::InvalidArgumentError(absl::StrCat(options.features_npy, ": a scalar, expected (num_nodes, dim)"));
  const int64_t num_nodes = features.header().shape[0];
  GNND_ASSIGN_OR_RETURN(ImportBuilder builder, ImportBuilder::Create(out_dir, num_nodes, options));
  GNND_RETURN_IF_ERROR(builder.ReadEdgeLines(source, source.substr(source.find_last_of('/') + 1), ' '));
  GNND_RETURN_IF_ERROR(builder.ReadFeatures(features));
  GNND_ASSIGN_OR_RETURN(NpyStreamReader labels, OpenNpyStream(options.labels_npy, options.labels_npy));
  GNND_RETURN_IF_ERROR(builder.ReadLabels(labels));
  for (ArrayId split : kSplits) {
    const absl::string_view name = ArrayName(split);
    const std::string path = absl::StrCat(options.splits_dir, "/", name, ".npy");
    GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpyStream(path, absl::StrCat(name, ".npy")));
    GNND_RETURN_IF_ERROR(builder.ReadSplit(split, reader));
  }
  return builder.Finish(absl::StrCat("edgelist:", source));
}

}  // namespace gnnd::dataset
