// What every importer produces, collected in one place: edges (spooled, then CSC), features converted
// to the chosen dtype, labels (-1 until set), the three splits. Finish() builds the CSC, derives the
// manifest and commits the directory atomically (see DatasetWriter).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dataset/dataset.h"
#include "common/dataset/dataset_writer.h"
#include "common/dataset/npy.h"
#include "gnnd/v1/dataset.pb.h"
#include "tools/dataset/csc_builder.h"
#include "tools/dataset/edge_attrs.h"
#include "tools/dataset/times.h"

namespace gnnd::dataset {

struct ImportOptions {
  bool undirected = false;
  bool dedup = false;
  // Typed graphs: also (t, rev_r, h) for every relation (h, r, t).
  bool add_reverse = false;
  // Feature dtype of the dataset; unspecified keeps float32/float16 and turns anything else into float32.
  v1::FeatureDType feature_dtype = v1::FEATURE_DTYPE_UNSPECIFIED;
  // OGB formats: the folder under split/ (empty: the only one there).
  std::string split_scheme;
  // edgelist: the arrays that an edge list does not carry (.npy files), each optional.
  std::string features_npy, labels_npy, splits_dir;
  // Seed edges for link prediction: a directory with train.npy, valid.npy, test.npy ((2, E) each, any of
  // them), and beside each optional SPLIT_label.npy (E,) and SPLIT_neg.npy (E, K).
  std::string edge_splits_dir;
  // mag240m: node counts by type (else from features or the largest id); edgelist: the count under "".
  std::map<std::string, int64_t> num_nodes;
  int threads = 1;
  // Features: ±inf and values past the dtype's range become its largest finite value (else refused).
  bool clamp = false;
  // edgelist: edge attributes, one row per input edge in its order (stored in CSC order, with the edge ids);
  // edge_ids: the edge ids (each edge's input row) even without attributes.
  std::vector<EdgeAttributeInput> edge_attrs;
  bool edge_ids = false;
  // Node attributes, one row per node in id order (edgelist: no type; mag240m: each names its type).
  std::vector<NodeAttributeInput> node_attrs;
  // Each node's time (node_time.npy), for the temporal rule: one file (a homogeneous dataset) or one per type.
  std::vector<NodeTimeInput> node_times;
  std::string node_time_name;  // the node times' other name (manifest node_time_name), or empty
  // Each node split's seed times: a directory with train.npy, valid.npy, test.npy (a typed dataset's T/train.npy,
  // ...), one integer per seed of the split, in its order. A link split's times are SPLIT_time.npy beside its
  // seed edges in edge_splits_dir.
  std::string split_times_dir;
};

// Where a block of feature values comes from, as errors name an element: the file, the position of the
// block's first value among the file's values (-1: `where` names the row, e.g. a CSV line), the row width.
struct FeatureBlock {
  absl::string_view where;
  int64_t first = -1;
  int64_t dim = 1;
  // "edge" or "node": the values are such an attribute's (errors say so; no --clamp for them); empty: features.
  absl::string_view attribute;
};

// Converts `count` values to the bits of feature dtype `target` into `out`. A NaN, an infinity or a value
// past the dtype's range (float64 into float32, 1e5 into float16, 500 into float8) is refused naming the
// file and element, unless `clamp` (then ±inf and such values become the dtype's largest; NaN never).
template <typename In>
absl::Status EncodeFeaturesAs(DType target, const In* in, size_t count, char* out, const FeatureBlock& block,
                              bool clamp);
// The same check for values already in the dtype's bits (a float32 or float16 file kept as it is).
absl::Status CheckFeatureBits(DType dtype, const char* bits, size_t count, const FeatureBlock& block);

// "(2, 17)": an array shape as errors print it.
std::string ShapeText(const std::vector<int64_t>& shape);
// Calls edge(src, dst, where) for each line "src<separator>dst" of a text file, plain or gzip; separator ' '
// means runs of spaces/tabs and allows '#' comments; blank lines are skipped. `name` is used in errors. With
// `weight`, every line may instead carry a third field, a number: weight(value, where) is called for it after
// edge() (then every line must have one).
absl::Status ForEachEdgeLine(const std::string& path, const std::string& name, char separator,
                             const std::function<absl::Status(int64_t, int64_t, absl::string_view)>& edge,
                             const std::function<absl::Status(double, absl::string_view)>& weight = nullptr);
// A node id of a table of `num_nodes`, or INVALID_ARGUMENT naming `where`.
absl::Status CheckNodeId(int64_t node, int64_t num_nodes, absl::string_view where);
// A label as every importer reads it: NaN or -1 is none (-1), else a non-negative integer class id.
absl::StatusOr<int64_t> ParseLabel(double label, absl::string_view where);
// Reads the `num_nodes` labels of an .npy stream ([N] or [N, 1], any int or float dtype) in blocks and calls
// set(node, label, where) for each; `where` names the element ("FILE[17]") only when set fails.
absl::Status ForEachLabel(NpyStreamReader& reader, int64_t num_nodes,
                          const std::function<absl::Status(int64_t, double, absl::string_view)>& set);

// Reads a (2, E) integer edge index, C or Fortran order, calling add(src, dst, where) per edge; `add` must
// have no effect when it fails (it is called again to name the position). `open` opens the array anew each
// call (a C-order array is read by two streams side by side: sources and destinations).
absl::Status ReadEdgeIndexPairs(const std::function<absl::StatusOr<NpyStreamReader>()>& open,
                                const std::function<absl::Status(int64_t, int64_t, absl::string_view)>& add);

class ImportBuilder {
 public:
  static absl::StatusOr<ImportBuilder> Create(const std::string& out_dir, int64_t num_nodes,
                                              const ImportOptions& options);

  int64_t num_nodes() const { return num_nodes_; }
  EdgeSpool& edges() { return *edges_; }

  // Edges from text, one "src<separator>dst" per line, plain or gzip. separator ' ' means runs of
  // spaces/tabs and allows '#' comments; blank lines are skipped. `name` is used in errors. With
  // `weight_column`, lines may carry a third field: the edge attribute edge_weight (float32, finite).
  absl::Status ReadEdgeLines(const std::string& path, const std::string& name, char separator,
                             bool weight_column = false);
  // Edges from a (2, E) integer array, C or Fortran order. `open` opens the array anew each call (a
  // C-order array is read by two streams side by side: sources and destinations).
  absl::Status ReadEdgeIndex(const std::function<absl::StatusOr<NpyStreamReader>()>& open);

  // Features: the whole [num_nodes, D] array from an .npy stream (any float or int dtype), or row by row.
  absl::Status ReadFeatures(NpyStreamReader& reader);
  absl::Status AppendFeatureRow(const std::vector<double>& row, absl::string_view where);
  // `rows` float32 rows of `dim` values (the synthetic generator).
  absl::Status AppendFeatureRows(const float* data, int64_t rows, int64_t dim);

  // Labels: from a stream of num_nodes values (float NaN = unlabeled), or one at a time.
  absl::Status ReadLabels(NpyStreamReader& reader);
  absl::Status SetLabel(int64_t node, double label, absl::string_view where);

  // `split` is one of kSplits.
  absl::Status AddSplitId(ArrayId split, int64_t node, absl::string_view where);
  absl::Status ReadSplit(ArrayId split, NpyStreamReader& reader);

  // The seed edges of options.edge_splits_dir (import_edge_splits.cc).
  absl::Status ReadEdgeSplits();
  // A dataset without features may be written (a graph for link prediction); by default Finish refuses it.
  void AllowNoFeatures() { features_optional_ = true; }
  // An edge attribute from a file of one row per spooled edge (written by the caller, e.g. at ScratchPath()).
  void AddEdgeAttribute(EdgeAttributeInput input) { options_.edge_attrs.push_back(std::move(input)); }
  // A node attribute from a file of one row per node (e.g. written at ScratchPath()).
  void AddNodeAttribute(NodeAttributeInput input) { options_.node_attrs.push_back(std::move(input)); }
  // The node times from a file of one integer per node (e.g. written at ScratchPath()).
  void SetNodeTimes(std::string path) { options_.node_times = {{"", std::move(path)}}; }
  // A path in the dataset's work directory for a file that is not part of it (removed at Finish).
  std::string ScratchPath(absl::string_view file) const { return writer_->Path(file); }

  // num_classes 0 derives it from the labels (max + 1). Without any label set or split id given, the
  // dataset has no labels and no node splits.
  absl::Status Finish(const std::string& source, int32_t num_classes = 0);

 private:
  ImportBuilder() = default;
  absl::Status StartFeatures(DType source_dtype, int64_t dim, absl::string_view where);

  ImportOptions options_;
  int64_t num_nodes_ = 0;
  std::optional<DatasetWriter> writer_;
  std::optional<EdgeSpool> edges_;
  std::optional<NpyWriter> features_;
  v1::FeatureDType feature_dtype_ = v1::FEATURE_DTYPE_UNSPECIFIED;
  int64_t feature_dim_ = 0;
  std::vector<char> row_scratch_;
  std::optional<NpyWriter> labels_;
  int64_t* label_data_ = nullptr;
  bool labeled_ = false;  // a label was set or a split id added
  bool features_optional_ = false;
  std::vector<std::optional<NpyWriter>> splits_;
  std::vector<v1::EdgeSplit> edge_splits_;  // their arrays are written and finished
};

}  // namespace gnnd::dataset
