#include "common/dataset/schema.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/base/limits.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/dataset/manifest.h"
#include "common/dataset/npy.h"

namespace gnnd {
namespace {

// Every size computed from the counts must fit in 64 bits: one that wrapped could pass for a tiny file.
constexpr int64_t kMaxCount = int64_t{1} << 48;
// The sampling rule keys a relation's draws with 8 bits of the Philox counter.
constexpr size_t kMaxRelations = 256;
constexpr size_t kMaxNodeTypes = 256;
// The names a format_version 1 dataset's one type and relation get (DGL's for a homogeneous graph).
constexpr char kHomogeneousType[] = "_N";
constexpr char kHomogeneousRelation[] = "_E";

absl::Status Bad(absl::string_view field, const auto& value, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(kManifestFile, ": ", field, " = ", value, " ", why));
}

absl::Status CheckName(absl::string_view field, const std::string& name) {
  if (IsSchemaName(name)) return absl::OkStatus();
  return Bad(field,
             absl::StrCat("'", name.substr(0, kMaxSchemaNameBytes), name.size() > kMaxSchemaNameBytes ? "...'" : "'"),
             absl::StrCat("is not a name (letters, digits and _, at most ", kMaxSchemaNameBytes, " bytes, no ___)"));
}

// A relation's edge attributes or a type's node attributes (`field_prefix`: their list's field path, `rows`:
// the edges or nodes, `row`: "edge" or "node"): names, dims, dtypes and sizes.
absl::Status CheckAttributes(const std::string& field_prefix,
                             const google::protobuf::RepeatedPtrField<v1::EdgeAttribute>& attrs, int64_t rows,
                             absl::string_view row) {
  const std::string one = row == "edge" ? "an edge" : "a node";
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < attrs.size(); ++i) {
    const v1::EdgeAttribute& a = attrs.Get(i);
    auto field = [&](absl::string_view name) { return absl::StrCat(field_prefix, "[", i, "].", name); };
    GNND_RETURN_IF_ERROR(CheckName(field("name"), a.name()));
    if (!names.insert(a.name()).second) return Bad(field("name"), Quoted(a.name()), "is given twice");
    if (IsBatchArrayName(a.name())) {
      return Bad(field("name"), Quoted(a.name()), "is the name of a batch's array (batches carry attributes by name)");
    }
    if (a.dim() < 0 || a.dim() > kMaxCount) {
      return Bad(field("dim"), a.dim(), absl::StrCat("must be 0 (one value ", one, ") to ", kMaxCount));
    }
    const std::optional<DType> dtype = EdgeAttributeDType(a.dtype());
    if (!dtype) return Bad(field("dtype"), FeatureDTypeName(a.dtype()), "must be set to a known attribute dtype");
    int64_t bytes = 0;
    if (__builtin_mul_overflow(rows, std::max<int64_t>(a.dim(), 1), &bytes) ||
        __builtin_mul_overflow(bytes, static_cast<int64_t>(DTypeSize(*dtype)), &bytes) || bytes > kMaxNpyDataBytes) {
      return Bad(field("dim"), a.dim(),
                 absl::StrCat("makes the attribute (", rows, " rows, one ", one, ") larger than ", kMaxNpyDataBytes,
                              " bytes"));
    }
  }
  return absl::OkStatus();
}

// One node type's counts; `prefix` is its field path ("" for a format_version 1 manifest).
absl::Status CheckNodeType(const std::string& prefix, const v1::NodeType& t, bool features_required) {
  auto field = [&](absl::string_view name) { return absl::StrCat(prefix, name); };
  if (t.num_nodes() <= 0) return Bad(field("num_nodes"), t.num_nodes(), "must be positive");
  if (t.num_nodes() > kMaxCount) {
    return Bad(field("num_nodes"), t.num_nodes(), absl::StrCat("is too large (at most ", kMaxCount, ")"));
  }
  if (features_required ? t.feature_dim() <= 0 : t.feature_dim() < 0) {
    return Bad(field("feature_dim"), t.feature_dim(), features_required ? "must be positive" : "must not be negative");
  }
  if (t.feature_dim() > kMaxCount) {
    return Bad(field("feature_dim"), t.feature_dim(), absl::StrCat("is too large (at most ", kMaxCount, ")"));
  }
  if (t.feature_dim() > 0 && !FeatureElementDType(t.feature_dtype())) {
    return Bad(field("feature_dtype"), FeatureDTypeName(t.feature_dtype()), "must be set to a known feature dtype");
  }
  GNND_RETURN_IF_ERROR(CheckAttributes(field("node_attrs"), t.node_attrs(), t.num_nodes(), "node"));
  if (features_required ? t.num_classes() <= 0 : t.num_classes() < 0) {
    return Bad(field("num_classes"), t.num_classes(), features_required ? "must be positive" : "must not be negative");
  }
  const std::array<int64_t, 3> sizes = {t.num_train(), t.num_valid(), t.num_test()};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string name = field(absl::StrCat("num_", kSplitNames[i]));
    if (sizes[i] < 0) return Bad(name, sizes[i], "must not be negative");
    if (sizes[i] > t.num_nodes()) return Bad(name, sizes[i], absl::StrCat("exceeds num_nodes = ", t.num_nodes()));
    if (sizes[i] > 0 && t.num_classes() == 0) return Bad(name, sizes[i], "needs labels (num_classes is 0)");
  }
  int64_t feature_bytes = 0;
  if (t.feature_dim() > 0) {
    const size_t element = DTypeSize(FeatureElementDType(t.feature_dtype()).value());
    if (__builtin_mul_overflow(t.num_nodes(), t.feature_dim(), &feature_bytes) ||
        __builtin_mul_overflow(feature_bytes, static_cast<int64_t>(element), &feature_bytes) ||
        feature_bytes > kMaxNpyDataBytes) {
      return Bad(field("feature_dim"), t.feature_dim(),
                 absl::StrCat("makes the features (num_nodes = ", t.num_nodes(), " rows) larger than ",
                              kMaxNpyDataBytes, " bytes"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEdgeSplits(const std::string& prefix, const v1::Relation& r) {
  std::array<bool, 3> given = {false, false, false};
  for (int i = 0; i < r.edge_splits_size(); ++i) {
    const v1::EdgeSplit& e = r.edge_splits(i);
    auto field = [&](absl::string_view name) { return absl::StrCat(prefix, "edge_splits[", i, "].", name); };
    const auto* at = std::find(kSplitNames.begin(), kSplitNames.end(), e.name());
    if (at == kSplitNames.end()) return Bad(field("name"), Quoted(e.name(), 64), "is not train, valid or test");
    if (given[at - kSplitNames.begin()]) return Bad(field("name"), Quoted(e.name()), "is given twice");
    given[at - kSplitNames.begin()] = true;
    if (e.num_edges() < 0) return Bad(field("num_edges"), e.num_edges(), "must not be negative");
    if (e.num_edges() > kMaxCount) {
      return Bad(field("num_edges"), e.num_edges(), absl::StrCat("is too large (at most ", kMaxCount, ")"));
    }
    int64_t negatives = 0;
    if (e.num_negatives() < 0 || e.num_negatives() > kMaxNegativeAmount) {
      return Bad(field("num_negatives"), e.num_negatives(),
                 absl::StrCat("must be 0 to ", kMaxNegativeAmount, " (negatives per edge gnnd can serve)"));
    }
    if (__builtin_mul_overflow(e.num_edges(), e.num_negatives(), &negatives) || negatives > kMaxCount) {
      return Bad(field("num_negatives"), e.num_negatives(),
                 absl::StrCat("makes more than ", kMaxCount, " negatives (num_edges = ", e.num_edges(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckEdgeAttributes(const std::string& prefix, const v1::Relation& r) {
  if (r.edge_attrs_size() > 0 && !r.edge_ids()) {
    return Bad(absl::StrCat(prefix, "edge_ids"), "false",
               "must be true where there are edge attributes (a batch's edges carry their ids with them)");
  }
  return CheckAttributes(prefix + "edge_attrs", r.edge_attrs(), r.num_edges(), "edge");
}

absl::Status CheckRelation(const std::string& prefix, const v1::Relation& r, int64_t src_nodes) {
  auto field = [&](absl::string_view name) { return absl::StrCat(prefix, name); };
  GNND_RETURN_IF_ERROR(CheckEdgeSplits(prefix, r));
  GNND_RETURN_IF_ERROR(CheckEdgeAttributes(prefix, r));
  if (r.num_edges() < 0) return Bad(field("num_edges"), r.num_edges(), "must not be negative");
  if (r.num_edges() > kMaxCount) {
    return Bad(field("num_edges"), r.num_edges(), absl::StrCat("is too large (at most ", kMaxCount, ")"));
  }
  if (r.index_dtype() == v1::INDEX_DTYPE_UNSPECIFIED) return Bad(field("index_dtype"), "unspecified", "must be set");
  if (r.index_dtype() == v1::INDEX_DTYPE_INT32 && src_nodes >= (int64_t{1} << 31)) {
    return Bad(field("index_dtype"), "INDEX_DTYPE_INT32", absl::StrCat("cannot hold ", src_nodes, " node ids"));
  }
  return absl::OkStatus();
}

// A format_version 1 manifest as its one type and one relation.
void Homogeneous(const v1::DatasetManifest& m, v1::NodeType& type, v1::Relation& relation) {
  type.set_name(kHomogeneousType);
  type.set_num_nodes(m.num_nodes());
  type.set_feature_dim(m.feature_dim());
  type.set_feature_dtype(m.feature_dtype());
  type.set_num_classes(m.num_classes());
  type.set_num_train(m.num_train());
  type.set_num_valid(m.num_valid());
  type.set_num_test(m.num_test());
  type.set_node_time(m.node_time());
  type.set_split_times(m.split_times());
  relation.set_src_type(kHomogeneousType);
  relation.set_name(kHomogeneousRelation);
  relation.set_dst_type(kHomogeneousType);
  relation.set_num_edges(m.num_edges());
  relation.set_index_dtype(m.index_dtype());
  *relation.mutable_edge_splits() = m.edge_splits();
  relation.set_edge_ids(m.edge_ids());
  *relation.mutable_edge_attrs() = m.edge_attrs();
  *type.mutable_node_attrs() = m.node_attrs();
}

}  // namespace

bool IsBatchArrayName(absl::string_view name) {
  static constexpr absl::string_view kNames[] = {"node_ids",          "num_nodes_per_hop", "edge_src",   "edge_dst",
                                                 "num_edges_per_hop", "features",          "labels",     "e_id",
                                                 "input_id",          "edge_label_index",  "edge_label", "src_index",
                                                 "dst_pos_index",     "dst_neg_index",     "batch",      "seed_time"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

bool IsSchemaName(absl::string_view name) {
  return !name.empty() && name.size() <= kMaxSchemaNameBytes && !absl::StrContains(name, "___") &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
         });
}

size_t ArraySchema::bytes() const {
  size_t n = DTypeSize(dtype);
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

size_t DatasetSchema::total_bytes() const {
  size_t total = 0;
  for (const ArraySchema& a : arrays) total += a.bytes();
  return total;
}

int DatasetSchema::NodeTypeNamed(absl::string_view name) const {
  for (size_t t = 0; t < node_types.size(); ++t) {
    if (node_types[t].name == name) return static_cast<int>(t);
  }
  return -1;
}

absl::Status CheckNodeTimeName(absl::string_view name) {
  if (IsSchemaName(name) && name != "node_time") return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("node_time_name ", Quoted(name, 100), " (a name: letters, digits and _, not node_time itself)"));
}

int DatasetSchema::RelationKeyed(absl::string_view key) const {
  int found = -1;
  for (size_t r = 0; r < relations.size(); ++r) {
    const RelationSchema& rel = relations[r];
    if (rel.key() == key) return static_cast<int>(r);
    if (rel.src + "___" + rel.dst == key) found = found == -1 ? static_cast<int>(r) : -2;
  }
  return std::max(found, -1);
}

absl::StatusOr<DatasetSchema> DatasetSchema::FromManifest(const v1::DatasetManifest& m) {
  DatasetSchema s;
  s.format_version = m.format_version();
  s.node_time_name = m.node_time_name();
  if (absl::Status named = CheckNodeTimeName(s.node_time_name); !s.node_time_name.empty() && !named.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("manifest.textproto: ", named.message()));
  }
  std::vector<v1::NodeType> types;
  std::vector<v1::Relation> relations;
  const bool v1 = m.format_version() == 1;
  if (v1) {
    if (m.node_types_size() > 0 || m.relations_size() > 0) {
      return Bad("format_version", 1, "has no node_types or relations (typed datasets are format_version 2)");
    }
    Homogeneous(m, types.emplace_back(), relations.emplace_back());
    if (m.num_nodes() <= 0) return Bad("num_nodes", m.num_nodes(), "must be positive");
    GNND_RETURN_IF_ERROR(CheckRelation("", relations[0], m.num_nodes()));
    GNND_RETURN_IF_ERROR(CheckNodeType("", types[0], /*features_required=*/false));
    for (const v1::EdgeAttribute& a : m.node_attrs()) {  // one type, one relation: one namespace in batches
      for (const v1::EdgeAttribute& e : m.edge_attrs()) {
        if (a.name() == e.name()) return Bad("node_attrs", Quoted(a.name()), "is also an edge attribute's name");
      }
    }
  } else if (m.format_version() == 2) {
    if (m.num_nodes() != 0 || m.num_edges() != 0 || m.feature_dim() != 0 || m.num_classes() != 0 ||
        m.edge_splits_size() != 0 || m.edge_ids() || m.edge_attrs_size() != 0 || m.node_time() || m.split_times() ||
        m.node_attrs_size() != 0) {
      return Bad("format_version", 2,
                 "describes its graph in node_types and relations, not num_nodes, num_edges, edge_splits, ...");
    }
    if (m.node_types_size() == 0 || static_cast<size_t>(m.node_types_size()) > kMaxNodeTypes) {
      return Bad("node_types", m.node_types_size(), absl::StrCat("entries (must be 1 to ", kMaxNodeTypes, ")"));
    }
    if (m.relations_size() == 0 || static_cast<size_t>(m.relations_size()) > kMaxRelations) {
      return Bad("relations", m.relations_size(), absl::StrCat("entries (must be 1 to ", kMaxRelations, ")"));
    }
    types.assign(m.node_types().begin(), m.node_types().end());
    relations.assign(m.relations().begin(), m.relations().end());
  } else {
    return Bad("format_version", m.format_version(), "is not supported (want 1 or 2)");
  }

  if (m.has_partition()) {
    const v1::Partition& p = m.partition();
    if (p.num_parts() < 1 || p.num_parts() > kMaxParts) {
      return Bad("partition.num_parts", p.num_parts(), absl::StrCat("(must be 1 to ", kMaxParts, ")"));
    }
    if (p.part() >= p.num_parts()) return Bad("partition.part", p.part(), "is not below num_parts");
    if (p.dataset_id().empty() || p.dataset_id().size() > 64 || !IsSchemaName(p.dataset_id())) {
      return Bad("partition.dataset_id", Quoted(p.dataset_id()), "(letters, digits and _, 1 to 64)");
    }
    if (p.method() != "random" && p.method() != "range" && p.method() != "metis") {
      return Bad("partition.method", Quoted(p.method()), "(random, range or metis)");
    }
    s.partition = {p.dataset_id(), p.method(), p.num_parts(), p.part(), p.seed()};
  }
  absl::flat_hash_set<std::string> names;
  for (size_t t = 0; t < types.size(); ++t) {
    const std::string prefix = v1 ? "" : absl::StrCat("node_types[", t, "].");
    if (!v1) {
      GNND_RETURN_IF_ERROR(CheckName(prefix + "name", types[t].name()));
      if (types[t].name() == "staged") {  // gnnd.DATASET.staged.* is a staged set's (shm_store.h)
        return Bad(prefix + "name", "'staged'", "is reserved");
      }
      if (!names.insert(types[t].name()).second) return Bad(prefix + "name", Quoted(types[t].name()), "is given twice");
      GNND_RETURN_IF_ERROR(CheckNodeType(prefix, types[t], /*features_required=*/false));
    }
    NodeTypeSchema& n = s.node_types.emplace_back();
    n.name = types[t].name();
    n.num_nodes = types[t].num_nodes();
    n.offset = s.num_nodes;
    s.num_nodes += n.num_nodes;
    if (s.num_nodes > kMaxCount) {
      return Bad(prefix + "num_nodes", n.num_nodes, absl::StrCat("makes more than ", kMaxCount, " nodes in all"));
    }
    n.feature_dim = types[t].feature_dim();
    if (n.feature_dim > 0) n.feature_dtype = FeatureElementDType(types[t].feature_dtype()).value();
    n.num_classes = types[t].num_classes();
    n.split_sizes = {types[t].num_train(), types[t].num_valid(), types[t].num_test()};
    n.node_time = types[t].node_time() ? 0 : -1;  // present; made positions below
    for (const v1::EdgeAttribute& a : types[t].node_attrs()) {
      n.node_attrs.push_back({a.name(), a.dim(), EdgeAttributeDType(a.dtype()).value(), -1});
    }
    if (types[t].split_times()) {
      if (n.num_classes == 0) return Bad(prefix + "split_times", "true", "needs splits (num_classes is 0)");
      n.split_times = {0, 0, 0};
    }
    const auto& part_rows = v1 ? m.part_rows() : types[t].part_rows();
    if (s.partitioned() && n.feature_dim > 0) {  // each part's rows, adding up to the type's nodes
      if (static_cast<uint32_t>(part_rows.size()) != s.partition.num_parts) {
        return Bad(prefix + "part_rows", part_rows.size(),
                   absl::StrCat("entries (one per part: ", s.partition.num_parts, ")"));
      }
      int64_t sum = 0;
      for (int64_t rows : part_rows) {
        if (rows < 0 || rows > n.num_nodes)
          return Bad(prefix + "part_rows", rows, "is not a count of the type's nodes");
        sum += rows;
      }
      if (sum != n.num_nodes)
        return Bad(prefix + "part_rows", sum, absl::StrCat("add up to this, not num_nodes ", n.num_nodes));
      n.part_rows.assign(part_rows.begin(), part_rows.end());
    } else if (!part_rows.empty()) {
      return Bad(prefix + "part_rows", part_rows.size(), "entries, but only a part's featured types have them");
    }
  }
  absl::flat_hash_set<std::string> keys;
  for (size_t i = 0; i < relations.size(); ++i) {
    const v1::Relation& r = relations[i];
    const std::string prefix = absl::StrCat("relations[", i, "].");
    RelationSchema& rel = s.relations.emplace_back();
    rel.src = r.src_type();
    rel.name = r.name();
    rel.dst = r.dst_type();
    rel.src_type = s.NodeTypeNamed(rel.src);
    rel.dst_type = s.NodeTypeNamed(rel.dst);
    if (!v1) {
      GNND_RETURN_IF_ERROR(CheckName(prefix + "name", r.name()));
      if (rel.src_type < 0) return Bad(prefix + "src_type", Quoted(rel.src), "is not one of node_types");
      if (rel.dst_type < 0) return Bad(prefix + "dst_type", Quoted(rel.dst), "is not one of node_types");
      if (!keys.insert(rel.key()).second) return Bad(prefix + "name", Quoted(rel.key()), "is given twice");
      GNND_RETURN_IF_ERROR(CheckRelation(prefix, r, s.node_types[rel.src_type].num_nodes));
    }
    rel.num_edges = r.num_edges();
    rel.index_dtype = r.index_dtype() == v1::INDEX_DTYPE_INT32 ? DType::kInt32 : DType::kInt64;
    for (const v1::EdgeSplit& e : r.edge_splits()) {
      EdgeSplitSchema& split =
          rel.edge_splits[std::find(kSplitNames.begin(), kSplitNames.end(), e.name()) - kSplitNames.begin()];
      split.num_edges = e.num_edges();
      split.num_negatives = e.num_negatives();
      split.edges = 0;  // present; made positions below
      split.labels = e.labeled() ? 0 : -1;
      split.times = e.timed() ? 0 : -1;
      split.negatives = e.num_negatives() > 0 ? 0 : -1;
    }
    rel.edge_ids = r.edge_ids() ? 0 : -1;  // present; made a position below
    for (const v1::EdgeAttribute& a : r.edge_attrs()) {
      rel.edge_attrs.push_back({a.name(), a.dim(), EdgeAttributeDType(a.dtype()).value(), -1});
    }
  }

  // The array table: each relation's CSC, then each type's features, labels and splits. A format_version
  // 1 dataset keeps its files' names.
  auto add = [&s](std::string name, ArrayRole role, int owner, DType dtype, std::vector<int64_t> shape) {
    s.arrays.push_back({std::move(name), role, owner, -1, dtype, std::move(shape)});
    return static_cast<int>(s.arrays.size() - 1);
  };
  for (size_t i = 0; i < s.relations.size(); ++i) {
    RelationSchema& r = s.relations[i];
    const std::string prefix = v1 ? "" : r.key() + ".";
    const int owner = static_cast<int>(i);
    r.indptr =
        add(prefix + "indptr", ArrayRole::kIndptr, owner, DType::kInt64, {s.node_types[r.dst_type].num_nodes + 1});
    r.indices = add(prefix + "indices", ArrayRole::kIndices, owner, r.index_dtype, {r.num_edges});
  }
  for (size_t t = 0; t < s.node_types.size(); ++t) {
    NodeTypeSchema& n = s.node_types[t];
    const std::string prefix = v1 ? "" : n.name + ".";
    const int owner = static_cast<int>(t);
    if (n.feature_dim > 0) {  // a part holds the rows it owns, and the owner map
      const int64_t rows = s.partitioned() ? n.part_rows[s.partition.part] : n.num_nodes;
      n.features = add(prefix + "features", ArrayRole::kFeatures, owner, n.feature_dtype, {rows, n.feature_dim});
      if (s.partitioned()) {
        n.owner = add(prefix + "owner", ArrayRole::kOwner, owner, DType::kInt32, {n.num_nodes});
        n.owner_row = add(prefix + "owner_row", ArrayRole::kOwnerRow, owner, DType::kInt64, {n.num_nodes});
      }
    }
    if (n.num_classes > 0) {
      n.labels = add(prefix + "labels", ArrayRole::kLabels, owner, DType::kInt64, {n.num_nodes});
      for (int split = 0; split < 3; ++split) {
        n.splits[split] = add(prefix + std::string(kSplitNames[split]), ArrayRole::kSplit, owner, DType::kInt64,
                              {n.split_sizes[split]});
        s.arrays.back().split = split;
      }
    }
  }
  // Then each relation's edge splits: a full format_version 1 dataset keeps its seven arrays first.
  for (size_t i = 0; i < s.relations.size(); ++i) {
    RelationSchema& r = s.relations[i];
    const std::string prefix = v1 ? "" : r.key() + ".";
    const int owner = static_cast<int>(i);
    for (int split = 0; split < 3; ++split) {
      EdgeSplitSchema& e = r.edge_splits[split];
      if (e.edges < 0) continue;
      const std::string name = prefix + std::string(kSplitNames[split]);
      e.edges = add(name + "_edges", ArrayRole::kEdges, owner, DType::kInt64, {2, e.num_edges});
      s.arrays.back().split = split;
      if (e.labels >= 0) {
        e.labels = add(name + "_edge_label", ArrayRole::kEdgeLabels, owner, DType::kInt64, {e.num_edges});
        s.arrays.back().split = split;
      }
      if (e.negatives >= 0) {
        e.negatives = add(name + "_neg", ArrayRole::kNegatives, owner, DType::kInt64, {e.num_edges, e.num_negatives});
        s.arrays.back().split = split;
      }
    }
  }
  // Then each relation's edge ids and attributes.
  for (size_t i = 0; i < s.relations.size(); ++i) {
    RelationSchema& r = s.relations[i];
    const std::string prefix = v1 ? "" : r.key() + ".";
    const int owner = static_cast<int>(i);
    if (r.edge_ids >= 0) r.edge_ids = add(prefix + "e_id", ArrayRole::kEdgeIds, owner, DType::kInt64, {r.num_edges});
    for (EdgeAttributeSchema& a : r.edge_attrs) {
      std::vector<int64_t> shape = {r.num_edges};
      if (a.dim > 0) shape.push_back(a.dim);
      a.array = add(prefix + "edge." + a.name, ArrayRole::kEdgeAttr, owner, a.dtype, std::move(shape));
    }
  }
  // Then each type's node attributes.
  for (size_t t = 0; t < s.node_types.size(); ++t) {
    NodeTypeSchema& n = s.node_types[t];
    const std::string prefix = v1 ? "" : n.name + ".";
    for (EdgeAttributeSchema& a : n.node_attrs) {
      std::vector<int64_t> shape = {n.num_nodes};
      if (a.dim > 0) shape.push_back(a.dim);
      a.array = add(prefix + "node." + a.name, ArrayRole::kNodeAttr, static_cast<int>(t), a.dtype, std::move(shape));
    }
  }
  // Then the times: each type's node times and its splits' seed times, each relation's seed edges' times.
  for (size_t t = 0; t < s.node_types.size(); ++t) {
    NodeTypeSchema& n = s.node_types[t];
    const std::string prefix = v1 ? "" : n.name + ".";
    const int owner = static_cast<int>(t);
    if (n.node_time >= 0)
      n.node_time = add(prefix + "node_time", ArrayRole::kNodeTime, owner, DType::kInt64, {n.num_nodes});
    for (int split = 0; split < 3; ++split) {
      if (n.split_times[split] < 0) continue;
      n.split_times[split] = add(prefix + std::string(kSplitNames[split]) + "_time", ArrayRole::kSplitTime, owner,
                                 DType::kInt64, {n.split_sizes[split]});
      s.arrays.back().split = split;
    }
  }
  for (size_t i = 0; i < s.relations.size(); ++i) {
    RelationSchema& r = s.relations[i];
    const std::string prefix = v1 ? "" : r.key() + ".";
    for (int split = 0; split < 3; ++split) {
      EdgeSplitSchema& e = r.edge_splits[split];
      if (e.times < 0) continue;
      e.times = add(prefix + std::string(kSplitNames[split]) + "_edge_time", ArrayRole::kEdgeSplitTime,
                    static_cast<int>(i), DType::kInt64, {e.num_edges});
      s.arrays.back().split = split;
    }
  }
  return s;
}

}  // namespace gnnd
