// OGB's heterogeneous raw layout (as ogbn-mag ships it) into a typed dataset:
//   raw/num-node-dict.csv.gz        a header of node types, a row of their counts
//   raw/triplet-type-list.csv.gz    one "src,rel,dst" per line
//   raw/relations/S___R___D/edge.csv.gz (and num-edge-list.csv.gz, the count; edge-feat.csv.gz, features)
//   raw/node-feat/T/node-feat.csv.gz      for the types with features
//   raw/nodetype-has-label.csv.gz, raw/node-label/T/node-label.csv.gz
//   split/SCHEME/nodetype-has-split.csv.gz, split/SCHEME/T/{train,valid,test}.csv.gz
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/status.h"
#include "tools/dataset/import.h"
#include "tools/dataset/input.h"
#include "tools/dataset/typed_import.h"

namespace gnnd::dataset {
namespace fs = std::filesystem;
namespace {

// Every non-empty line of a csv.gz, split at commas; `name` is the file as errors show it.
absl::StatusOr<std::vector<std::vector<std::string>>> ReadRows(const std::string& source, const std::string& name) {
  GNND_ASSIGN_OR_RETURN(auto reader, LineReader::Open(absl::StrCat(source, "/", name), name));
  std::vector<std::vector<std::string>> rows;
  absl::string_view line;
  for (;;) {
    GNND_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) return rows;
    if (line.empty()) continue;
    std::vector<std::string>& row = rows.emplace_back();
    for (absl::string_view field : SplitFields(line, ',')) row.emplace_back(absl::StripAsciiWhitespace(field));
  }
}

// A "header of names, then one row of values" table (num-node-dict, nodetype-has-label, nodetype-has-split).
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadDict(const std::string& source,
                                                                          const std::string& name) {
  GNND_ASSIGN_OR_RETURN(auto rows, ReadRows(source, name));
  if (rows.size() != 2 || rows[0].size() != rows[1].size() || rows[0].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected a header of node types and one row of values"));
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < rows[0].size(); ++i) out.emplace_back(rows[0][i], rows[1][i]);
  return out;
}

bool IsTrue(const std::string& value) { return value == "True" || value == "true" || value == "1"; }

// Calls fn(values, where) for every line of a csv.gz of numbers.
absl::Status ForEachNumberRow(const std::string& source, const std::string& name,
                              const std::function<absl::Status(const std::vector<double>&, const std::string&)>& fn) {
  GNND_ASSIGN_OR_RETURN(auto reader, LineReader::Open(absl::StrCat(source, "/", name), name));
  absl::string_view line;
  std::vector<double> values;
  for (;;) {
    GNND_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) return absl::OkStatus();
    if (line.empty()) continue;
    values.clear();
    const std::string where = reader->Where();
    for (absl::string_view field : SplitFields(line, ',')) {
      if (field.empty()) {
        values.push_back(std::nan(""));
        continue;
      }
      GNND_ASSIGN_OR_RETURN(double value, ParseDouble(field, where));
      values.push_back(value);
    }
    GNND_RETURN_IF_ERROR(fn(values, where));
  }
}

// split/SCHEME/nodetype-has-split.csv.gz and each split type's {train,valid,test}.csv.gz (both OGB forms).
absl::Status ReadTypedSplits(const std::string& source, const ImportOptions& options, TypedImportBuilder& builder) {
  GNND_ASSIGN_OR_RETURN(const std::string split_dir, OgbSplitDir(source, options.split_scheme));
  const std::string scheme = fs::path(split_dir).filename();
  GNND_ASSIGN_OR_RETURN(auto has_split, ReadDict(source, absl::StrCat("split/", scheme, "/nodetype-has-split.csv.gz")));
  for (const auto& [type, split] : has_split) {
    if (!IsTrue(split)) continue;
    const int t = builder.NodeTypeNamed(type);
    if (t < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("split/", scheme, "/nodetype-has-split.csv.gz: unknown type '", type, "'"));
    for (int s = 0; s < 3; ++s) {
      const std::string name = absl::StrCat("split/", scheme, "/", type, "/", kSplitNames[s], ".csv.gz");
      GNND_RETURN_IF_ERROR(ForEachNumberRow(source, name, [&](const auto& v, const std::string& where) {
        if (v.size() != 1 || v[0] != std::floor(v[0])) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": expected one node id"));
        }
        return builder.AddSplitId(t, s, static_cast<int64_t>(v[0]), where);
      }));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsOgbTypedCsv(const std::string& source) {
  std::error_code ec;
  return fs::exists(fs::path(source) / "raw" / "num-node-dict.csv.gz", ec);
}

absl::Status ImportOgbTypedCsv(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  TypedSource typed{.node_types_from = "raw/num-node-dict.csv.gz", .relations_from = "raw/triplet-type-list.csv.gz"};
  GNND_ASSIGN_OR_RETURN(auto counts, ReadDict(source, "raw/num-node-dict.csv.gz"));
  for (const auto& [type, count] : counts) {
    GNND_ASSIGN_OR_RETURN(int64_t n, ParseInt(count, absl::StrCat("raw/num-node-dict.csv.gz: ", type)));
    typed.node_types.emplace_back(type, n);
  }
  GNND_ASSIGN_OR_RETURN(auto triplets, ReadRows(source, "raw/triplet-type-list.csv.gz"));
  for (const auto& row : triplets) {
    if (row.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("raw/triplet-type-list.csv.gz: ", row.size(), " fields in a line, expected 'src,rel,dst'"));
    }
    typed.relations.push_back({row[0], row[1], row[2]});
  }
  GNND_ASSIGN_OR_RETURN(TypedImportBuilder builder, TypedImportBuilder::Create(out_dir, typed, options));

  for (size_t r = 0; r < typed.relations.size(); ++r) {
    const auto& [src, rel, dst] = typed.relations[r];
    const std::string dir = absl::StrCat("raw/relations/", src, "___", rel, "___", dst);
    int64_t edges = 0;
    GNND_RETURN_IF_ERROR(ForEachNumberRow(source, dir + "/edge.csv.gz", [&](const auto& v, const std::string& where) {
      if (v.size() != 2 || v[0] != std::floor(v[0]) || v[1] != std::floor(v[1])) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": expected 'src,dst' node ids"));
      }
      ++edges;
      return builder.AddEdge(static_cast<int>(r), static_cast<int64_t>(v[0]), static_cast<int64_t>(v[1]), where);
    }));
    const EdgeAttributeInput attr{"edge_attr", builder.ScratchPath(absl::StrCat("edge_attr.", r, ".input.npy"))};
    GNND_ASSIGN_OR_RETURN(const bool has_attr, ConvertOgbEdgeFeatureCsv(source, dir + "/edge-feat.csv.gz", edges,
                                                                        dir + "/edge.csv.gz", attr.path));
    if (has_attr) builder.AddEdgeAttribute(static_cast<int>(r), attr);
    const std::string count_file = dir + "/num-edge-list.csv.gz";
    if (std::error_code ec; fs::exists(fs::path(source) / count_file, ec)) {
      GNND_ASSIGN_OR_RETURN(auto rows, ReadRows(source, count_file));
      if (rows.empty() || rows[0].empty() || rows[0][0] != absl::StrCat(edges)) {
        return absl::InvalidArgumentError(
            absl::StrCat(count_file, ": does not say ", edges, ", the edges of ", dir, "/edge.csv.gz"));
      }
    }
  }
  for (size_t t = 0; t < typed.node_types.size(); ++t) {
    const std::string name = absl::StrCat("raw/node-feat/", typed.node_types[t].first, "/node-feat.csv.gz");
    if (std::error_code ec; !fs::exists(fs::path(source) / name, ec)) continue;  // a type without features
    GNND_RETURN_IF_ERROR(ForEachNumberRow(source, name, [&](const auto& row, const std::string& where) {
      return builder.AppendFeatureRow(static_cast<int>(t), row, where);
    }));
  }
  GNND_ASSIGN_OR_RETURN(auto has_label, ReadDict(source, "raw/nodetype-has-label.csv.gz"));
  for (const auto& [type, labeled] : has_label) {
    if (!IsTrue(labeled)) continue;
    const int t = builder.NodeTypeNamed(type);
    if (t < 0)
      return absl::InvalidArgumentError(absl::StrCat("raw/nodetype-has-label.csv.gz: unknown type '", type, "'"));
    const std::string name = absl::StrCat("raw/node-label/", type, "/node-label.csv.gz");
    int64_t node = 0;
    GNND_RETURN_IF_ERROR(ForEachNumberRow(source, name, [&](const auto& v, const std::string& where) {
      if (v.size() != 1)
        return absl::InvalidArgumentError(absl::StrCat(where, ": ", v.size(), " labels, expected one"));
      return builder.SetLabel(t, node++, v[0], where);
    }));
    if (node != builder.num_nodes(t)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": ", node, " labels but '", type, "' has ", builder.num_nodes(t), " nodes"));
    }
  }
  GNND_RETURN_IF_ERROR(ReadTypedSplits(source, options, builder));
  return builder.Finish(absl::StrCat("ogb:", source));
}

bool IsOgbTypedBinary(const std::string& source) {
  std::error_code ec;
  return fs::exists(fs::path(source) / "raw" / "num_nodes_dict.npz", ec);
}

absl::Status ImportOgbTypedBinary(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  const std::string raw = source + "/raw/";
  TypedSource typed{.node_types_from = "raw/num_nodes_dict.npz", .relations_from = "raw/edge_index_dict.npz"};
  GNND_ASSIGN_OR_RETURN(const std::vector<std::string> types, ListNpzArrays(raw + "num_nodes_dict.npz"));
  for (const std::string& type : types) {
    GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpzArray(raw + "num_nodes_dict.npz", type,
                                                               absl::StrCat("raw/num_nodes_dict.npz:", type)));
    int64_t count = 0;
    if (reader.header().NumElements() < 1) return absl::InvalidArgumentError(absl::StrCat(reader.what(), ": empty"));
    GNND_RETURN_IF_ERROR(reader.ReadInt64(&count, 1));
    typed.node_types.emplace_back(type, count);
  }
  std::sort(typed.node_types.begin(), typed.node_types.end());  // OGB's order: by name
  GNND_ASSIGN_OR_RETURN(std::vector<std::string> keys, ListNpzArrays(raw + "edge_index_dict.npz"));
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys) {
    const std::vector<std::string> parts = absl::StrSplit(key, "___");
    if (parts.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("raw/edge_index_dict.npz: array '", key, "' is not named H___R___T"));
    }
    typed.relations.push_back({parts[0], parts[1], parts[2]});
  }
  GNND_ASSIGN_OR_RETURN(TypedImportBuilder builder, TypedImportBuilder::Create(out_dir, typed, options));
  for (size_t r = 0; r < keys.size(); ++r) {
    GNND_RETURN_IF_ERROR(ReadEdgeIndexPairs(
        [&] { return OpenNpzArray(raw + "edge_index_dict.npz", keys[r], "raw/edge_index_dict.npz:" + keys[r]); },
        [&](int64_t src, int64_t dst, absl::string_view where) {
          return builder.AddEdge(static_cast<int>(r), src, dst, where);
        }));
  }
  // OGB's DatasetSaver writes edge_feat_dict.npz: an array per relation that has features.
  if (std::error_code ec; fs::exists(raw + "edge_feat_dict.npz", ec)) {
    GNND_ASSIGN_OR_RETURN(const std::vector<std::string> arrays, ListNpzArrays(raw + "edge_feat_dict.npz"));
    for (const std::string& key : arrays) {
      const auto r = std::find(keys.begin(), keys.end(), key);
      if (r == keys.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("raw/edge_feat_dict.npz: array '", key, "' is not a relation of raw/edge_index_dict.npz"));
      }
      const int relation = static_cast<int>(r - keys.begin());
      const EdgeAttributeInput attr{"edge_attr",
                                    builder.ScratchPath(absl::StrCat("edge_attr.", relation, ".input.npy"))};
      GNND_ASSIGN_OR_RETURN(const bool has_attr,
                            CopyOgbEdgeFeatureNpz(raw + "edge_feat_dict.npz", key, "raw/edge_feat_dict.npz:" + key,
                                                  builder.num_edges(relation), attr.path));
      if (has_attr) builder.AddEdgeAttribute(relation, attr);
    }
  }
  // Node features: node_feat_dict.npz as OGB's DatasetSaver names it, node_feat.npz as some copies do.
  std::error_code ec;
  const std::string node_features = fs::exists(raw + "node_feat_dict.npz", ec) ? "node_feat_dict.npz" : "node_feat.npz";
  for (const auto& [file, labels] : {std::pair<std::string, bool>{node_features, false}, {"node-label.npz", true}}) {
    if (std::error_code ec; !fs::exists(raw + file, ec)) continue;
    GNND_ASSIGN_OR_RETURN(const std::vector<std::string> arrays, ListNpzArrays(raw + file));
    for (const std::string& type : arrays) {
      const int t = builder.NodeTypeNamed(type);
      if (t < 0)
        return absl::InvalidArgumentError(absl::StrCat("raw/", file, ": array '", type, "' is not a node type"));
      GNND_ASSIGN_OR_RETURN(NpyStreamReader reader,
                            OpenNpzArray(raw + file, type, absl::StrCat("raw/", file, ":", type)));
      GNND_RETURN_IF_ERROR(labels ? builder.ReadLabels(t, reader) : builder.ReadFeatures(t, reader));
    }
  }
  GNND_RETURN_IF_ERROR(ReadTypedSplits(source, options, builder));
  return builder.Finish(absl::StrCat("ogb-bin:", source));
}

}  // namespace gnnd::dataset
