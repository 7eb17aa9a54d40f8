#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status.h"
#include "tools/dataset/import.h"
#include "tools/dataset/input.h"
#include "tools/dataset/progress.h"

namespace gnnd::dataset {
namespace fs = std::filesystem;
namespace {

// Reads one whole csv.gz of single integers (a split, or the node count).
absl::Status ForEachIntLine(const std::string& path, const std::string& name,
                            const std::function<absl::Status(int64_t, const std::string&)>& fn) {
  GNND_ASSIGN_OR_RETURN(auto reader, LineReader::Open(path, name));
  absl::string_view line;
  for (;;) {
    GNND_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) return absl::OkStatus();
    if (line.empty()) continue;
    const std::string where = reader->Where();
    GNND_ASSIGN_OR_RETURN(int64_t value, ParseInt(SplitFields(line, ',')[0], where));
    GNND_RETURN_IF_ERROR(fn(value, where));
  }
}

absl::StatusOr<int64_t> ReadNumNodes(const std::string& source) {
  int64_t num_nodes = -1;
  GNND_RETURN_IF_ERROR(ForEachIntLine(absl::StrCat(source, "/raw/num-node-list.csv.gz"), "raw/num-node-list.csv.gz",
                                      [&](int64_t n, const std::string&) {
                                        if (num_nodes < 0) num_nodes = n;
                                        return absl::OkStatus();
                                      }));
  if (num_nodes <= 0) return absl::InvalidArgumentError("raw/num-node-list.csv.gz: no positive node count");
  return num_nodes;
}

absl::Status ReadSplits(const std::string& source, const ImportOptions& options, ImportBuilder& builder) {
  GNND_ASSIGN_OR_RETURN(std::string dir, OgbSplitDir(source, options.split_scheme));
  const std::string scheme = fs::path(dir).filename();
  for (ArrayId split : kSplits) {
    const absl::string_view name = ArrayName(split);
    GNND_RETURN_IF_ERROR(
        ForEachIntLine(absl::StrCat(dir, "/", name, ".csv.gz"), absl::StrCat("split/", scheme, "/", name, ".csv.gz"),
                       [&](int64_t id, const std::string& where) { return builder.AddSplitId(split, id, where); }));
  }
  return absl::OkStatus();
}

}  // namespace

// The split/<scheme> folder: the named one, or the only one present.
absl::StatusOr<std::string> OgbSplitDir(const std::string& source, const std::string& scheme) {
  const fs::path root = fs::path(source) / "split";
  std::error_code ec;
  if (!scheme.empty()) {
    if (!fs::is_directory(root / scheme, ec))
      return absl::NotFoundError(absl::StrCat("split/", scheme, ": no such split scheme"));
    return (root / scheme).string();
  }
  std::vector<std::string> schemes;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    if (entry.is_directory()) schemes.push_back(entry.path().filename());
  }
  if (ec) return absl::NotFoundError(absl::StrCat(root.string(), ": missing (", ec.message(), ")"));
  if (schemes.size() != 1) {
    std::sort(schemes.begin(), schemes.end());
    return absl::InvalidArgumentError(absl::StrCat("split/: ", schemes.size(), " split schemes (",
                                                   absl::StrJoin(schemes, ", "), "); choose one with --split-scheme"));
  }
  return (root / schemes[0]).string();
}

absl::Status ImportOgbCsv(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  if (IsOgbTypedCsv(source)) return ImportOgbTypedCsv(source, out_dir, options);
  GNND_ASSIGN_OR_RETURN(int64_t num_nodes, ReadNumNodes(source));
  GNND_ASSIGN_OR_RETURN(ImportBuilder builder, ImportBuilder::Create(out_dir, num_nodes, options));
  GNND_RETURN_IF_ERROR(builder.ReadEdgeLines(absl::StrCat(source, "/raw/edge.csv.gz"), "raw/edge.csv.gz", ','));
  {
    GNND_ASSIGN_OR_RETURN(auto reader,
                          LineReader::Open(absl::StrCat(source, "/raw/node-feat.csv.gz"), "raw/node-feat.csv.gz"));
    Progress progress("features", num_nodes, "rows");
    absl::string_view line;
    std::vector<double> row;
    for (int64_t n = 0;; ++n) {
      GNND_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) break;
      row.clear();
      for (absl::string_view field : SplitFields(line, ',')) {
        GNND_ASSIGN_OR_RETURN(double value, ParseDouble(field, reader->Where()));
        row.push_back(value);
      }
      GNND_RETURN_IF_ERROR(builder.AppendFeatureRow(row, reader->Where()));
      if ((n & 0xfff) == 0) progress.Set(n);
    }
  }
  {
    GNND_ASSIGN_OR_RETURN(auto reader,
                          LineReader::Open(absl::StrCat(source, "/raw/node-label.csv.gz"), "raw/node-label.csv.gz"));
    absl::string_view line;
    int64_t node = 0;
    for (;;) {
      GNND_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
      if (!more) break;
      std::vector<absl::string_view> fields = SplitFields(line, ',');
      if (fields.size() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(reader->Where(), ": ", fields.size(),
                                                       " labels, expected one (multi-label data is not supported)"));
      }
      double label = std::nan("");
      if (!fields[0].empty()) {
        GNND_ASSIGN_OR_RETURN(label, ParseDouble(fields[0], reader->Where()));
      }
      GNND_RETURN_IF_ERROR(builder.SetLabel(node++, label, reader->Where()));
    }
    if (node != num_nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("raw/node-label.csv.gz: ", node, " labels but num_nodes = ", num_nodes));
    }
  }
  GNND_RETURN_IF_ERROR(ReadSplits(source, options, builder));
  return builder.Finish(absl::StrCat("ogb:", source));
}

absl::Status ImportOgbBinary(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  if (IsOgbTypedBinary(source)) return ImportOgbTypedBinary(source, out_dir, options);
  const std::string data = absl::StrCat(source, "/raw/data.npz");
  int64_t num_nodes;
  {
    GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpzArray(data, "num_nodes_list", "raw/data.npz:num_nodes_list"));
    if (reader.header().NumElements() < 1) return absl::InvalidArgumentError("raw/data.npz:num_nodes_list: empty");
    GNND_RETURN_IF_ERROR(reader.ReadInt64(&num_nodes, 1));
  }
  GNND_ASSIGN_OR_RETURN(ImportBuilder builder, ImportBuilder::Create(out_dir, num_nodes, options));
  GNND_RETURN_IF_ERROR(
      builder.ReadEdgeIndex([&] { return OpenNpzArray(data, "edge_index", "raw/data.npz:edge_index"); }));
  {
    GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpzArray(data, "node_feat", "raw/data.npz:node_feat"));
    GNND_RETURN_IF_ERROR(builder.ReadFeatures(reader));
  }
  {
    GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpzArray(absl::StrCat(source, "/raw/node-label.npz"),
                                                               "node_label", "raw/node-label.npz:node_label"));
    GNND_RETURN_IF_ERROR(builder.ReadLabels(reader));
  }
  GNND_RETURN_IF_ERROR(ReadSplits(source, options, builder));
  return builder.Finish(absl::StrCat("ogb-bin:", source));
}

}  // namespace gnnd::dataset
