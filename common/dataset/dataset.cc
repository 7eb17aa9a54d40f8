#include "common/dataset/dataset.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/dataset/manifest.h"
#include "common/dataset/npy.h"

namespace gnnd {
namespace {

constexpr int64_t kChunk = 1 << 20;

// Runs check(begin, end) over [0, n) in parallel; returns the error of the lowest failing chunk.
absl::Status FirstError(int64_t n, int threads, const std::function<absl::Status(int64_t, int64_t)>& check) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<absl::Status> results(chunks);
  ParallelFor(n, kChunk, threads, [&](int64_t begin, int64_t end) { results[begin / kChunk] = check(begin, end); });
  for (absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// How an error names a node id's range: "(num_nodes = N)", or "(type 'author' has N nodes)" when typed.
std::string NodeRange(const DatasetSchema& schema, int type) {
  const NodeTypeSchema& t = schema.node_types[type];
  if (schema.format_version == 1) return absl::StrCat("(num_nodes = ", t.num_nodes, ")");
  return absl::StrCat("(type '", t.name, "' has ", t.num_nodes, " nodes)");
}

// Every id in [0, num_nodes); an error names the element as `element(i)` says ("indices[7]").
template <typename Index>
absl::Status CheckIds(const std::string& file, const Index* ids, int64_t count, int64_t num_nodes,
                      const std::string& range, int threads, const std::function<std::string(int64_t)>& element) {
  return FirstError(count, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (ids[i] < 0 || ids[i] >= num_nodes) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: %s = %d is not a node id %s", file, element(i), int64_t{ids[i]}, range));
      }
    }
    return absl::OkStatus();
  });
}

template <typename Index>
absl::Status CheckIndices(const std::string& file, const Index* indices, int64_t num_edges, int64_t num_nodes,
                          const std::string& range, int threads) {
  return CheckIds(file, indices, num_edges, num_nodes, range, threads,
                  [](int64_t i) { return absl::StrCat("indices[", i, "]"); });
}

// A relation's seed edges: sources of its source type, destinations and fixed negatives of its
// destination type, labels non-negative.
absl::Status CheckEdgeSplit(const DatasetSchema& schema, const RelationSchema& r, const EdgeSplitSchema& e,
                            const DatasetArrays& arrays, int threads) {
  const int64_t n = e.num_edges;
  const std::string file = schema.arrays[e.edges].file();
  const auto* edges = static_cast<const int64_t*>(arrays.data[e.edges]);
  for (int row = 0; row < 2; ++row) {
    const int type = row == 0 ? r.src_type : r.dst_type;
    GNND_RETURN_IF_ERROR(CheckIds(file, edges + row * n, n, schema.node_types[type].num_nodes, NodeRange(schema, type),
                                  threads, [row](int64_t i) { return absl::StrCat("[", row, ", ", i, "]"); }));
  }
  if (e.negatives >= 0) {
    const int64_t k = e.num_negatives;
    GNND_RETURN_IF_ERROR(CheckIds(schema.arrays[e.negatives].file(),
                                  static_cast<const int64_t*>(arrays.data[e.negatives]), n * k,
                                  schema.node_types[r.dst_type].num_nodes, NodeRange(schema, r.dst_type), threads,
                                  [k](int64_t i) { return absl::StrCat("[", i / k, ", ", i % k, "]"); }));
  }
  if (e.labels >= 0) {
    const std::string labels_file = schema.arrays[e.labels].file();
    const auto* labels = static_cast<const int64_t*>(arrays.data[e.labels]);
    GNND_RETURN_IF_ERROR(FirstError(n, threads, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if (labels[i] < 0) {
          return absl::InvalidArgumentError(
              absl::StrFormat("%s: [%d] = %d is not a class id (must not be negative)", labels_file, i, labels[i]));
        }
      }
      return absl::OkStatus();
    }));
  }
  return absl::OkStatus();
}

absl::Status CheckIndptr(const std::string& file, const int64_t* indptr, int64_t n, int64_t num_edges, int threads) {
  if (indptr[0] != 0) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": indptr[0] = ", indptr[0], " (must be 0)"));
  }
  GNND_RETURN_IF_ERROR(FirstError(n, threads, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      if (indptr[v + 1] < indptr[v]) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s: indptr[%d] = %d is less than indptr[%d] = %d (must never decrease)", file, v + 1,
                            indptr[v + 1], v, indptr[v]));
      }
    }
    return absl::OkStatus();
  }));
  if (indptr[n] != num_edges) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: indptr[%d] = %d but the manifest says num_edges = %d", file, n, indptr[n], num_edges));
  }
  return absl::OkStatus();
}

absl::Status CheckSplit(const std::string& file, absl::string_view name, std::span<const int64_t> ids,
                        const std::string& labels_file, const int64_t* labels, int64_t num_nodes,
                        const std::string& range, int threads) {
  auto describe = [&](int64_t i, absl::string_view problem) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s[%d] = %d %s", file, name, i, ids[i], problem));
  };
  GNND_RETURN_IF_ERROR(FirstError(static_cast<int64_t>(ids.size()), threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (ids[i] < 0 || ids[i] >= num_nodes) return describe(i, absl::StrCat("is not a node id ", range));
      if (labels[ids[i]] < 0) return describe(i, absl::StrCat("is unlabeled (", labels_file, " has -1 there)"));
    }
    return absl::OkStatus();
  }));
  // Uniqueness: a parallel bitmap pass; on a repeat, a sequential pass names the first one.
  const size_t words = static_cast<size_t>((num_nodes + 63) / 64);
  auto seen = std::make_unique<std::atomic<uint64_t>[]>(words);
  std::atomic<bool> repeated{false};
  ParallelFor(static_cast<int64_t>(ids.size()), kChunk, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t bit = uint64_t{1} << (ids[i] & 63);
      if (seen[ids[i] >> 6].fetch_or(bit, std::memory_order_relaxed) & bit) repeated = true;
    }
  });
  if (!repeated) return absl::OkStatus();
  std::vector<uint64_t> first(words, 0);
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint64_t bit = uint64_t{1} << (ids[i] & 63);
    if (first[ids[i] >> 6] & bit) return describe(static_cast<int64_t>(i), "appears twice in the split");
    first[ids[i] >> 6] |= bit;
  }
  return absl::OkStatus();
}

// "train 900 (labeled) / test 50 (100 negatives each)", or "" without edge splits.
std::string DescribeEdgeSplits(const RelationSchema& r) {
  std::vector<std::string> parts;
  for (int split = 0; split < 3; ++split) {
    const EdgeSplitSchema& e = r.edge_splits[split];
    if (e.edges < 0) continue;
    std::string part = absl::StrCat(kSplitNames[split], " ", e.num_edges);
    if (e.labels >= 0) absl::StrAppend(&part, " (labeled)");
    if (e.negatives >= 0) absl::StrAppend(&part, " (", e.num_negatives, " negatives each)");
    if (e.times >= 0) absl::StrAppend(&part, " (timed)");
    parts.push_back(std::move(part));
  }
  return absl::StrJoin(parts, " / ");
}

// "edge ids; edge attributes w (float32), f (16 x float16)", or "".
std::string DescribeEdgeArrays(const RelationSchema& r) {
  std::vector<std::string> parts;
  if (r.edge_ids >= 0) parts.push_back("edge ids");
  std::vector<std::string> attrs;
  for (const EdgeAttributeSchema& a : r.edge_attrs) {
    attrs.push_back(a.dim > 0 ? absl::StrFormat("%s (%d x %s)", a.name, a.dim, DTypeName(a.dtype))
                              : absl::StrFormat("%s (%s)", a.name, DTypeName(a.dtype)));
  }
  if (!attrs.empty()) parts.push_back("edge attributes " + absl::StrJoin(attrs, ", "));
  return absl::StrJoin(parts, "; ");
}

// An edge or node attribute's values (`rows` of them; `kind`: "edge" or "node"): floats finite, bools 0 or 1,
// naming file and element.
absl::Status CheckAttributeValues(const DatasetSchema& schema, const EdgeAttributeSchema& a, int64_t rows,
                                  absl::string_view kind, const DatasetArrays& arrays, int threads) {
  if (!IsFloat(a.dtype) && a.dtype != DType::kBool) return absl::OkStatus();
  const std::string file = schema.arrays[a.array].file();
  const auto* bytes = static_cast<const std::byte*>(arrays.data[a.array]);
  const int64_t width = std::max<int64_t>(a.dim, 1);
  const size_t element = DTypeSize(a.dtype);
  auto where = [&](int64_t e) { return a.dim > 0 ? absl::StrCat(e / width, ", ", e % width) : absl::StrCat(e); };
  return FirstError(rows * width, threads, [&](int64_t begin, int64_t end) {
    if (a.dtype == DType::kBool) {
      for (int64_t e = begin; e < end; ++e) {
        const auto b = static_cast<uint8_t>(bytes[e]);
        if (b > 1) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "%s: element [%s] is %d (%s attributes of dtype bool are 0 or 1)", file, where(e), b, kind));
        }
      }
      return absl::OkStatus();
    }
    float values[4096];
    for (int64_t at = begin; at < end; at += 4096) {
      const int64_t n = std::min<int64_t>(4096, end - at);
      ElementsAsFloat(a.dtype, bytes + at * element, values, static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        if (std::isfinite(values[i])) continue;
        return absl::InvalidArgumentError(absl::StrFormat("%s: element [%s] is %f (%s attributes must be finite)", file,
                                                          where(at + i), values[i], kind));
      }
    }
    return absl::OkStatus();
  });
}

// A relation's edge ids (non-negative) and floating-point edge attributes (finite), naming file and element.
absl::Status CheckEdgeArrays(const DatasetSchema& schema, const RelationSchema& r, const DatasetArrays& arrays,
                             int threads) {
  if (r.edge_ids >= 0) {
    const std::string file = schema.arrays[r.edge_ids].file();
    const auto* ids = static_cast<const int64_t*>(arrays.data[r.edge_ids]);
    GNND_RETURN_IF_ERROR(FirstError(r.num_edges, threads, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        if (ids[k] < 0) {
          return absl::InvalidArgumentError(absl::StrFormat("%s: e_id[%d] = %d is negative", file, k, ids[k]));
        }
      }
      return absl::OkStatus();
    }));
  }
  for (const EdgeAttributeSchema& a : r.edge_attrs) {
    GNND_RETURN_IF_ERROR(CheckAttributeValues(schema, a, r.num_edges, "edge", arrays, threads));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view ArrayName(ArrayId id) {
  static constexpr absl::string_view kNames[] = {"indptr", "indices", "features", "labels", "train", "valid", "test"};
  return kNames[static_cast<int>(id)];
}

absl::StatusOr<ArrayId> SplitArrayId(absl::string_view split) {
  for (ArrayId id : kSplits) {
    if (split == ArrayName(id)) return id;
  }
  return absl::InvalidArgumentError(absl::StrCat("split = ", Quoted(split), " (must be train, valid or test)"));
}

DType ArrayDType(const v1::DatasetManifest& m, ArrayId id) {
  switch (id) {
    case ArrayId::kIndices:
      return m.index_dtype() == v1::INDEX_DTYPE_INT32 ? DType::kInt32 : DType::kInt64;
    case ArrayId::kFeatures:
      return NpyStorage(FeatureElementDType(m.feature_dtype()).value_or(DType::kFloat32));
    default:
      return DType::kInt64;
  }
}

std::vector<int64_t> ArrayShape(const v1::DatasetManifest& m, ArrayId id) {
  switch (id) {
    case ArrayId::kIndptr:
      return {m.num_nodes() + 1};
    case ArrayId::kIndices:
      return {m.num_edges()};
    case ArrayId::kFeatures:  // a part holds the rows it owns
      return {m.has_partition() && m.part_rows_size() > static_cast<int>(m.partition().part())
                  ? m.part_rows(static_cast<int>(m.partition().part()))
                  : m.num_nodes(),
              m.feature_dim()};
    case ArrayId::kLabels:
      return {m.num_nodes()};
    case ArrayId::kTrain:
      return {m.num_train()};
    case ArrayId::kValid:
      return {m.num_valid()};
    case ArrayId::kTest:
      return {m.num_test()};
  }
  return {};
}

size_t ArrayBytes(const v1::DatasetManifest& m, ArrayId id) {
  size_t bytes = DTypeSize(ArrayDType(m, id));
  for (int64_t d : ArrayShape(m, id)) bytes *= static_cast<size_t>(d);
  return bytes;
}

size_t FeatureRowBytes(const v1::DatasetManifest& m) {
  return DTypeSize(ArrayDType(m, ArrayId::kFeatures)) * static_cast<size_t>(m.feature_dim());
}

absl::Status CheckManifest(const v1::DatasetManifest& m) { return DatasetSchema::FromManifest(m).status(); }

DatasetArrays::DatasetArrays(const DatasetSchema& schema) : DatasetArrays() {
  data.assign(schema.arrays.size(), nullptr);
  if (schema.format_version != 1) return;  // the homogeneous samplers serve format_version 1 datasets
  const NodeTypeSchema& t = schema.node_types[0];
  const RelationSchema& r = schema.relations[0];
  const std::array<int, kNumArrays> by_role = {r.indptr,    r.indices,   t.features, t.labels,
                                               t.splits[0], t.splits[1], t.splits[2]};  // kAllArrays' order
  positions = by_role;
}

// A part's owner map of type `t` (its T.owner.npy and T.owner_row.npy): every node's part is a part and its row
// is below that part's rows, and no two nodes share a (part, row), so every part's rows are owned once each.
absl::Status CheckOwners(const DatasetSchema& schema, const NodeTypeSchema& t, const DatasetArrays& arrays) {
  const auto* owner = static_cast<const int32_t*>(arrays.data[t.owner]);
  const auto* row = static_cast<const int64_t*>(arrays.data[t.owner_row]);
  const std::string owner_file = schema.arrays[t.owner].file(), row_file = schema.arrays[t.owner_row].file();
  std::vector<int64_t> first(t.part_rows.size() + 1, 0);  // each part's first bit in `taken`
  for (size_t p = 0; p < t.part_rows.size(); ++p) first[p + 1] = first[p] + t.part_rows[p];
  std::vector<bool> taken(static_cast<size_t>(t.num_nodes), false);
  for (int64_t v = 0; v < t.num_nodes; ++v) {
    if (owner[v] < 0 || static_cast<uint32_t>(owner[v]) >= schema.partition.num_parts) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: owner[%d] = %d is not a part (num_parts = %d)", owner_file,
                                                        v, owner[v], schema.partition.num_parts));
    }
    if (row[v] < 0 || row[v] >= t.part_rows[owner[v]]) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: owner_row[%d] = %d is not a row of part %d (it holds %d)",
                                                        row_file, v, row[v], owner[v], t.part_rows[owner[v]]));
    }
    const auto bit = static_cast<size_t>(first[owner[v]] + row[v]);
    if (taken[bit]) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: owner_row[%d] = %d: row %d of part %d has two owners",
                                                        row_file, v, row[v], row[v], owner[v]));
    }
    taken[bit] = true;
  }
  return absl::OkStatus();
}

absl::Status RequireWhole(const DatasetSchema& schema, absl::string_view what) {
  if (!schema.partitioned()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(what, " is part ", schema.partition.part, " of ", schema.partition.num_parts,
                   " of a partitioned dataset (", schema.partition.dataset_id,
                   "): it holds only its own feature rows; use the whole dataset here (gnnd serves a part "
                   "with --peers)"));
}

absl::Status ValidateArrays(const DatasetSchema& schema, const DatasetArrays& arrays, int threads) {
  for (const RelationSchema& r : schema.relations) {
    const std::string indptr_file = schema.arrays[r.indptr].file();
    const int64_t dst_nodes = schema.node_types[r.dst_type].num_nodes;
    GNND_RETURN_IF_ERROR(
        CheckIndptr(indptr_file, static_cast<const int64_t*>(arrays.data[r.indptr]), dst_nodes, r.num_edges, threads));
    const std::string file = schema.arrays[r.indices].file();
    const int64_t src_nodes = schema.node_types[r.src_type].num_nodes;
    const std::string range = NodeRange(schema, r.src_type);
    const void* indices = arrays.data[r.indices];
    GNND_RETURN_IF_ERROR(
        r.index_dtype == DType::kInt32
            ? CheckIndices(file, static_cast<const int32_t*>(indices), r.num_edges, src_nodes, range, threads)
            : CheckIndices(file, static_cast<const int64_t*>(indices), r.num_edges, src_nodes, range, threads));
    for (const EdgeSplitSchema& e : r.edge_splits) {
      if (e.edges >= 0) GNND_RETURN_IF_ERROR(CheckEdgeSplit(schema, r, e, arrays, threads));
    }
    GNND_RETURN_IF_ERROR(CheckEdgeArrays(schema, r, arrays, threads));
  }
  for (size_t type = 0; type < schema.node_types.size(); ++type) {
    const NodeTypeSchema& t = schema.node_types[type];
    if (t.owner >= 0) GNND_RETURN_IF_ERROR(CheckOwners(schema, t, arrays));
    for (const EdgeAttributeSchema& a : t.node_attrs) {
      GNND_RETURN_IF_ERROR(CheckAttributeValues(schema, a, t.num_nodes, "node", arrays, threads));
    }
    if (t.labels < 0) continue;
    const std::string labels_file = schema.arrays[t.labels].file();
    const auto* labels = static_cast<const int64_t*>(arrays.data[t.labels]);
    GNND_RETURN_IF_ERROR(FirstError(t.num_nodes, threads, [&](int64_t begin, int64_t end) {
      for (int64_t v = begin; v < end; ++v) {
        if (labels[v] < -1 || labels[v] >= t.num_classes) {
          return absl::InvalidArgumentError(absl::StrFormat("%s: labels[%d] = %d is neither -1 nor a class in [0, %d)",
                                                            labels_file, v, labels[v], t.num_classes));
        }
      }
      return absl::OkStatus();
    }));
    for (int split = 0; split < 3; ++split) {
      const ArraySchema& a = schema.arrays[t.splits[split]];
      std::span<const int64_t> ids(static_cast<const int64_t*>(arrays.data[t.splits[split]]),
                                   static_cast<size_t>(a.shape[0]));
      GNND_RETURN_IF_ERROR(CheckSplit(a.file(), kSplitNames[split], ids, labels_file, labels, t.num_nodes,
                                      NodeRange(schema, static_cast<int>(type)), threads));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<DatasetDir> DatasetDir::Open(const std::string& dir) {
  DatasetDir d;
  d.dir_ = dir;
  if (dir.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("dataset directory: the path contains a NUL byte");
  }
  const FileDescriptor dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) {
    if (errno == ENOTDIR) return absl::InvalidArgumentError(absl::StrCat(dir, ": not a directory"));
    if (errno == ENOENT)
      return absl::NotFoundError(absl::StrCat(dir, ": no such directory (not a dataset directory?)"));
    return ErrnoStatus(errno, absl::StrCat("open the dataset directory ", dir));
  }
  // Each file is opened once, here; everything after reads through these descriptors.
  absl::StatusOr<FileDescriptor> manifest = OpenRegularFileIn(dir_fd.get(), kManifestFile, kManifestFile);
  if (absl::IsNotFound(manifest.status())) {
    return absl::NotFoundError(absl::StrCat(dir, "/", kManifestFile, ": missing (not a dataset directory?)"));
  }
  if (!manifest.ok()) return manifest.status();
  GNND_ASSIGN_OR_RETURN(d.manifest_, ReadManifest(manifest->get()));
  GNND_ASSIGN_OR_RETURN(d.schema_, DatasetSchema::FromManifest(d.manifest_));
  for (const ArraySchema& a : d.schema_.arrays) {
    const std::string file = a.file();
    absl::StatusOr<NpyFile> npy = NpyFile::OpenIn(dir_fd.get(), dir, file);
    if (!npy.ok()) {
      if (absl::IsNotFound(npy.status())) return absl::NotFoundError(absl::StrCat(file, ": missing from ", dir));
      return npy.status();
    }
    const DType want_dtype = NpyStorage(a.dtype);
    if (npy->header().dtype != want_dtype) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": dtype is ", NpyDescr(npy->header().dtype),
                                                     " but the manifest implies ", NpyDescr(want_dtype)));
    }
    if (npy->header().shape != a.shape) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": shape is (", absl::StrJoin(npy->header().shape, ", "),
                                                     ") but the manifest implies (", absl::StrJoin(a.shape, ", "),
                                                     ")"));
    }
    d.files_.push_back(std::move(*npy));
  }
  return d;
}

DatasetArrays DatasetDir::arrays() const {
  DatasetArrays a(schema_);
  for (size_t i = 0; i < files_.size(); ++i) a.data[i] = files_[i].data();
  return a;
}

std::string DatasetDir::Summary() const { return DescribeDataset(manifest_, schema_, arrays()); }

std::string DescribeDataset(const v1::DatasetManifest& m, const DatasetSchema& schema, const DatasetArrays& arrays) {
  const double mib = 1048576.0;
  const std::string source = m.source().empty() ? "" : absl::StrCat("; source: ", m.source());
  if (schema.format_version == 1) {
    const NodeTypeSchema& t = schema.node_types[0];
    const RelationSchema& r = schema.relations[0];
    const int64_t* indptr = arrays.indptr();
    int64_t max_degree = 0, isolated = 0;
    for (int64_t v = 0; v < t.num_nodes; ++v) {
      const int64_t degree = indptr[v + 1] - indptr[v];
      max_degree = std::max(max_degree, degree);
      isolated += degree == 0;
    }
    std::string text = absl::StrFormat(
        "%d nodes, %d edges (in-degree mean %.2f, max %d, %d without in-edges), %s indices", t.num_nodes, r.num_edges,
        static_cast<double>(r.num_edges) / t.num_nodes, max_degree, isolated, DTypeName(r.index_dtype));
    if (t.features >= 0) {
      absl::StrAppendFormat(&text, "; features %d x %s (%.1f MiB)", t.feature_dim, DTypeName(t.feature_dtype),
                            schema.arrays[t.features].bytes() / mib);
    }
    if (t.labels >= 0) {
      absl::StrAppendFormat(&text, "; %d classes; splits train %d / valid %d / test %d", t.num_classes,
                            t.split_sizes[0], t.split_sizes[1], t.split_sizes[2]);
    }
    if (t.node_time >= 0) absl::StrAppend(&text, "; node times");
    if (t.split_times[0] >= 0) absl::StrAppend(&text, "; split times");
    if (const std::string edge_splits = DescribeEdgeSplits(r); !edge_splits.empty()) {
      absl::StrAppend(&text, "; edge splits ", edge_splits);
    }
    if (const std::string edge_arrays = DescribeEdgeArrays(r); !edge_arrays.empty()) {
      absl::StrAppend(&text, "; ", edge_arrays);
    }
    return absl::StrFormat("%s; %.1f MiB in all%s", text, schema.total_bytes() / mib, source);
  }
  std::vector<std::string> parts;
  for (const NodeTypeSchema& t : schema.node_types) {
    std::string part = absl::StrFormat("%s: %d nodes", t.name, t.num_nodes);
    if (t.features >= 0) {
      absl::StrAppendFormat(&part, ", features %d x %s (%.1f MiB)", t.feature_dim, DTypeName(t.feature_dtype),
                            schema.arrays[t.features].bytes() / mib);
    }
    if (t.labels >= 0) {
      absl::StrAppendFormat(&part, ", %d classes, splits train %d / valid %d / test %d", t.num_classes,
                            t.split_sizes[0], t.split_sizes[1], t.split_sizes[2]);
    }
    if (t.node_time >= 0) absl::StrAppend(&part, ", node times");
    if (t.split_times[0] >= 0) absl::StrAppend(&part, ", split times");
    parts.push_back(std::move(part));
  }
  for (const RelationSchema& r : schema.relations) {
    std::string part = absl::StrFormat("(%s, %s, %s): %d edges, %s indices", r.src, r.name, r.dst, r.num_edges,
                                       DTypeName(r.index_dtype));
    if (const std::string edge_splits = DescribeEdgeSplits(r); !edge_splits.empty()) {
      absl::StrAppend(&part, ", edge splits ", edge_splits);
    }
    if (const std::string edge_arrays = DescribeEdgeArrays(r); !edge_arrays.empty()) {
      absl::StrAppend(&part, ", ", edge_arrays);
    }
    parts.push_back(std::move(part));
  }
  return absl::StrFormat("%d node types, %d relations; %s; %.1f MiB in all%s", schema.node_types.size(),
                         schema.relations.size(), absl::StrJoin(parts, "; "), schema.total_bytes() / mib, source);
}

}  // namespace gnnd
