#include "tools/dataset/typed_import.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/dataset/schema.h"
#include "tools/dataset/input.h"

namespace gnnd::dataset {

absl::StatusOr<TypedImportBuilder> TypedImportBuilder::Create(const std::string& out_dir, const TypedSource& source,
                                                              const ImportOptions& options) {
  auto check = [](const std::string& name, const std::string& what, const std::string& from) -> absl::Status {
    if (IsSchemaName(name)) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(from, ": ", what, " ", Quoted(name),
                                                   " is not a name (letters, digits and _, ", kMaxSchemaNameBytes,
                                                   " bytes at most, no ___): it would become a file name"));
  };
  for (const auto& [name, count] : source.node_types) {
    GNND_RETURN_IF_ERROR(check(name, "node type", source.node_types_from));
  }
  for (const auto& [src, name, dst] : source.relations) {
    for (const std::string* part : {&src, &name, &dst}) {
      GNND_RETURN_IF_ERROR(check(*part, part == &name ? "relation" : "node type", source.relations_from));
    }
  }
  TypedImportBuilder b;
  b.options_ = options;
  b.source_ = source;
  GNND_ASSIGN_OR_RETURN(DatasetWriter writer, DatasetWriter::Create(out_dir));
  b.writer_.emplace(std::move(writer));
  for (const auto& [name, count] : source.node_types) {
    if (count <= 0) return absl::InvalidArgumentError(absl::StrCat("node type '", name, "': ", count, " nodes"));
    Type& type = b.types_.emplace_back();
    type.name = name;
    type.num_nodes = count;
  }
  auto add = [&b](const std::string& src, const std::string& name, const std::string& dst) -> absl::Status {
    const int src_type = b.NodeTypeNamed(src), dst_type = b.NodeTypeNamed(dst);
    if (src_type < 0 || dst_type < 0) {
      return absl::InvalidArgumentError(absl::StrCat("relation (", src, ", ", name, ", ", dst, "): node type '",
                                                     src_type < 0 ? src : dst, "' has no count"));
    }
    Relation& r = b.relations_.emplace_back();
    r.src = src, r.name = name, r.dst = dst, r.src_type = src_type, r.dst_type = dst_type;
    const std::string spool = b.writer_->Path(absl::StrCat("edges.", b.relations_.size() - 1, ".spool"));
    GNND_ASSIGN_OR_RETURN(EdgeSpool edges, EdgeSpool::CreateTyped(spool, b.types_[src_type].num_nodes,
                                                                  b.types_[dst_type].num_nodes, src_type == dst_type));
    r.edges.emplace(std::move(edges));
    return absl::OkStatus();
  };
  for (const auto& [src, name, dst] : source.relations) GNND_RETURN_IF_ERROR(add(src, name, dst));
  if (options.add_reverse) {
    const size_t given = b.relations_.size();
    for (size_t i = 0; i < given; ++i) {
      const Relation& r = b.relations_[i];
      const std::string src = r.dst, name = "rev_" + r.name, dst = r.src;
      GNND_RETURN_IF_ERROR(add(src, name, dst));
      b.relations_[i].reverse = static_cast<int>(b.relations_.size() - 1);
    }
  }
  return b;
}

int TypedImportBuilder::NodeTypeNamed(const std::string& name) const {
  for (size_t t = 0; t < types_.size(); ++t) {
    if (types_[t].name == name) return static_cast<int>(t);
  }
  return -1;
}

int64_t TypedImportBuilder::num_edges(int relation) const { return relations_[relation].edges->count(); }

absl::Status TypedImportBuilder::AddEdge(int relation, int64_t src, int64_t dst, absl::string_view where) {
  Relation& r = relations_[relation];
  GNND_RETURN_IF_ERROR(r.edges->Add(src, dst, where));
  types_[r.src_type].max_id = std::max(types_[r.src_type].max_id, src);
  types_[r.dst_type].max_id = std::max(types_[r.dst_type].max_id, dst);
  if (r.reverse >= 0) GNND_RETURN_IF_ERROR(relations_[r.reverse].edges->Add(dst, src, where));
  return absl::OkStatus();
}

void TypedImportBuilder::AddEdgeAttribute(int relation, EdgeAttributeInput input) {
  Relation& r = relations_[relation];
  if (r.reverse >= 0) relations_[r.reverse].attrs.push_back(input);
  r.attrs.push_back(std::move(input));
}

absl::Status TypedImportBuilder::AddSeedEdge(int relation, int split, int64_t src, int64_t dst, absl::string_view where,
                                             std::optional<int64_t> time) {
  Relation& r = relations_[relation];
  GNND_RETURN_IF_ERROR(CheckNodeId(src, types_[r.src_type].num_nodes, where));
  GNND_RETURN_IF_ERROR(CheckNodeId(dst, types_[r.dst_type].num_nodes, where));
  if (!r.seed_src[split].empty() && time.has_value() == r.seed_time[split].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": an edge split's pairs have times all or none"));
  }
  r.seed_src[split].push_back(src);
  r.seed_dst[split].push_back(dst);
  if (time.has_value()) r.seed_time[split].push_back(*time);
  return absl::OkStatus();
}

absl::Status TypedImportBuilder::AppendFeatureRow(int type, const std::vector<double>& row, absl::string_view where,
                                                  int64_t row_index) {
  return AppendFeatureRows(type, row, 1, where, row_index, 1);
}

absl::Status TypedImportBuilder::AppendFeatureRows(int type, std::span<const double> values, int64_t rows,
                                                   absl::string_view where, int64_t first_row, int threads) {
  Type& t = types_[type];
  if (t.feature_dtype == v1::FEATURE_DTYPE_UNSPECIFIED) {
    t.feature_dtype =
        options_.feature_dtype == v1::FEATURE_DTYPE_UNSPECIFIED ? v1::FEATURE_DTYPE_FLOAT32 : options_.feature_dtype;
  }
  const DType element = FeatureElementDType(t.feature_dtype).value();
  const int64_t dim = rows > 0 ? static_cast<int64_t>(values.size()) / rows : 0;
  if (!t.features.has_value()) {
    if (dim == 0) return absl::InvalidArgumentError(absl::StrCat(where, ": a feature row with no values"));
    t.feature_dim = dim;
    t.features_from = std::string(where.substr(0, where.rfind(" line ")));
    GNND_ASSIGN_OR_RETURN(
        NpyWriter writer,
        NpyWriter::CreateAppendable(writer_->Path(absl::StrCat(t.name, ".features.npy")), element, {t.feature_dim}));
    t.features.emplace(std::move(writer));
  }
  if (dim * rows != static_cast<int64_t>(values.size()) || dim != t.feature_dim) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", values.size() / std::max<int64_t>(rows, 1),
                                                   " feature values, expected ", t.feature_dim));
  }
  if (t.features->rows() + rows > t.num_nodes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": more feature rows than '", t.name, "' has nodes (", t.num_nodes, ")"));
  }
  const size_t element_bytes = DTypeSize(element);
  row_scratch_.resize(values.size() * element_bytes);
  // Encoded a chunk of rows per thread (the conversion is most of a large row's cost), written at once.
  absl::Status status;
  std::mutex failed;
  ParallelFor(rows, 256, threads, [&](int64_t begin, int64_t end) {
    const FeatureBlock block{.where = where, .first = first_row < 0 ? -1 : (first_row + begin) * dim, .dim = dim};
    const absl::Status encoded =
        EncodeFeaturesAs(element, values.data() + begin * dim, static_cast<size_t>((end - begin) * dim),
                         row_scratch_.data() + begin * dim * element_bytes, block, options_.clamp);
    if (encoded.ok()) return;
    std::lock_guard<std::mutex> lock(failed);
    if (status.ok()) status = encoded;
  });
  GNND_RETURN_IF_ERROR(status);
  return t.features->Append(row_scratch_.data(), rows);
}

absl::Status TypedImportBuilder::ReadFeatures(int type, NpyStreamReader& reader) {
  const NpyHeader& h = reader.header();
  const int64_t n = types_[type].num_nodes;
  if (h.shape.empty() || h.shape.size() > 2 || h.shape[0] != n || (h.fortran_order && h.shape.size() == 2) ||
      (h.shape.size() == 2 && h.shape[1] < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(reader.what(), ": not a C-order array of ", n, " rows of at least one value"));
  }
  // Unless a dtype was asked for, float16 features stay float16 (as MAG240M's), anything else becomes float32.
  if (options_.feature_dtype == v1::FEATURE_DTYPE_UNSPECIFIED && h.dtype == DType::kFloat16) {
    types_[type].feature_dtype = v1::FEATURE_DTYPE_FLOAT16;
  }
  std::vector<double> row(h.shape.size() == 2 ? static_cast<size_t>(h.shape[1]) : 1);
  for (int64_t v = 0; v < n; ++v) {
    GNND_RETURN_IF_ERROR(reader.ReadDouble(row.data(), row.size()));
    GNND_RETURN_IF_ERROR(AppendFeatureRow(type, row, reader.what(), v));
  }
  return absl::OkStatus();
}

absl::Status TypedImportBuilder::ReadLabels(int type, NpyStreamReader& reader) {
  return ForEachLabel(
      reader, types_[type].num_nodes,
      [this, type](int64_t node, double label, absl::string_view where) { return SetLabel(type, node, label, where); });
}

absl::Status TypedImportBuilder::SetLabel(int type, int64_t node, double label, absl::string_view where) {
  Type& t = types_[type];
  GNND_RETURN_IF_ERROR(CheckNodeId(node, t.num_nodes, where));
  GNND_ASSIGN_OR_RETURN(const int64_t value, ParseLabel(label, where));
  if (node >= static_cast<int64_t>(t.labels.size())) t.labels.resize(node + 1, -1);  // as far as the input goes
  t.labels[node] = value;
  t.max_id = std::max(t.max_id, node);
  return absl::OkStatus();
}

absl::Status TypedImportBuilder::AddSplitId(int type, int split, int64_t node, absl::string_view where) {
  GNND_RETURN_IF_ERROR(CheckNodeId(node, types_[type].num_nodes, where));
  types_[type].splits[split].push_back(node);
  types_[type].max_id = std::max(types_[type].max_id, node);
  return absl::OkStatus();
}

absl::Status TypedImportBuilder::CheckCountsAgainstInput() const {
  constexpr int64_t kSmall = int64_t{1} << 20, kFactor = 16;
  for (const Type& t : types_) {
    const int64_t rows = t.features.has_value() ? t.features->rows() : 0;
    const int64_t backed = std::max(t.max_id + 1, rows);
    if (t.num_nodes <= kSmall || t.num_nodes <= kFactor * backed) continue;
    return absl::InvalidArgumentError(
        absl::StrCat(source_.node_types_from, ": node type '", t.name, "' has ", t.num_nodes,
                     " nodes, but the input names ids only below ", backed, " and holds ", rows,
                     " feature rows for it: the count looks wrong (its CSC alone would take ", 8 * (t.num_nodes + 1),
                     " bytes); correct it"));
  }
  return absl::OkStatus();
}

absl::Status TypedImportBuilder::Finish(const std::string& source) {
  GNND_RETURN_IF_ERROR(CheckCountsAgainstInput());
  v1::DatasetManifest m;
  m.set_format_version(2);
  m.set_source(source);
  m.set_deduplicated(options_.dedup);
  for (const NodeTimeInput& times : options_.node_times) {
    if (times.type.empty() || NodeTypeNamed(times.type) < 0) {
      std::vector<std::string> names;
      for (const Type& t : types_) names.push_back(t.name);
      return absl::InvalidArgumentError(absl::StrCat("--node-time ", times.type.empty() ? "" : times.type + "=",
                                                     times.path, ": name one of the node types (",
                                                     absl::StrJoin(names, ", "), ") as TYPE=FILE.npy"));
    }
  }
  for (const NodeAttributeInput& input : options_.node_attrs) {
    if (input.type.empty() || NodeTypeNamed(input.type) < 0) {
      std::vector<std::string> names;
      for (const Type& t : types_) names.push_back(t.name);
      return absl::InvalidArgumentError(absl::StrCat("--node-attr ", input.type.empty() ? "" : input.type + ".",
                                                     input.attr.name, ": name one of the node types (",
                                                     absl::StrJoin(names, ", "), ") as TYPE.NAME=FILE.npy"));
    }
  }
  if (!options_.node_times.empty()) m.set_node_time_name(options_.node_time_name);
  int timed_types = 0;  // node types whose splits --split-time times
  for (Type& t : types_) {
    v1::NodeType& out = *m.add_node_types();
    out.set_name(t.name);
    out.set_num_nodes(t.num_nodes);
    for (const NodeAttributeInput& input : options_.node_attrs) {
      if (input.type != t.name) continue;
      GNND_ASSIGN_OR_RETURN(*out.add_node_attrs(),
                            WriteNodeAttribute(writer_->work_dir(), t.name + ".", input.attr, t.num_nodes));
    }
    for (const NodeTimeInput& times : options_.node_times) {
      if (times.type != t.name) continue;
      GNND_RETURN_IF_ERROR(
          WriteTimes(writer_->Path(absl::StrCat(t.name, ".node_time.npy")), times.path, t.num_nodes, "num_nodes"));
      out.set_node_time(true);
    }
    if (t.features.has_value()) {
      if (t.features->rows() != t.num_nodes) {
        return absl::InvalidArgumentError(absl::StrCat(t.features_from, ": node type '", t.name,
                                                       "': ", t.features->rows(), " feature rows but ", t.num_nodes,
                                                       " nodes"));
      }
      GNND_RETURN_IF_ERROR(t.features->Finish());
      out.set_feature_dim(t.feature_dim);
      out.set_feature_dtype(t.feature_dtype);
    }
    const bool any_split = !t.splits[0].empty() || !t.splits[1].empty() || !t.splits[2].empty();
    if (any_split && t.labels.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("node type '", t.name, "' has splits but no labels"));
    }
    const std::string times_dir = absl::StrCat(options_.split_times_dir, "/", t.name);
    const bool timed = !options_.split_times_dir.empty() && Exists(times_dir);
    if (timed && t.labels.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--split-time: ", times_dir, " times the splits of node type '", t.name, "', which has none"));
    }
    timed_types += timed;
    if (t.labels.empty()) continue;
    t.labels.resize(t.num_nodes, -1);  // the nodes past the last labeled one: none
    const int64_t max_label = *std::max_element(t.labels.begin(), t.labels.end());
    out.set_num_classes(static_cast<int32_t>(std::max<int64_t>(max_label + 1, 1)));
    GNND_ASSIGN_OR_RETURN(NpyWriter labels, NpyWriter::CreateAppendable(
                                                writer_->Path(absl::StrCat(t.name, ".labels.npy")), DType::kInt64, {}));
    GNND_RETURN_IF_ERROR(labels.Append(t.labels.data(), t.num_nodes));
    GNND_RETURN_IF_ERROR(labels.Finish());
    for (int split = 0; split < 3; ++split) {
      GNND_ASSIGN_OR_RETURN(
          NpyWriter ids, NpyWriter::CreateAppendable(
                             writer_->Path(absl::StrCat(t.name, ".", kSplitNames[split], ".npy")), DType::kInt64, {}));
      GNND_RETURN_IF_ERROR(ids.Append(t.splits[split].data(), static_cast<int64_t>(t.splits[split].size())));
      GNND_RETURN_IF_ERROR(ids.Finish());
      if (timed) {
        GNND_RETURN_IF_ERROR(WriteSplitTimes(writer_->Path(absl::StrCat(t.name, ".", kSplitNames[split], "_time.npy")),
                                             times_dir, kSplitNames[split],
                                             static_cast<int64_t>(t.splits[split].size())));
      }
    }
    out.set_split_times(timed);
    out.set_num_train(static_cast<int64_t>(t.splits[0].size()));
    out.set_num_valid(static_cast<int64_t>(t.splits[1].size()));
    out.set_num_test(static_cast<int64_t>(t.splits[2].size()));
  }
  if (!options_.split_times_dir.empty() && timed_types == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--split-time: ", options_.split_times_dir,
                                                   " has no folder T/ (T a node type with splits) of times"));
  }
  for (Relation& r : relations_) {
    const std::string key = absl::StrCat(r.src, "___", r.name, "___", r.dst);
    const bool edge_ids = options_.edge_ids || !r.attrs.empty();
    const CscOptions csc{/*undirected=*/false, options_.dedup, options_.threads, edge_ids};
    const int64_t input_edges = r.edges->count();
    GNND_ASSIGN_OR_RETURN(const int64_t edges, r.edges->BuildCsc(writer_->work_dir(), csc, key + "."));
    r.edges.reset();  // closes and deletes the spool
    v1::Relation& out = *m.add_relations();
    if (edge_ids) {
      out.set_edge_ids(true);
      GNND_ASSIGN_OR_RETURN(const NpyFile ids, NpyFile::Open(writer_->Path(key + ".e_id.npy")));
      const std::span<const int64_t> order(ids.as<int64_t>(), static_cast<size_t>(edges));
      for (const EdgeAttributeInput& input : r.attrs) {
        GNND_ASSIGN_OR_RETURN(*out.add_edge_attrs(),
                              WriteEdgeAttribute(writer_->work_dir(), key + ".", input, input_edges, order));
      }
    }
    out.set_src_type(r.src);
    out.set_name(r.name);
    out.set_dst_type(r.dst);
    out.set_num_edges(edges);
    out.set_index_dtype(types_[r.src_type].num_nodes < (int64_t{1} << 31) ? v1::INDEX_DTYPE_INT32
                                                                          : v1::INDEX_DTYPE_INT64);
    for (int split = 0; split < 3; ++split) {
      const std::vector<int64_t>&src = r.seed_src[split], &dst = r.seed_dst[split];
      if (src.empty()) continue;
      const auto n = static_cast<int64_t>(src.size());
      GNND_ASSIGN_OR_RETURN(
          NpyWriter pairs,
          NpyWriter::CreateMapped(writer_->Path(absl::StrCat(key, ".", kSplitNames[split], "_edges.npy")),
                                  DType::kInt64, {2, n}));
      std::copy(src.begin(), src.end(), pairs.mutable_as<int64_t>());
      std::copy(dst.begin(), dst.end(), pairs.mutable_as<int64_t>() + n);
      GNND_RETURN_IF_ERROR(pairs.Finish());
      v1::EdgeSplit& e = *out.add_edge_splits();
      e.set_name(std::string(kSplitNames[split]));
      e.set_num_edges(n);
      if (const std::vector<int64_t>& times = r.seed_time[split]; !times.empty()) {
        GNND_ASSIGN_OR_RETURN(
            NpyWriter written,
            NpyWriter::CreateMapped(writer_->Path(absl::StrCat(key, ".", kSplitNames[split], "_edge_time.npy")),
                                    DType::kInt64, {n}));
        std::copy(times.begin(), times.end(), written.mutable_as<int64_t>());
        GNND_RETURN_IF_ERROR(written.Finish());
        e.set_timed(true);
      }
    }
  }
  return writer_->Commit(m, options_.threads);
}

}  // namespace gnnd::dataset
