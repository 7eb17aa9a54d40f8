#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

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

absl::StatusOr<bool> ConvertOgbEdgeFeatureCsv(const std::string& source, const std::string& name, int64_t edges,
                                              const std::string& edges_from, const std::string& scratch) {
  const std::string path = absl::StrCat(source, "/", name);
  if (std::error_code ec; !fs::exists(path, ec)) return false;
  GNND_ASSIGN_OR_RETURN(auto reader, LineReader::Open(path, name));
  std::optional<NpyWriter> out;
  std::vector<float> row;
  int64_t rows = 0;
  size_t dim = 0;  // the first line's
  absl::string_view line;
  for (;;) {
    GNND_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    row.clear();
    for (absl::string_view field : SplitFields(line, ',')) {
      GNND_ASSIGN_OR_RETURN(double value, ParseDouble(field, reader->Where()));
      row.push_back(static_cast<float>(value));
      if (!std::isfinite(row.back())) {
        return absl::InvalidArgumentError(
            absl::StrCat(reader->Where(), ": ", field, " (edge features must be finite)"));
      }
    }
    if (!out) {
      dim = row.size();
      GNND_ASSIGN_OR_RETURN(out, NpyWriter::CreateAppendable(scratch, DType::kFloat32, {static_cast<int64_t>(dim)}));
    } else if (row.size() != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat(reader->Where(), ": ", row.size(), " values, the first line ", dim));
    }
    GNND_RETURN_IF_ERROR(out->Append(row.data(), 1));
    ++rows;
  }
  if (rows != edges) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": ", rows, " lines, but ", edges_from, " has ", edges, " edges"));
  }
  if (!out) return false;
  GNND_RETURN_IF_ERROR(out->Finish());
  return true;
}

absl::StatusOr<bool> CopyOgbEdgeFeatureNpz(const std::string& npz, const std::string& member, const std::string& what,
                                           int64_t edges, const std::string& scratch) {
  {  // None: a .npy whose header says descr '|O'
    GNND_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> stream, OpenNpzMember(npz, member));
    std::string head(256, '\0');
    GNND_ASSIGN_OR_RETURN(const size_t got, stream->Read(head.data(), head.size()));
    head.resize(got);
    if (absl::StrContains(head, "'descr': '|O'")) return false;
  }
  GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpzArray(npz, member, what));
  const NpyHeader& h = reader.header();
  if (h.shape.empty() || h.shape.size() > 2 || h.shape[0] != edges || (h.shape.size() == 2 && h.shape[1] < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": shape ", ShapeText(h.shape), ", expected (", edges, ", dim): a row an edge"));
  }
  if (h.fortran_order && h.shape.size() == 2 && h.shape[1] > 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": Fortran order (save it in C order)"));
  }
  // Copied as it is: WriteEdgeAttribute converts and orders it.
  std::vector<int64_t> row_shape(h.shape.begin() + 1, h.shape.end());
  GNND_ASSIGN_OR_RETURN(NpyWriter out, NpyWriter::CreateAppendable(scratch, h.dtype, row_shape));
  const int64_t width = h.shape.size() == 2 ? std::max<int64_t>(h.shape[1], 1) : 1;
  std::vector<std::byte> block(static_cast<size_t>(std::min<int64_t>(h.shape[0], 1 << 16) * width) *
                               DTypeSize(h.dtype));
  for (int64_t first = 0; first < h.shape[0];) {
    const int64_t rows =
        std::min<int64_t>(h.shape[0] - first, static_cast<int64_t>(block.size() / (width * DTypeSize(h.dtype))));
    GNND_RETURN_IF_ERROR(reader.ReadRaw(block.data(), static_cast<size_t>(rows * width)));
    GNND_RETURN_IF_ERROR(out.Append(block.data(), rows));
    first += rows;
  }
  GNND_RETURN_IF_ERROR(out.Finish());
  return true;
}

absl::Status ImportOgbCsv(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  if (IsOgbTypedCsv(source)) return ImportOgbTypedCsv(source, out_dir, options);
  GNND_ASSIGN_OR_RETURN(int64_t num_nodes, ReadNumNodes(source));
  GNND_ASSIGN_OR_RETURN(ImportBuilder builder, ImportBuilder::Create(out_dir, num_nodes, options));
  GNND_RETURN_IF_ERROR(builder.ReadEdgeLines(absl::StrCat(source, "/raw/edge.csv.gz"), "raw/edge.csv.gz", ','));
  {
    const EdgeAttributeInput input{"edge_attr", builder.ScratchPath("edge_attr.input.npy")};
    GNND_ASSIGN_OR_RETURN(const bool found,
                          ConvertOgbEdgeFeatureCsv(source, "raw/edge-feat.csv.gz", builder.edges().count(),
                                                   "raw/edge.csv.gz", input.path));
    if (found) builder.AddEdgeAttribute(input);
  }
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
  GNND_ASSIGN_OR_RETURN(const std::vector<std::string> members, ListNpzArrays(data));
  if (std::find(members.begin(), members.end(), "edge_feat") != members.end()) {
    const EdgeAttributeInput input{"edge_attr", builder.ScratchPath("edge_attr.input.npy")};
    GNND_ASSIGN_OR_RETURN(const bool found, CopyOgbEdgeFeatureNpz(data, "edge_feat", "raw/data.npz:edge_feat",
                                                                  builder.edges().count(), input.path));
    if (found) builder.AddEdgeAttribute(input);
  }
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
