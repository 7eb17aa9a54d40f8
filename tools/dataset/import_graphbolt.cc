#include <yaml-cpp/yaml.h>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status.h"
#include "tools/dataset/import.h"
#include "tools/dataset/input.h"

namespace gnnd::dataset {
namespace {

constexpr char kMetadata[] = "metadata.yaml";

absl::Status Bad(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(kMetadata, ": ", field, ": ", problem));
}

absl::Status ReadEdges(const std::string& source, const YAML::Node& edges, ImportBuilder& builder) {
  if (!edges.IsSequence() || edges.size() != 1) {
    return Bad("graph.edges", "expected exactly one edge list (heterogeneous graphs are not supported)");
  }
  const YAML::Node& e = edges[0];
  if (e["type"] && !e["type"].IsNull()) return Bad("graph.edges[0].type", "heterogeneous graphs are not supported");
  const std::string format = e["format"].as<std::string>("");
  const std::string path = e["path"].as<std::string>("");
  if (path.empty()) return Bad("graph.edges[0].path", "missing");
  const std::string full = absl::StrCat(source, "/", path);
  if (format == "csv") return builder.ReadEdgeLines(full, path, ',');
  if (format != "numpy") {
    return Bad("graph.edges[0].format", absl::StrCat("'", format, "' is not supported (csv or numpy)"));
  }
  return builder.ReadEdgeIndex([&] { return OpenNpyStream(full, path); });
}

absl::Status ReadSet(const std::string& source, const YAML::Node& set, const std::string& field, ArrayId split,
                     ImportBuilder& builder) {
  if (!set || !set.IsSequence() || set.size() != 1)
    return Bad(field, "expected one item set (heterogeneous sets are not supported)");
  std::string seeds_path, labels_path;
  for (const YAML::Node& d : set[0]["data"]) {
    const std::string name = d["name"].as<std::string>("");
    const std::string format = d["format"].as<std::string>("");
    if (format != "numpy")
      return Bad(absl::StrCat(field, ".data.", name), absl::StrCat("format '", format, "' is not supported (numpy)"));
    if (name == "seeds" || name == "seed_nodes") seeds_path = d["path"].as<std::string>("");
    if (name == "labels") labels_path = d["path"].as<std::string>("");
  }
  if (seeds_path.empty()) return Bad(field, "no 'seeds' data");
  if (labels_path.empty()) return Bad(field, "no 'labels' data");
  GNND_ASSIGN_OR_RETURN(NpyStreamReader seeds, OpenNpyStream(absl::StrCat(source, "/", seeds_path), seeds_path));
  GNND_ASSIGN_OR_RETURN(NpyStreamReader labels, OpenNpyStream(absl::StrCat(source, "/", labels_path), labels_path));
  const int64_t count = seeds.header().NumElements();
  if (seeds.header().shape.size() != 1 || labels.header().NumElements() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat(seeds_path, " and ", labels_path, ": expected two vectors of one length"));
  }
  std::vector<int64_t> ids(count);
  std::vector<double> values(count);
  GNND_RETURN_IF_ERROR(seeds.ReadInt64(ids.data(), count));
  GNND_RETURN_IF_ERROR(labels.ReadDouble(values.data(), count));
  for (int64_t i = 0; i < count; ++i) {
    const std::string where = absl::StrCat(seeds_path, "[", i, "]");
    GNND_RETURN_IF_ERROR(builder.AddSplitId(split, ids[i], where));
    GNND_RETURN_IF_ERROR(builder.SetLabel(ids[i], values[i], absl::StrCat(labels_path, "[", i, "]")));
  }
  return absl::OkStatus();
}

absl::Status ImportFromYaml(const std::string& source, const YAML::Node& root, const std::string& out_dir,
                            const ImportOptions& options) {
  const YAML::Node nodes = root["graph"]["nodes"];
  if (!nodes || !nodes.IsSequence() || nodes.size() != 1) {
    return Bad("graph.nodes", "expected exactly one node type (heterogeneous graphs are not supported)");
  }
  const int64_t num_nodes = nodes[0]["num"].as<int64_t>(0);
  if (num_nodes <= 0) return Bad("graph.nodes[0].num", "missing or not positive");
  GNND_ASSIGN_OR_RETURN(ImportBuilder builder, ImportBuilder::Create(out_dir, num_nodes, options));
  GNND_RETURN_IF_ERROR(ReadEdges(source, root["graph"]["edges"], builder));

  bool have_features = false;
  for (const YAML::Node& f : root["feature_data"]) {
    if (f["domain"].as<std::string>("") != "node" || f["name"].as<std::string>("") != "feat") continue;
    if (f["format"].as<std::string>("") != "numpy") return Bad("feature_data(feat).format", "only numpy is supported");
    const std::string path = f["path"].as<std::string>("");
    GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpyStream(absl::StrCat(source, "/", path), path));
    GNND_RETURN_IF_ERROR(builder.ReadFeatures(reader));
    have_features = true;
  }
  if (!have_features) return Bad("feature_data", "no node feature named 'feat'");

  const YAML::Node tasks = root["tasks"];
  if (!tasks || !tasks.IsSequence() || tasks.size() == 0)
    return Bad("tasks", "missing (need train/validation/test sets)");
  const YAML::Node task = tasks[0];
  GNND_RETURN_IF_ERROR(ReadSet(source, task["train_set"], "tasks[0].train_set", ArrayId::kTrain, builder));
  GNND_RETURN_IF_ERROR(ReadSet(source, task["validation_set"], "tasks[0].validation_set", ArrayId::kValid, builder));
  GNND_RETURN_IF_ERROR(ReadSet(source, task["test_set"], "tasks[0].test_set", ArrayId::kTest, builder));
  return builder.Finish(absl::StrCat("graphbolt:", source), task["num_classes"].as<int32_t>(0));
}

}  // namespace

absl::Status ImportGraphBolt(const std::string& source, const std::string& out_dir, const ImportOptions& options) {
  const std::string path = absl::StrCat(source, "/", kMetadata);
  absl::StatusOr<FileDescriptor> file = OpenRegularFile(path, path);  // a FIFO would block
  if (!file.ok()) {
    return absl::Status(file.status().code(), absl::StrCat(path, ": cannot open (", file.status().message(), ")"));
  }
  GNND_ASSIGN_OR_RETURN(const std::string text, ReadAll(file->get(), size_t{64} << 20, path));
  try {
    const YAML::Node root = YAML::Load(text);
    return ImportFromYaml(source, root, out_dir, options);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(kMetadata, ": ", e.what()));
  }
}

}  // namespace gnnd::dataset
