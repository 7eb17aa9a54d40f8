#include "tools/dataset/import_builder.h"

#include <cmath>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/dtype.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "tools/dataset/input.h"
#include "tools/dataset/progress.h"

namespace gnnd::dataset {

namespace {

// The largest finite value of a feature dtype.
double LargestOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return 65504.0;
    case DType::kBFloat16:
      return 3.3895313892515355e38;
    case DType::kFloat8E4M3FN:
      return kFloat8E4M3FNMax;
    default:
      return std::numeric_limits<float>::max();
  }
}

absl::Status NotFinite(DType dtype, double value, size_t i, const FeatureBlock& block) {
  const int64_t at = std::max<int64_t>(block.first, 0) + static_cast<int64_t>(i), dim = std::max<int64_t>(block.dim, 1);
  const std::string element =
      block.first < 0 ? absl::StrCat("column ", at) : absl::StrCat("row ", at / dim, ", column ", at % dim);
  const std::string what = std::isnan(value) ? "is NaN"
                           : std::isinf(value)
                               ? "is not finite"
                               : absl::StrCat("is past ", DTypeName(dtype), "'s range (|x| <= ", LargestOf(dtype), ")");
  if (!block.attribute.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(block.where, ": ", block.attribute, " attribute value ", value,
                                                   " at ", element, " ", what, " (", block.attribute,
                                                   " attributes must be finite numbers)"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      block.where, ": feature value ", value, " at ", element, " ", what,
      std::isnan(value) ? " (features must be numbers)" : " (scale the features, or import with --clamp)"));
}

}  // namespace

template <typename In>
absl::Status EncodeFeaturesAs(DType target, const In* in, size_t count, char* out, const FeatureBlock& block,
                              bool clamp) {
  const double largest = LargestOf(target);
  for (size_t i = 0; i < count; ++i) {
    double x = static_cast<double>(in[i]);
    if (!(std::fabs(x) <= largest)) {  // NaN, ±inf, or past the range
      if (std::isnan(x) || !clamp) return NotFinite(target, x, i, block);
      x = std::copysign(largest, x);
    }
    const float f = static_cast<float>(x);
    if (!block.attribute.empty() && x != 0 && f == 0) {  // a weight would silently become "never drawn"
      const int64_t at = std::max<int64_t>(block.first, 0) + static_cast<int64_t>(i);
      return absl::InvalidArgumentError(absl::StrCat(block.where, ": ", block.attribute, " attribute value ", x,
                                                     " at row ", at / std::max<int64_t>(block.dim, 1),
                                                     " is 0 in float32 (", block.attribute,
                                                     " attributes are kept as float32: scale them, "
                                                     "or write 0 where 0 is meant)"));
    }
    switch (target) {
      case DType::kFloat16: {
        const uint16_t h = FloatToHalf(f);
        std::memcpy(out + 2 * i, &h, 2);
        break;
      }
      case DType::kBFloat16: {
        const uint16_t b = FloatToBFloat16(f);
        std::memcpy(out + 2 * i, &b, 2);
        break;
      }
      case DType::kFloat8E4M3FN:
        out[i] = static_cast<char>(FloatToFloat8E4M3FN(f));
        break;
      default:
        std::memcpy(out + 4 * i, &f, 4);
        break;
    }
  }
  return absl::OkStatus();
}

template absl::Status EncodeFeaturesAs<double>(DType, const double*, size_t, char*, const FeatureBlock&, bool);
template absl::Status EncodeFeaturesAs<float>(DType, const float*, size_t, char*, const FeatureBlock&, bool);

absl::Status CheckFeatureBits(DType dtype, const char* bits, size_t count, const FeatureBlock& block) {
  for (size_t i = 0; i < count; ++i) {
    float f;
    if (dtype == DType::kFloat16) {
      uint16_t h;
      std::memcpy(&h, bits + 2 * i, 2);
      f = HalfToFloat(h);
    } else {
      std::memcpy(&f, bits + 4 * i, 4);
    }
    if (!std::isfinite(f)) return NotFinite(dtype, f, i, block);
  }
  return absl::OkStatus();
}

namespace {

constexpr size_t kBlockBytes = 16 << 20;

}  // namespace

std::string ShapeText(const std::vector<int64_t>& shape) { return absl::StrCat("(", absl::StrJoin(shape, ", "), ")"); }

absl::StatusOr<ImportBuilder> ImportBuilder::Create(const std::string& out_dir, int64_t num_nodes,
                                                    const ImportOptions& options) {
  if (num_nodes <= 0) return absl::InvalidArgumentError(absl::StrCat("num_nodes = ", num_nodes, " (must be positive)"));
  ImportBuilder b;
  b.options_ = options;
  b.num_nodes_ = num_nodes;
  GNND_ASSIGN_OR_RETURN(DatasetWriter writer, DatasetWriter::Create(out_dir));
  b.writer_.emplace(std::move(writer));
  GNND_ASSIGN_OR_RETURN(EdgeSpool spool, EdgeSpool::Create(b.writer_->Path("edges.spool"), num_nodes));
  b.edges_.emplace(std::move(spool));
  GNND_ASSIGN_OR_RETURN(NpyWriter labels,
                        NpyWriter::CreateMapped(b.writer_->Path("labels.npy"), DType::kInt64, {num_nodes}));
  b.labels_.emplace(std::move(labels));
  b.label_data_ = b.labels_->mutable_as<int64_t>();
  std::memset(b.label_data_, 0xff, sizeof(int64_t) * num_nodes);  // all -1: unlabeled
  for (ArrayId id : kSplits) {
    GNND_ASSIGN_OR_RETURN(
        NpyWriter split,
        NpyWriter::CreateAppendable(b.writer_->Path(absl::StrCat(ArrayName(id), ".npy")), DType::kInt64, {}));
    b.splits_.emplace_back(std::move(split));
  }
  return b;
}

absl::Status ImportBuilder::StartFeatures(DType source_dtype, int64_t dim, absl::string_view where) {
  if (features_.has_value()) return absl::InternalError(absl::StrCat(where, ": features given twice"));
  if (dim <= 0)
    return absl::InvalidArgumentError(absl::StrCat(where, ": feature dimension ", dim, " (must be positive)"));
  feature_dtype_ = options_.feature_dtype;
  if (feature_dtype_ == v1::FEATURE_DTYPE_UNSPECIFIED) {
    feature_dtype_ = source_dtype == DType::kFloat16 ? v1::FEATURE_DTYPE_FLOAT16 : v1::FEATURE_DTYPE_FLOAT32;
  }
  feature_dim_ = dim;
  GNND_ASSIGN_OR_RETURN(
      NpyWriter writer,
      NpyWriter::CreateAppendable(writer_->Path("features.npy"), FeatureElementDType(feature_dtype_).value(), {dim}));
  features_.emplace(std::move(writer));
  return absl::OkStatus();
}

absl::Status ImportBuilder::AppendFeatureRow(const std::vector<double>& row, absl::string_view where) {
  if (!features_.has_value())
    GNND_RETURN_IF_ERROR(StartFeatures(DType::kFloat64, static_cast<int64_t>(row.size()), where));
  if (static_cast<int64_t>(row.size()) != feature_dim_) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": ", row.size(), " feature values, expected ", feature_dim_));
  }
  if (features_->rows() >= num_nodes_) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": more feature rows than num_nodes = ", num_nodes_));
  }
  const DType element = FeatureElementDType(feature_dtype_).value();
  row_scratch_.resize(row.size() * DTypeSize(element));
  GNND_RETURN_IF_ERROR(EncodeFeaturesAs(element, row.data(), row.size(), row_scratch_.data(),
                                        {.where = where, .dim = feature_dim_}, options_.clamp));
  return features_->Append(row_scratch_.data(), 1);
}

absl::Status ImportBuilder::AppendFeatureRows(const float* data, int64_t rows, int64_t dim) {
  if (!features_.has_value()) GNND_RETURN_IF_ERROR(StartFeatures(DType::kFloat32, dim, "features"));
  if (dim != feature_dim_ || features_->rows() + rows > num_nodes_) {
    return absl::InternalError("feature rows do not match the dataset shape");
  }
  const FeatureBlock block{.where = "features", .first = features_->rows() * dim, .dim = dim};
  const size_t count = static_cast<size_t>(rows * dim);
  if (feature_dtype_ == v1::FEATURE_DTYPE_FLOAT32) {
    GNND_RETURN_IF_ERROR(CheckFeatureBits(DType::kFloat32, reinterpret_cast<const char*>(data), count, block));
    return features_->Append(data, rows);
  }
  const DType element = FeatureElementDType(feature_dtype_).value();
  row_scratch_.resize(count * DTypeSize(element));
  GNND_RETURN_IF_ERROR(EncodeFeaturesAs(element, data, count, row_scratch_.data(), block, options_.clamp));
  return features_->Append(row_scratch_.data(), rows);
}

absl::Status ImportBuilder::ReadFeatures(NpyStreamReader& reader) {
  const NpyHeader& h = reader.header();
  if (h.shape.empty() || h.shape.size() > 2 || h.shape[0] != num_nodes_ || (h.fortran_order && h.shape.size() == 2)) {
    return absl::InvalidArgumentError(absl::StrCat(reader.what(), ": shape ", ShapeText(h.shape),
                                                   h.fortran_order ? " (Fortran order)" : "",
                                                   ", expected C-order (num_nodes = ", num_nodes_, ", dim)"));
  }
  const int64_t dim = h.shape.size() == 2 ? h.shape[1] : 1;
  GNND_RETURN_IF_ERROR(StartFeatures(h.dtype, dim, reader.what()));
  const DType element = FeatureElementDType(feature_dtype_).value();
  // numpy has no bfloat16 or float8: those are always converted; values clamped are re-encoded
  const bool same = h.dtype == element && !options_.clamp;
  const int64_t rows_per_block = std::max<int64_t>(1, kBlockBytes / (dim * 8));
  std::vector<double> values;
  std::vector<char> encoded;
  for (int64_t row = 0; row < num_nodes_; row += rows_per_block) {
    const int64_t rows = std::min(rows_per_block, num_nodes_ - row);
    const size_t count = static_cast<size_t>(rows * dim);
    encoded.resize(count * DTypeSize(element));
    const FeatureBlock block{.where = reader.what(), .first = row * dim, .dim = dim};
    if (same) {
      GNND_RETURN_IF_ERROR(reader.ReadRaw(encoded.data(), count));
      GNND_RETURN_IF_ERROR(CheckFeatureBits(element, encoded.data(), count, block));
    } else {
      values.resize(count);
      GNND_RETURN_IF_ERROR(reader.ReadDouble(values.data(), count));
      GNND_RETURN_IF_ERROR(EncodeFeaturesAs(element, values.data(), count, encoded.data(), block, options_.clamp));
    }
    GNND_RETURN_IF_ERROR(features_->Append(encoded.data(), rows));
  }
  return absl::OkStatus();
}

absl::Status CheckNodeId(int64_t node, int64_t num_nodes, absl::string_view where) {
  if (node >= 0 && node < num_nodes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(where, ": node id ", node, " is out of range [0, ", num_nodes, ")"));
}

absl::StatusOr<int64_t> ParseLabel(double label, absl::string_view where) {
  if (std::isnan(label) || label == -1) return -1;
  if (label < 0 || label != std::floor(label) || label > 2147483647.0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": label ", label, " is not a class id (a non-negative integer, or NaN/-1 for none)"));
  }
  return static_cast<int64_t>(label);
}

absl::Status ForEachLabel(NpyStreamReader& reader, int64_t num_nodes,
                          const std::function<absl::Status(int64_t, double, absl::string_view)>& set) {
  const NpyHeader& h = reader.header();
  const bool column = h.shape.size() == 2 && h.shape[1] == 1;
  if (!(h.shape.size() == 1 || column) || h.shape[0] != num_nodes) {
    return absl::InvalidArgumentError(absl::StrCat(reader.what(), ": shape ", ShapeText(h.shape),
                                                   ", expected (num_nodes = ", num_nodes, ") or (", num_nodes, ", 1)"));
  }
  constexpr int64_t kBlock = 1 << 20;
  std::vector<double> values(kBlock);
  std::vector<int64_t> ints(kBlock);
  for (int64_t start = 0; start < num_nodes; start += kBlock) {
    const int64_t count = std::min(kBlock, num_nodes - start);
    if (IsFloat(h.dtype)) {
      GNND_RETURN_IF_ERROR(reader.ReadDouble(values.data(), count));
    } else {
      GNND_RETURN_IF_ERROR(reader.ReadInt64(ints.data(), count));
      for (int64_t i = 0; i < count; ++i) values[i] = static_cast<double>(ints[i]);
    }
    for (int64_t i = 0; i < count; ++i) {
      // `set` has no effect when it fails: then it runs again for the error, naming the element.
      if (!set(start + i, values[i], "").ok()) {
        return set(start + i, values[i], absl::StrCat(reader.what(), "[", start + i, "]"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ImportBuilder::SetLabel(int64_t node, double label, absl::string_view where) {
  GNND_RETURN_IF_ERROR(CheckNodeId(node, num_nodes_, where));
  GNND_ASSIGN_OR_RETURN(label_data_[node], ParseLabel(label, where));
  labeled_ = true;
  return absl::OkStatus();
}

absl::Status ImportBuilder::ReadLabels(NpyStreamReader& reader) {
  labeled_ = true;  // even if every label is -1: the dataset has labels.npy
  return ForEachLabel(reader, num_nodes_, [this](int64_t node, double label, absl::string_view where) {
    return SetLabel(node, label, where);
  });
}

absl::Status ImportBuilder::AddSplitId(ArrayId split, int64_t node, absl::string_view where) {
  GNND_RETURN_IF_ERROR(CheckNodeId(node, num_nodes_, where));
  labeled_ = true;
  return splits_[static_cast<int>(split) - static_cast<int>(kSplits[0])]->Append(&node, 1);
}

absl::Status ImportBuilder::ReadSplit(ArrayId split, NpyStreamReader& reader) {
  const NpyHeader& h = reader.header();
  if (h.shape.size() != 1 && !(h.shape.size() == 2 && h.shape[1] == 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader.what(), ": shape ", ShapeText(h.shape), ", expected a vector of node ids"));
  }
  std::vector<int64_t> ids(static_cast<size_t>(h.shape[0]));
  GNND_RETURN_IF_ERROR(reader.ReadInt64(ids.data(), ids.size()));
  for (size_t i = 0; i < ids.size(); ++i) {
    GNND_RETURN_IF_ERROR(AddSplitId(split, ids[i], absl::StrCat(reader.what(), "[", i, "]")));
  }
  return absl::OkStatus();
}

absl::Status ForEachEdgeLine(const std::string& path, const std::string& name, char separator,
                             const std::function<absl::Status(int64_t, int64_t, absl::string_view)>& edge,
                             const std::function<absl::Status(double, absl::string_view)>& weight) {
  GNND_ASSIGN_OR_RETURN(auto reader, LineReader::Open(path, name));
  size_t fields_per_line = 0;  // 2, or with `weight` 3, as the first edge line has
  std::string expected = separator == ' ' ? "'src dst'" : "'src,dst'";
  Progress progress("edges", 0, "edges");
  int64_t count = 0;
  absl::string_view line;
  for (;;) {
    GNND_ASSIGN_OR_RETURN(bool more, reader->Next(&line));
    if (!more) break;
    if (const size_t hash = line.find('#'); separator == ' ' && hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    const std::vector<absl::string_view> fields = SplitFields(line, separator);
    if (fields.empty() || (fields.size() == 1 && fields[0].empty())) continue;
    if (fields_per_line == 0) {
      fields_per_line = weight != nullptr && fields.size() == 3 ? 3 : 2;
      if (fields_per_line == 3) expected = separator == ' ' ? "'src dst weight'" : "'src,dst,weight'";
    }
    if (fields.size() != fields_per_line) {
      return absl::InvalidArgumentError(absl::StrCat(reader->Where(), ": ", fields.size(), " fields, expected ",
                                                     expected, fields_per_line == 3 ? " as the first line" : ""));
    }
    GNND_ASSIGN_OR_RETURN(int64_t src, ParseInt(fields[0], reader->Where()));
    GNND_ASSIGN_OR_RETURN(int64_t dst, ParseInt(fields[1], reader->Where()));
    GNND_RETURN_IF_ERROR(edge(src, dst, reader->Where()));
    if (fields_per_line == 3) {
      double value = 0;
      if (!absl::SimpleAtod(fields[2], &value)) {
        return absl::InvalidArgumentError(
            absl::StrCat(reader->Where(), ": weight ", Quoted(fields[2], 40), " is not a number"));
      }
      GNND_RETURN_IF_ERROR(weight(value, reader->Where()));
    }
    if ((++count & 0xffff) == 0) progress.Set(count);
  }
  progress.Set(count);
  return absl::OkStatus();
}

absl::Status ImportBuilder::ReadEdgeLines(const std::string& path, const std::string& name, char separator,
                                          bool weight_column) {
  std::optional<NpyWriter> weights;  // a third column: the edges' edge_weight, in their order
  const std::string weights_path = writer_->Path("edge_weight.input.npy");  // scratch: not in the manifest
  auto weight = [&](double value, absl::string_view where) -> absl::Status {
    if (!weights) {
      GNND_ASSIGN_OR_RETURN(weights, NpyWriter::CreateAppendable(weights_path, DType::kFloat32, {}));
    }
    const float stored = static_cast<float>(value);
    if (!std::isfinite(stored) || (value != 0 && stored == 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": weight ", value, " (must be finite, within float32, and not 0 there unless 0)"));
    }
    return weights->Append(&stored, 1);
  };
  GNND_RETURN_IF_ERROR(ForEachEdgeLine(
      path, name, separator,
      [this](int64_t src, int64_t dst, absl::string_view where) { return edges_->Add(src, dst, where); },
      weight_column ? std::function<absl::Status(double, absl::string_view)>(weight) : nullptr));
  if (weights) {
    GNND_RETURN_IF_ERROR(weights->Finish());
    for (const EdgeAttributeInput& given : options_.edge_attrs) {
      if (given.name == "edge_weight") {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": a third column (edge_weight) and --edge-attr edge_weight=", given.path));
      }
    }
    options_.edge_attrs.push_back({"edge_weight", weights_path});
  }
  return absl::OkStatus();
}

absl::Status ReadEdgeIndexPairs(const std::function<absl::StatusOr<NpyStreamReader>()>& open,
                                const std::function<absl::Status(int64_t, int64_t, absl::string_view)>& add) {
  GNND_ASSIGN_OR_RETURN(NpyStreamReader sources, open());
  const NpyHeader& h = sources.header();
  if (h.shape.size() != 2 || h.shape[0] != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(sources.what(), ": shape ", ShapeText(h.shape), ", expected (2, num_edges)"));
  }
  const int64_t num_edges = h.shape[1];
  // C order: all sources, then all destinations; Fortran order: (src, dst) pairs.
  std::optional<NpyStreamReader> targets;
  if (!h.fortran_order) {
    GNND_ASSIGN_OR_RETURN(targets, open());
    GNND_RETURN_IF_ERROR(targets->Skip(num_edges));
  }
  Progress progress("edges", num_edges, "edges");
  constexpr int64_t kBlock = 1 << 20;
  std::vector<int64_t> src(kBlock), dst(kBlock), pairs(h.fortran_order ? 2 * kBlock : 0);
  for (int64_t start = 0; start < num_edges; start += kBlock) {
    const int64_t count = std::min(kBlock, num_edges - start);
    if (h.fortran_order) {
      GNND_RETURN_IF_ERROR(sources.ReadInt64(pairs.data(), 2 * count));
      for (int64_t i = 0; i < count; ++i) src[i] = pairs[2 * i], dst[i] = pairs[2 * i + 1];
    } else {
      GNND_RETURN_IF_ERROR(sources.ReadInt64(src.data(), count));
      GNND_RETURN_IF_ERROR(targets->ReadInt64(dst.data(), count));
    }
    for (int64_t i = 0; i < count; ++i) {
      // `add` has no effect when it fails: then call it again for the error, naming the position.
      if (!add(src[i], dst[i], "").ok())
        return add(src[i], dst[i], absl::StrCat(sources.what(), "[:, ", start + i, "]"));
    }
    progress.Set(start + count);
  }
  return absl::OkStatus();
}

absl::Status ImportBuilder::ReadEdgeIndex(const std::function<absl::StatusOr<NpyStreamReader>()>& open) {
  return ReadEdgeIndexPairs(
      open, [this](int64_t src, int64_t dst, absl::string_view where) { return edges_->Add(src, dst, where); });
}

absl::Status ImportBuilder::Finish(const std::string& source, int32_t num_classes) {
  if (!features_.has_value() && !features_optional_) {
    return absl::InvalidArgumentError("the source has no node features");
  }
  if (features_.has_value() && features_->rows() != num_nodes_) {
    return absl::InvalidArgumentError(
        absl::StrCat("features: ", features_->rows(), " rows but num_nodes = ", num_nodes_));
  }
  v1::DatasetManifest m;
  m.set_num_nodes(num_nodes_);
  m.set_index_dtype(num_nodes_ < (int64_t{1} << 31) ? v1::INDEX_DTYPE_INT32 : v1::INDEX_DTYPE_INT64);
  m.set_feature_dim(feature_dim_);
  if (features_.has_value()) m.set_feature_dtype(feature_dtype_);
  if (labeled_) {  // else labels.npy and the split files are scratch, removed at commit
    int64_t max_label = -1;
    for (int64_t v = 0; v < num_nodes_; ++v) max_label = std::max(max_label, label_data_[v]);
    m.set_num_classes(num_classes > 0 ? num_classes : static_cast<int32_t>(std::max<int64_t>(max_label + 1, 1)));
    m.set_num_train(splits_[0]->rows());
    m.set_num_valid(splits_[1]->rows());
    m.set_num_test(splits_[2]->rows());
  }
  for (const v1::EdgeSplit& split : edge_splits_) *m.add_edge_splits() = split;
  m.set_source(source);
  m.set_undirected(options_.undirected);
  m.set_deduplicated(options_.dedup);
  for (const NodeTimeInput& times : options_.node_times) {
    if (!times.type.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--node-time ", times.type, "=", times.path,
                                                     ": this dataset has one node type; give FILE.npy alone"));
    }
    GNND_RETURN_IF_ERROR(WriteTimes(writer_->Path("node_time.npy"), times.path, num_nodes_, "num_nodes"));
    m.set_node_time(true);
    m.set_node_time_name(options_.node_time_name);
  }
  for (const NodeAttributeInput& input : options_.node_attrs) {
    if (!input.type.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--node-attr ", input.type, ".", input.attr.name,
                                                     ": this dataset has one node type; give NAME=FILE.npy"));
    }
    for (const EdgeAttributeInput& edge : options_.edge_attrs) {  // one namespace in a homogeneous batch
      if (edge.name == input.attr.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("--node-attr ", input.attr.name, ": also an edge attribute's name (batches carry both)"));
      }
    }
    GNND_ASSIGN_OR_RETURN(*m.add_node_attrs(), WriteNodeAttribute(writer_->work_dir(), "", input.attr, num_nodes_));
  }
  if (features_.has_value()) GNND_RETURN_IF_ERROR(features_->Finish());
  GNND_RETURN_IF_ERROR(labels_->Finish());
  for (auto& split : splits_) GNND_RETURN_IF_ERROR(split->Finish());
  if (!options_.split_times_dir.empty()) {
    if (!labeled_) return absl::InvalidArgumentError("--split-time: the dataset has no node splits to time");
    for (int split = 0; split < 3; ++split) {
      GNND_RETURN_IF_ERROR(WriteSplitTimes(writer_->Path(absl::StrCat(kSplitNames[split], "_time.npy")),
                                           options_.split_times_dir, kSplitNames[split], splits_[split]->rows()));
    }
    m.set_split_times(true);
  }
  const bool edge_ids = options_.edge_ids || !options_.edge_attrs.empty();
  const CscOptions csc{options_.undirected, options_.dedup, options_.threads, edge_ids};
  const int64_t input_edges = edges_->count();
  GNND_ASSIGN_OR_RETURN(int64_t edges, edges_->BuildCsc(writer_->work_dir(), csc));
  edges_.reset();  // closes and deletes the spool
  m.set_num_edges(edges);
  if (edge_ids) {
    m.set_edge_ids(true);
    GNND_ASSIGN_OR_RETURN(const NpyFile ids, NpyFile::Open(writer_->Path("e_id.npy")));
    const std::span<const int64_t> order(ids.as<int64_t>(), static_cast<size_t>(edges));
    for (const EdgeAttributeInput& input : options_.edge_attrs) {
      GNND_ASSIGN_OR_RETURN(*m.add_edge_attrs(),
                            WriteEdgeAttribute(writer_->work_dir(), "", input, input_edges, order));
    }
  }
  return writer_->Commit(m, options_.threads);
}

}  // namespace gnnd::dataset
