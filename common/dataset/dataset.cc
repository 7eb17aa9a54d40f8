#include "common/dataset/dataset.h"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/dataset/manifest.h"

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

template <typename Index>
absl::Status CheckIndices(const Index* indices, int64_t num_edges, int64_t num_nodes, int threads) {
  return FirstError(num_edges, threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (indices[i] < 0 || indices[i] >= num_nodes) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "indices.npy: indices[%d] = %d is not a node id (num_nodes = %d)", i, int64_t{indices[i]}, num_nodes));
      }
    }
    return absl::OkStatus();
  });
}

absl::Status CheckSplit(absl::string_view name, std::span<const int64_t> ids, const int64_t* labels, int64_t num_nodes,
                        int threads) {
  const std::string file = absl::StrCat(name, ".npy");
  auto describe = [&](int64_t i, absl::string_view problem) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s[%d] = %d %s", file, name, i, ids[i], problem));
  };
  GNND_RETURN_IF_ERROR(FirstError(static_cast<int64_t>(ids.size()), threads, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (ids[i] < 0 || ids[i] >= num_nodes) {
        return describe(i, absl::StrCat("is not a node id (num_nodes = ", num_nodes, ")"));
      }
      if (labels[ids[i]] < 0) return describe(i, "is unlabeled (labels.npy has -1 there)");
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
    case ArrayId::kFeatures:
      return {m.num_nodes(), m.feature_dim()};
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

absl::Status CheckManifest(const v1::DatasetManifest& m) {
  auto bad = [](absl::string_view field, auto value, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(kManifestFile, ": ", field, " = ", value, " ", why));
  };
  if (m.format_version() != kDatasetFormatVersion) {
    return bad("format_version", m.format_version(),
               absl::StrCat("is not supported (want ", kDatasetFormatVersion, ")"));
  }
  if (m.num_nodes() <= 0) return bad("num_nodes", m.num_nodes(), "must be positive");
  if (m.num_edges() < 0) return bad("num_edges", m.num_edges(), "must not be negative");
  if (m.index_dtype() == v1::INDEX_DTYPE_UNSPECIFIED) return bad("index_dtype", "unspecified", "must be set");
  if (m.index_dtype() == v1::INDEX_DTYPE_INT32 && m.num_nodes() >= (int64_t{1} << 31)) {
    return bad("index_dtype", "INDEX_DTYPE_INT32", absl::StrCat("cannot hold ", m.num_nodes(), " node ids"));
  }
  if (m.feature_dim() <= 0) return bad("feature_dim", m.feature_dim(), "must be positive");
  if (!FeatureElementDType(m.feature_dtype())) {
    return bad("feature_dtype", FeatureDTypeName(m.feature_dtype()), "must be set to a known feature dtype");
  }
  if (m.num_classes() <= 0) return bad("num_classes", m.num_classes(), "must be positive");
  if (m.num_train() < 0) return bad("num_train", m.num_train(), "must not be negative");
  if (m.num_valid() < 0) return bad("num_valid", m.num_valid(), "must not be negative");
  if (m.num_test() < 0) return bad("num_test", m.num_test(), "must not be negative");
  // Every size computed from the counts must fit in 64 bits: one that wrapped could pass for a tiny file.
  constexpr int64_t kMaxCount = int64_t{1} << 48;
  const std::pair<absl::string_view, int64_t> counts[] = {
      {"num_nodes", m.num_nodes()}, {"num_edges", m.num_edges()}, {"feature_dim", m.feature_dim()}};
  for (const auto& [field, value] : counts) {
    if (value > kMaxCount) return bad(field, value, absl::StrCat("is too large (at most ", kMaxCount, ")"));
  }
  for (ArrayId id : kSplits) {
    const int64_t count = ArrayShape(m, id)[0];
    if (count > m.num_nodes()) {
      return bad(absl::StrCat("num_", ArrayName(id)), count, absl::StrCat("exceeds num_nodes = ", m.num_nodes()));
    }
  }
  int64_t feature_bytes = 0;
  if (__builtin_mul_overflow(m.num_nodes(), m.feature_dim(), &feature_bytes) ||
      __builtin_mul_overflow(feature_bytes, static_cast<int64_t>(DTypeSize(ArrayDType(m, ArrayId::kFeatures))),
                             &feature_bytes) ||
      feature_bytes > kMaxNpyDataBytes) {
    return bad("feature_dim", m.feature_dim(),
               absl::StrCat("makes the features (num_nodes = ", m.num_nodes(), " rows) larger than ", kMaxNpyDataBytes,
                            " bytes"));
  }
  return absl::OkStatus();
}

absl::Status ValidateArrays(const v1::DatasetManifest& m, const DatasetArrays& arrays, int threads) {
  const int64_t n = m.num_nodes();
  const int64_t* indptr = arrays.indptr();
  if (indptr[0] != 0) {
    return absl::InvalidArgumentError(absl::StrCat("indptr.npy: indptr[0] = ", indptr[0], " (must be 0)"));
  }
  GNND_RETURN_IF_ERROR(FirstError(n, threads, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      if (indptr[v + 1] < indptr[v]) {
        return absl::InvalidArgumentError(
            absl::StrFormat("indptr.npy: indptr[%d] = %d is less than indptr[%d] = %d (must never decrease)", v + 1,
                            indptr[v + 1], v, indptr[v]));
      }
    }
    return absl::OkStatus();
  }));
  if (indptr[n] != m.num_edges()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "indptr.npy: indptr[%d] = %d but the manifest says num_edges = %d", n, indptr[n], m.num_edges()));
  }
  if (m.index_dtype() == v1::INDEX_DTYPE_INT32) {
    GNND_RETURN_IF_ERROR(
        CheckIndices(static_cast<const int32_t*>(arrays[ArrayId::kIndices]), m.num_edges(), n, threads));
  } else {
    GNND_RETURN_IF_ERROR(
        CheckIndices(static_cast<const int64_t*>(arrays[ArrayId::kIndices]), m.num_edges(), n, threads));
  }
  const int64_t* labels = arrays.labels();
  GNND_RETURN_IF_ERROR(FirstError(n, threads, [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      if (labels[v] < -1 || labels[v] >= m.num_classes()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "labels.npy: labels[%d] = %d is neither -1 nor a class in [0, %d)", v, labels[v], m.num_classes()));
      }
    }
    return absl::OkStatus();
  }));
  const std::pair<ArrayId, int64_t> splits[] = {
      {ArrayId::kTrain, m.num_train()}, {ArrayId::kValid, m.num_valid()}, {ArrayId::kTest, m.num_test()}};
  for (auto [id, count] : splits) {
    std::span<const int64_t> ids(static_cast<const int64_t*>(arrays[id]), static_cast<size_t>(count));
    GNND_RETURN_IF_ERROR(CheckSplit(ArrayName(id), ids, labels, n, threads));
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
  GNND_RETURN_IF_ERROR(CheckManifest(d.manifest_));
  for (ArrayId id : kAllArrays) {
    const std::string file = absl::StrCat(ArrayName(id), ".npy");
    absl::StatusOr<NpyFile> npy = NpyFile::OpenIn(dir_fd.get(), dir, file);
    if (!npy.ok()) {
      if (absl::IsNotFound(npy.status())) return absl::NotFoundError(absl::StrCat(file, ": missing from ", dir));
      return npy.status();
    }
    const DType want_dtype = ArrayDType(d.manifest_, id);
    if (npy->header().dtype != want_dtype) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": dtype is ", NpyDescr(npy->header().dtype),
                                                     " but the manifest implies ", NpyDescr(want_dtype)));
    }
    const std::vector<int64_t> want_shape = ArrayShape(d.manifest_, id);
    if (npy->header().shape != want_shape) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": shape is (", absl::StrJoin(npy->header().shape, ", "),
                                                     ") but the manifest implies (", absl::StrJoin(want_shape, ", "),
                                                     ")"));
    }
    d.files_.push_back(std::move(*npy));
  }
  return d;
}

DatasetArrays DatasetDir::arrays() const {
  DatasetArrays a;
  for (ArrayId id : kAllArrays) a.data[static_cast<int>(id)] = file(id).data();
  return a;
}

std::string DatasetDir::Summary() const { return DescribeDataset(manifest_, arrays()); }

std::string DescribeDataset(const v1::DatasetManifest& m, const DatasetArrays& arrays) {
  const int64_t* indptr = arrays.indptr();
  int64_t max_degree = 0, isolated = 0;
  for (int64_t v = 0; v < m.num_nodes(); ++v) {
    const int64_t degree = indptr[v + 1] - indptr[v];
    max_degree = std::max(max_degree, degree);
    isolated += degree == 0;
  }
  size_t total = 0;
  for (ArrayId id : kAllArrays) total += ArrayBytes(m, id);
  return absl::StrFormat(
      "%d nodes, %d edges (in-degree mean %.2f, max %d, %d without in-edges), %s indices; "
      "features %d x %s (%.1f MiB); %d classes; splits train %d / valid %d / test %d; %.1f MiB in all%s",
      m.num_nodes(), m.num_edges(), static_cast<double>(m.num_edges()) / m.num_nodes(), max_degree, isolated,
      m.index_dtype() == v1::INDEX_DTYPE_INT32 ? "int32" : "int64", m.feature_dim(),
      FeatureDTypeName(m.feature_dtype()), ArrayBytes(m, ArrayId::kFeatures) / 1048576.0, m.num_classes(),
      m.num_train(), m.num_valid(), m.num_test(), total / 1048576.0,
      m.source().empty() ? "" : absl::StrCat("; source: ", m.source()));
}

}  // namespace gnnd
