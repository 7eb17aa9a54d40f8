#include "absl/strings/str_cat.h"
#include "client/gnnctl/import.h"
#include "client/gnnctl/input.h"
#include "client/gnnctl/progress.h"
#include "common/status.h"

namespace gnnd::gnnctl {

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
  {
    const std::string name = source.substr(source.find_last_of('/') + 1);
    GNND_ASSIGN_OR_RETURN(auto reader, LineReader::Open(source, name));
    Progress progress("edges", 0, "edges");
    absl::string_view line;
    for (;;) {
      GNND_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) break;
      if (const size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
      std::vector<absl::string_view> fields = SplitFields(line, ' ');
      if (fields.empty()) continue;
      if (fields.size() != 2) {
        return absl::InvalidArgumentError(
            absl::StrCat(reader->Where(), ": ", fields.size(), " fields, expected 'src dst'"));
      }
      GNND_ASSIGN_OR_RETURN(int64_t src, ParseInt(fields[0], reader->Where()));
      GNND_ASSIGN_OR_RETURN(int64_t dst, ParseInt(fields[1], reader->Where()));
      GNND_RETURN_IF_ERROR(builder.edges().Add(src, dst, reader->Where()));
      if ((builder.edges().count() & 0xffff) == 0) progress.Set(builder.edges().count());
    }
    progress.Set(builder.edges().count());
  }
  GNND_RETURN_IF_ERROR(builder.ReadFeatures(features));
  GNND_ASSIGN_OR_RETURN(NpyStreamReader labels, OpenNpyStream(options.labels_npy, options.labels_npy));
  GNND_RETURN_IF_ERROR(builder.ReadLabels(labels));
  const std::pair<Split, const char*> splits[] = {
      {Split::kTrain, "train"}, {Split::kValid, "valid"}, {Split::kTest, "test"}};
  for (auto [split, name] : splits) {
    const std::string path = absl::StrCat(options.splits_dir, "/", name, ".npy");
    GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpyStream(path, absl::StrCat(name, ".npy")));
    GNND_RETURN_IF_ERROR(builder.ReadSplit(split, reader));
  }
  return builder.Finish(absl::StrCat("edgelist:", source));
}

}  // namespace gnnd::gnnctl
