// `gnnctl import --edge-splits DIR`: the seed edges of link prediction, per split, into the dataset's
// SPLIT_edges.npy, SPLIT_edge_label.npy and SPLIT_neg.npy (the manifest's EdgeSplit).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/limits.h"
#include "common/base/status.h"
#include "tools/dataset/import.h"
#include "tools/dataset/input.h"

namespace gnnd::dataset {
namespace {

std::string SplitFile(absl::string_view split, absl::string_view suffix) { return absl::StrCat(split, suffix, ".npy"); }

// The split's labels: one class id (an integer >= 0) per seed edge.
absl::Status ReadEdgeLabels(NpyStreamReader& reader, int64_t num_edges, NpyWriter& out) {
  const NpyHeader& h = reader.header();
  if (!(h.shape.size() == 1 || (h.shape.size() == 2 && h.shape[1] == 1)) || h.shape[0] != num_edges) {
    return absl::InvalidArgumentError(absl::StrCat(reader.what(), ": shape ", ShapeText(h.shape), ", expected (",
                                                   num_edges, ",): one label per seed edge"));
  }
  int64_t* labels = out.mutable_as<int64_t>();
  return ForEachLabel(reader, num_edges, [labels](int64_t i, double value, absl::string_view where) {
    GNND_ASSIGN_OR_RETURN(const int64_t label, ParseLabel(value, where));
    if (label < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": no label (-1 or NaN); every seed edge needs a class id >= 0"));
    }
    labels[i] = label;
    return absl::OkStatus();
  });
}

// The split's fixed negatives: (E, K) destination ids, C order.
absl::Status ReadNegatives(NpyStreamReader& reader, int64_t num_nodes, int64_t* out) {
  const NpyHeader& h = reader.header();
  const int64_t k = h.shape[1];
  constexpr int64_t kBlock = 1 << 20;
  std::vector<int64_t> values;
  const int64_t total = h.shape[0] * k;
  for (int64_t start = 0; start < total; start += kBlock) {
    const int64_t count = std::min(kBlock, total - start);
    values.resize(count);
    GNND_RETURN_IF_ERROR(reader.ReadInt64(values.data(), count));
    for (int64_t i = 0; i < count; ++i) {
      const int64_t at = start + i;
      if (values[i] < 0 || values[i] >= num_nodes) {
        return CheckNodeId(values[i], num_nodes, absl::StrCat(reader.what(), "[", at / k, ", ", at % k, "]"));
      }
      out[at] = values[i];
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ImportBuilder::ReadEdgeSplits() {
  const std::string& dir = options_.edge_splits_dir;
  for (absl::string_view split : kSplitNames) {
    const std::string edges_file = SplitFile(split, ""), labels_file = SplitFile(split, "_label"),
                      negatives_file = SplitFile(split, "_neg"), times_file = SplitFile(split, "_time");
    const std::string path = absl::StrCat(dir, "/", edges_file);
    if (!Exists(path)) {
      for (const std::string& beside : {labels_file, negatives_file, times_file}) {
        if (Exists(absl::StrCat(dir, "/", beside))) {
          return absl::InvalidArgumentError(
              absl::StrCat(dir, ": ", beside, " without ", edges_file, " (the split's seed edges)"));
        }
      }
      continue;
    }
    auto open = [&]() { return OpenNpyStream(path, edges_file); };
    GNND_ASSIGN_OR_RETURN(NpyStreamReader header, open());
    const std::vector<int64_t> shape = header.header().shape;
    if (shape.size() != 2 || shape[0] != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(edges_file, ": shape ", ShapeText(shape), ", expected (2, num_edges): sources, destinations"));
    }
    const int64_t n = shape[1];
    v1::EdgeSplit& e = edge_splits_.emplace_back();
    e.set_name(std::string(split));
    e.set_num_edges(n);
    const std::string out_name = absl::StrCat(split, "_edges.npy");
    GNND_ASSIGN_OR_RETURN(NpyWriter edges, NpyWriter::CreateMapped(writer_->Path(out_name), DType::kInt64, {2, n}));
    int64_t* pairs = edges.mutable_as<int64_t>();
    int64_t at = 0;
    GNND_RETURN_IF_ERROR(ReadEdgeIndexPairs(open, [&](int64_t src, int64_t dst, absl::string_view where) {
      GNND_RETURN_IF_ERROR(CheckNodeId(src, num_nodes_, where));
      GNND_RETURN_IF_ERROR(CheckNodeId(dst, num_nodes_, where));
      pairs[at] = src;
      pairs[n + at] = dst;
      ++at;
      return absl::OkStatus();
    }));
    GNND_RETURN_IF_ERROR(edges.Finish());

    if (const std::string times_path = absl::StrCat(dir, "/", times_file); Exists(times_path)) {
      GNND_RETURN_IF_ERROR(
          WriteTimes(writer_->Path(absl::StrCat(split, "_edge_time.npy")), times_path, n, "the split's seed edges"));
      e.set_timed(true);
    }
    if (const std::string labels_path = absl::StrCat(dir, "/", labels_file); Exists(labels_path)) {
      GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpyStream(labels_path, labels_file));
      GNND_ASSIGN_OR_RETURN(
          NpyWriter labels,
          NpyWriter::CreateMapped(writer_->Path(absl::StrCat(split, "_edge_label.npy")), DType::kInt64, {n}));
      GNND_RETURN_IF_ERROR(ReadEdgeLabels(reader, n, labels));
      GNND_RETURN_IF_ERROR(labels.Finish());
      e.set_labeled(true);
    }
    if (const std::string negatives_path = absl::StrCat(dir, "/", negatives_file); Exists(negatives_path)) {
      GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpyStream(negatives_path, negatives_file));
      const NpyHeader& h = reader.header();
      if (h.shape.size() != 2 || h.shape[0] != n || h.shape[1] < 1 || h.fortran_order) {
        return absl::InvalidArgumentError(
            absl::StrCat(negatives_file, ": shape ", ShapeText(h.shape), h.fortran_order ? " (Fortran order)" : "",
                         ", expected C-order (", n, ", K): K negative destinations per seed edge"));
      }
      if (h.shape[1] > kMaxNegativeAmount) {
        return absl::InvalidArgumentError(absl::StrCat(negatives_file, ": ", h.shape[1],
                                                       " negatives per seed edge; gnnd serves at most ",
                                                       kMaxNegativeAmount, " (keep that many per edge)"));
      }
      GNND_ASSIGN_OR_RETURN(NpyWriter negatives, NpyWriter::CreateMapped(writer_->Path(absl::StrCat(split, "_neg.npy")),
                                                                         DType::kInt64, {n, h.shape[1]}));
      GNND_RETURN_IF_ERROR(ReadNegatives(reader, num_nodes_, negatives.mutable_as<int64_t>()));
      GNND_RETURN_IF_ERROR(negatives.Finish());
      e.set_num_negatives(h.shape[1]);
    }
  }
  if (edge_splits_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(dir, ": none of train.npy, valid.npy, test.npy (each a (2, E) array of seed edges)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> LargestId(const std::string& path, const std::string& name) {
  GNND_ASSIGN_OR_RETURN(NpyStreamReader reader, OpenNpyStream(path, name));
  int64_t total = 1;
  for (int64_t d : reader.header().shape) total *= d;
  constexpr int64_t kBlock = 1 << 20;
  std::vector<int64_t> values;
  int64_t largest = -1;
  for (int64_t start = 0; start < total; start += kBlock) {
    values.resize(std::min(kBlock, total - start));
    GNND_RETURN_IF_ERROR(reader.ReadInt64(values.data(), values.size()));
    for (int64_t v : values) largest = std::max(largest, v);
  }
  return largest;
}

absl::StatusOr<int64_t> LargestEdgeSplitId(const std::string& dir) {
  int64_t largest = -1;
  for (absl::string_view split : kSplitNames) {
    for (absl::string_view suffix : {"", "_neg"}) {
      const std::string file = SplitFile(split, suffix), path = absl::StrCat(dir, "/", file);
      if (!Exists(path)) continue;
      GNND_ASSIGN_OR_RETURN(const int64_t in_file, LargestId(path, file));
      largest = std::max(largest, in_file);
    }
  }
  return largest;
}

}  // namespace gnnd::dataset
