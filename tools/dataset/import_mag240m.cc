// OGB-LSC MAG240M's processed layout, .npy arrays (under SRC or SRC/processed):
//   H___R___T/edge_index.npy        int64 (2, E) per relation (source ids of H, destination ids of T)
//   H___R___T/NAME.npy              (E,) or (E, D): the relation's edge attribute NAME, rows in edge_index's
//                                   order (gnnd's addition: OGB-LSC's relations have none)
//   T/node_feat.npy                 (N, D) features (float16 in MAG240M), streamed: never held in memory
//   T/node_label.npy                (N,) labels (float NaN or -1: none)
//   T/train.npy, valid.npy, test.npy  split ids (MAG240M ships them in split_dict.pt, a torch pickle: the
//                                   README gives the three lines that save them as .npy)
// A node type is every directory name that holds a T/ array or appears in a relation; its node count comes
// from options.num_nodes (gnnctl's --num-nodes T=N), else its features' rows, else its largest id in any
// relation plus one. Anything else in the directory (meta.pt, node_year.npy) is ignored.
#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/status.h"
#include "tools/dataset/edge_attrs.h"
#include "tools/dataset/import.h"
#include "tools/dataset/input.h"
#include "tools/dataset/typed_import.h"

namespace gnnd::dataset {
namespace fs = std::filesystem;

namespace {

std::string Root(const std::string& source) {
  std::error_code ec;
  return fs::is_directory(fs::path(source) / "processed", ec) ? source + "/processed" : source;
}

}  // namespace

absl::Status ImportMag240m(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  const std::string root = Root(source);
  std::error_code ec;
  fs::directory_iterator entries(root, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat(root, ": cannot list (", ec.message(), ")"));
  std::vector<std::string> relation_dirs;
  std::map<std::string, int64_t> counts;  // every node type; 0 until known
  for (const fs::directory_entry& e : entries) {
    if (!e.is_directory(ec)) continue;
    const std::string name = e.path().filename();
    const std::vector<std::string> parts = absl::StrSplit(name, "___");
    if (parts.size() == 3) {
      if (!Exists(e.path() / "edge_index.npy")) {
        return absl::InvalidArgumentError(absl::StrCat(name, "/edge_index.npy: missing (a relation's (2, E) ids)"));
      }
      relation_dirs.push_back(name);
      counts.try_emplace(parts[0], 0);
      counts.try_emplace(parts[2], 0);
    } else if (Exists(e.path() / "node_feat.npy") || Exists(e.path() / "node_label.npy")) {
      counts.try_emplace(name, 0);
    }
  }
  if (relation_dirs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(root, ": no H___R___T/edge_index.npy (expected MAG240M's processed layout)"));
  }
  std::sort(relation_dirs.begin(), relation_dirs.end());
  auto open = [&](const std::string& relative) { return OpenNpyStream(root + "/" + relative, relative); };
  // Node counts: given, else feature rows, else the largest id seen plus one (one pass over the edges).
  std::map<std::string, int64_t> largest;
  for (auto& [type, count] : counts) {
    if (auto given = options.num_nodes.find(type); given != options.num_nodes.end()) {
      count = given->second;
    } else if (Exists(absl::StrCat(root, "/", type, "/node_feat.npy"))) {
      GNND_ASSIGN_OR_RETURN(NpyStreamReader features, open(type + "/node_feat.npy"));
      if (features.header().shape.empty()) return absl::InvalidArgumentError(features.what() + ": a scalar");
      count = features.header().shape[0];
    }
  }
  for (const auto& [type, count] : options.num_nodes) {
    if (!counts.contains(type)) {
      return absl::InvalidArgumentError(absl::StrCat("--num-nodes ", type, "=", count, ": not a node type of ", root));
    }
  }
  for (const std::string& name : relation_dirs) {
    const std::vector<std::string> parts = absl::StrSplit(name, "___");
    if (counts[parts[0]] > 0 && counts[parts[2]] > 0) continue;
    GNND_RETURN_IF_ERROR(ReadEdgeIndexPairs([&] { return open(name + "/edge_index.npy"); },
                                            [&](int64_t src, int64_t dst, absl::string_view where) -> absl::Status {
                                              if (src < 0 || dst < 0) {
                                                return absl::InvalidArgumentError(
                                                    absl::StrCat(where, ": a negative node id"));
                                              }
                                              largest[parts[0]] = std::max(largest[parts[0]], src + 1);
                                              largest[parts[2]] = std::max(largest[parts[2]], dst + 1);
                                              return absl::OkStatus();
                                            }));
  }
  TypedSource typed;
  for (const auto& [type, count] : counts) typed.node_types.emplace_back(type, count > 0 ? count : largest[type]);
  for (const std::string& name : relation_dirs) {
    const std::vector<std::string> parts = absl::StrSplit(name, "___");
    typed.relations.push_back({parts[0], parts[1], parts[2]});
  }
  GNND_ASSIGN_OR_RETURN(TypedImportBuilder builder, TypedImportBuilder::Create(out_dir, typed, options));
  for (size_t r = 0; r < relation_dirs.size(); ++r) {
    GNND_RETURN_IF_ERROR(ReadEdgeIndexPairs([&] { return open(relation_dirs[r] + "/edge_index.npy"); },
                                            [&](int64_t src, int64_t dst, absl::string_view where) {
                                              return builder.AddEdge(static_cast<int>(r), src, dst, where);
                                            }));
    std::vector<fs::path> attrs;
    for (const fs::directory_entry& e : fs::directory_iterator(fs::path(root) / relation_dirs[r], ec)) {
      if (e.path().extension() == ".npy" && e.path().filename() != "edge_index.npy") attrs.push_back(e.path());
    }
    if (ec) return absl::InvalidArgumentError(absl::StrCat(relation_dirs[r], ": cannot list (", ec.message(), ")"));
    std::sort(attrs.begin(), attrs.end());
    for (const fs::path& path : attrs) {
      if (absl::Status named = CheckEdgeAttributeName(path.stem().string()); !named.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(relation_dirs[r], "/", path.filename().string(), ": ", named.message()));
      }
      builder.AddEdgeAttribute(static_cast<int>(r), {path.stem().string(), path.string()});
    }
  }
  for (const auto& [type, count] : typed.node_types) {
    const int t = builder.NodeTypeNamed(type);
    if (Exists(absl::StrCat(root, "/", type, "/node_feat.npy"))) {
      GNND_ASSIGN_OR_RETURN(NpyStreamReader features, open(type + "/node_feat.npy"));
      GNND_RETURN_IF_ERROR(builder.ReadFeatures(t, features));
    }
    if (Exists(absl::StrCat(root, "/", type, "/node_label.npy"))) {
      GNND_ASSIGN_OR_RETURN(NpyStreamReader labels, open(type + "/node_label.npy"));
      GNND_RETURN_IF_ERROR(builder.ReadLabels(t, labels));
    }
    for (int s = 0; s < 3; ++s) {
      const std::string file = absl::StrCat(type, "/", kSplitNames[s], ".npy");
      if (!Exists(root + "/" + file)) continue;
      GNND_ASSIGN_OR_RETURN(NpyStreamReader ids, open(file));
      const int64_t n = ids.header().NumElements();
      std::vector<int64_t> block(std::min<int64_t>(n, 1 << 16));
      for (int64_t done = 0; done < n; done += static_cast<int64_t>(block.size())) {
        const size_t count = static_cast<size_t>(std::min<int64_t>(block.size(), n - done));
        GNND_RETURN_IF_ERROR(ids.ReadInt64(block.data(), count));
        for (size_t i = 0; i < count; ++i) {
          GNND_RETURN_IF_ERROR(builder.AddSplitId(t, s, block[i], absl::StrCat(file, "[", done + i, "]")));
        }
      }
    }
  }
  return builder.Finish(absl::StrCat("mag240m:", source));
}

}  // namespace gnnd::dataset
