// What every importer of a typed graph produces: per relation, edges spooled and turned into its CSC; per
// node type, features (converted to the chosen dtype), labels and splits where the source has them.
// Finish() derives the format_version 2 manifest and commits the directory atomically (DatasetWriter).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dataset/dataset_writer.h"
#include "common/dataset/npy.h"
#include "tools/dataset/csc_builder.h"
#include "tools/dataset/import_builder.h"

namespace gnnd::dataset {

struct TypedSource {
  std::vector<std::pair<std::string, int64_t>> node_types;  // name, node count
  std::vector<std::array<std::string, 3>> relations;        // src type, name, dst type
  // The files they come from, as errors name them.
  std::string node_types_from = "the node types", relations_from = "the relations";
};

class TypedImportBuilder {
 public:
  // With options.add_reverse, every relation (h, r, t) gets (t, rev_r, h) beside it, same-type ones included
  // (PyG's ToUndirected(merge=False) names). Every name is checked before anything is written: they
  // become file names, and come from files anyone may have made.
  static absl::StatusOr<TypedImportBuilder> Create(const std::string& out_dir, const TypedSource& source,
                                                   const ImportOptions& options);
  TypedImportBuilder(TypedImportBuilder&&) = default;

  int NodeTypeNamed(const std::string& name) const;
  int64_t num_nodes(int type) const { return types_[type].num_nodes; }

  // relation: a position in the source's relations.
  absl::Status AddEdge(int relation, int64_t src, int64_t dst, absl::string_view where);
  // The edges AddEdge has added to `relation` so far.
  int64_t num_edges(int relation) const;
  // One feature row of `type`, in node order; the first row fixes the width. `row_index` names the row in
  // errors where `where` does not (-1: it does).
  absl::Status AppendFeatureRow(int type, const std::vector<double>& row, absl::string_view where,
                                int64_t row_index = -1);
  // `rows` rows at once (`values`: rows x D, row-major), encoded on up to `threads` threads; `first_row` as
  // row_index for the first of them.
  absl::Status AppendFeatureRows(int type, std::span<const double> values, int64_t rows, absl::string_view where,
                                 int64_t first_row = -1, int threads = 1);
  // The whole [num_nodes, D] feature array of `type` from an .npy stream (any float or int dtype).
  absl::Status ReadFeatures(int type, NpyStreamReader& reader);
  // num_nodes labels of `type` from an .npy stream ([N] or [N, 1]; float NaN or -1: none).
  absl::Status ReadLabels(int type, NpyStreamReader& reader);
  // Labels of `type` (NaN or -1: none); a type with any label gets labels.npy and splits.
  absl::Status SetLabel(int type, int64_t node, double label, absl::string_view where);
  // split: 0 train, 1 valid, 2 test.
  absl::Status AddSplitId(int type, int split, int64_t node, absl::string_view where);
  // A seed edge of `relation` for link prediction in edge split `split` (0 train, 1 valid, 2 test): written
  // as KEY.SPLIT_edges.npy. It is not an edge of the graph unless AddEdge adds it too.
  // `time`: the pair's time (its split's SPLIT_edge_time.npy), given for every pair of the split or none.
  absl::Status AddSeedEdge(int relation, int split, int64_t src, int64_t dst, absl::string_view where,
                           std::optional<int64_t> time = std::nullopt);
  // An edge attribute of `relation` (and of its reverse relation, with add_reverse: the same rows reversed)
  // from a file of one row per edge in AddEdge order (written by the caller, e.g. at ScratchPath()).
  void AddEdgeAttribute(int relation, EdgeAttributeInput input);
  // The node times of the type named `type` from a file of one integer per node (e.g. written at ScratchPath()).
  void SetNodeTimes(const std::string& type, std::string path) {
    options_.node_times.push_back({type, std::move(path)});
  }
  // A node attribute of the type named input.type from a file of one row per node (e.g. at ScratchPath()).
  void AddNodeAttribute(NodeAttributeInput input) { options_.node_attrs.push_back(std::move(input)); }
  // A path in the dataset's work directory for a file that is not part of it (removed at Finish).
  std::string ScratchPath(absl::string_view file) const { return writer_->Path(file); }

  absl::Status Finish(const std::string& source);

 private:
  struct Type {
    std::string name;
    int64_t num_nodes = 0;
    std::optional<NpyWriter> features;
    int64_t feature_dim = 0;
    v1::FeatureDType feature_dtype = v1::FEATURE_DTYPE_UNSPECIFIED;  // set by the first row
    std::string features_from;                                       // the file they came from, as errors name it
    std::vector<int64_t> labels;  // empty: none; grows with the largest node labeled, filled at Finish
    std::array<std::vector<int64_t>, 3> splits;
    int64_t max_id = -1;  // the largest id an edge, label or split names
  };
  // A node count far beyond anything the input holds is a mistake (a corrupt or hostile count), refused
  // before the CSC's indptr (8 bytes a node) is made.
  absl::Status CheckCountsAgainstInput() const;
  struct Relation {
    std::string src, name, dst;
    int src_type = 0, dst_type = 0;
    std::optional<EdgeSpool> edges;
    int reverse = -1;  // the relation that gets each edge reversed, if any
    std::array<std::vector<int64_t>, 3> seed_src, seed_dst, seed_time;  // per edge split
    std::vector<EdgeAttributeInput> attrs;                              // its edge attributes, rows in AddEdge order
  };
  TypedImportBuilder() = default;

  ImportOptions options_;
  TypedSource source_;
  std::optional<DatasetWriter> writer_;
  std::vector<Type> types_;
  std::vector<Relation> relations_;
  std::vector<char> row_scratch_;
};

}  // namespace gnnd::dataset
