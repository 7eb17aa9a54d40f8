#include "tools/dataset/partition.h"

#include <metis.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/philox.h"
#include "common/base/status.h"
#include "common/dataset/dataset.h"
#include "common/dataset/manifest.h"
#include "common/dataset/npy.h"

namespace gnnd::dataset {
namespace {

namespace fs = std::filesystem;

// A featured type's owner map: each node's part and its row there, and each part's rows.
struct OwnerMap {
  std::vector<int32_t> owner;
  std::vector<int64_t> row;
  std::vector<int64_t> part_rows;
};

// `type`'s owner map from every node's part (by global id).
OwnerMap MapOwners(const PartitionSpec& spec, const NodeTypeSchema& type, const std::vector<uint32_t>& parts) {
  OwnerMap map;
  map.owner.resize(static_cast<size_t>(type.num_nodes));
  map.row.resize(static_cast<size_t>(type.num_nodes));
  map.part_rows.assign(spec.parts, 0);
  for (int64_t v = 0; v < type.num_nodes; ++v) {  // rows in id order within each part
    const uint32_t p = parts[type.offset + v];
    map.owner[v] = static_cast<int32_t>(p);
    map.row[v] = map.part_rows[p]++;
  }
  return map;
}

// Calls f(u, v) for every edge of every relation, both ends global ids.
template <typename F>
void ForEachEdge(const DatasetDir& in, F&& f) {
  const DatasetSchema& schema = in.schema();
  for (const RelationSchema& r : schema.relations) {
    const auto* indptr = static_cast<const int64_t*>(in.file(r.indptr).data());
    const void* indices = in.file(r.indices).data();
    const int64_t src_offset = schema.node_types[r.src_type].offset, dst_offset = schema.node_types[r.dst_type].offset;
    for (int64_t v = 0; v < schema.node_types[r.dst_type].num_nodes; ++v) {
      for (int64_t p = indptr[v]; p < indptr[v + 1]; ++p) {
        const int64_t u = r.index_dtype == DType::kInt32 ? static_cast<const int32_t*>(indices)[p]
                                                         : static_cast<const int64_t*>(indices)[p];
        f(src_offset + u, dst_offset + v);
      }
    }
  }
}

// METIS's k-way partition of the graph every relation makes, undirected, over the global id space (edges cut
// between parts are neighborhoods split: rows a batch fetches from elsewhere). Debian's METIS indexes in 32 bits.
absl::StatusOr<std::vector<uint32_t>> MetisParts(const PartitionSpec& spec, const DatasetDir& in) {
  const int64_t n = in.schema().num_nodes;
  if (spec.parts == 1) return std::vector<uint32_t>(static_cast<size_t>(n), 0);
  std::vector<int64_t> first(static_cast<size_t>(n) + 1, 0);  // each node's neighbors' start, both directions
  ForEachEdge(in, [&](int64_t u, int64_t v) {
    if (u != v) ++first[u + 1], ++first[v + 1];
  });
  for (int64_t v = 0; v < n; ++v) first[v + 1] += first[v];
  constexpr int64_t kMetisMax = std::numeric_limits<idx_t>::max();
  if (n > kMetisMax || first[n] > kMetisMax) {
    return absl::InvalidArgumentError(absl::StrCat("--method metis: ", n, " nodes and ", first[n],
                                                   " adjacency entries, beyond Debian METIS's 32-bit indices (",
                                                   kMetisMax, "): use random or range"));
  }
  std::vector<idx_t> adjacency(static_cast<size_t>(first[n]));
  std::vector<int64_t> filled(first.begin(), first.end() - 1);
  ForEachEdge(in, [&](int64_t u, int64_t v) {
    if (u == v) return;
    adjacency[filled[u]++] = static_cast<idx_t>(v);
    adjacency[filled[v]++] = static_cast<idx_t>(u);
  });
  std::vector<idx_t> xadj(static_cast<size_t>(n) + 1, 0);  // each list sorted and without repeats
  idx_t kept = 0;
  for (int64_t v = 0; v < n; ++v) {
    auto begin = adjacency.begin() + first[v], end = adjacency.begin() + first[v + 1];
    std::sort(begin, end);
    const auto last = std::unique(begin, end);
    for (auto it = begin; it != last; ++it) adjacency[kept++] = *it;  // compacted in place: kept never passes it
    xadj[v + 1] = kept;
  }
  idx_t vertices = static_cast<idx_t>(n), constraints = 1, parts = static_cast<idx_t>(spec.parts), cut = 0;
  idx_t options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(options);
  options[METIS_OPTION_SEED] = static_cast<idx_t>(spec.seed & 0x7fffffff);  // reproducible
  std::vector<idx_t> part(static_cast<size_t>(n));
  const int status = METIS_PartGraphKway(&vertices, &constraints, xadj.data(), adjacency.data(), nullptr, nullptr,
                                         nullptr, &parts, nullptr, nullptr, options, &cut, part.data());
  if (status != METIS_OK) return absl::InternalError(absl::StrCat("METIS_PartGraphKway failed (", status, ")"));
  return std::vector<uint32_t>(part.begin(), part.end());
}

// Every node's part (by global id) under `spec`.
absl::StatusOr<std::vector<uint32_t>> AssignParts(const PartitionSpec& spec, const DatasetDir& in) {
  if (spec.method == "metis") return MetisParts(spec, in);
  std::vector<uint32_t> parts(static_cast<size_t>(in.schema().num_nodes));
  for (const NodeTypeSchema& type : in.schema().node_types) {
    for (int64_t v = 0; v < type.num_nodes; ++v)
      parts[type.offset + v] = OwnerOf(spec, v, type.num_nodes, type.offset + v);
  }
  return parts;
}

// 128 random bits as hex: one partition run's dataset id.
std::string NewDatasetId() {
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) absl::StrAppendFormat(&id, "%08x", random());
  return id;
}

// `from` as `to`: a hard link where the file system allows, else a copy.
absl::Status LinkOrCopy(const fs::path& from, const fs::path& to) {
  std::error_code error;
  fs::create_hard_link(from, to, error);
  if (!error) return absl::OkStatus();
  fs::copy_file(from, to, error);
  if (error)
    return absl::InternalError(absl::StrCat("copy ", from.string(), " to ", to.string(), ": ", error.message()));
  return absl::OkStatus();
}

template <typename T>
absl::Status WriteColumn(const fs::path& path, DType dtype, const std::vector<T>& values) {
  GNND_ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::CreateAppendable(path.string(), dtype, {}));
  GNND_RETURN_IF_ERROR(writer.Append(values.data(), static_cast<int64_t>(values.size())));
  return writer.Finish();
}

// Part `part`'s feature rows of `type`: the rows of the nodes it owns, in id order.
absl::Status WriteOwnedRows(const DatasetDir& in, const NodeTypeSchema& type, const OwnerMap& map, uint32_t part,
                            const fs::path& path) {
  const ArraySchema& array = in.schema().arrays[type.features];
  GNND_ASSIGN_OR_RETURN(NpyWriter writer, NpyWriter::CreateAppendable(path.string(), array.dtype, {type.feature_dim}));
  const auto* rows = static_cast<const std::byte*>(in.file(type.features).data());
  const size_t row_bytes = type.feature_row_bytes();
  for (int64_t v = 0; v < type.num_nodes; ++v) {
    if (map.owner[v] == static_cast<int32_t>(part)) GNND_RETURN_IF_ERROR(writer.Append(rows + v * row_bytes, 1));
  }
  return writer.Finish();
}

}  // namespace

uint32_t OwnerOf(const PartitionSpec& spec, int64_t id, int64_t num_nodes, int64_t global) {
  if (spec.method == "range") return static_cast<uint32_t>(id * spec.parts / num_nodes);
  return static_cast<uint32_t>(Below64(Mix64(Mix64(spec.seed) ^ static_cast<uint64_t>(global)), spec.parts));
}

absl::StatusOr<std::string> PartitionDataset(const std::string& dataset_dir, const std::string& out_dir,
                                             const PartitionSpec& spec) {
  if (spec.parts < 1 || spec.parts > kMaxParts) {
    return absl::InvalidArgumentError(absl::StrCat("--parts ", spec.parts, " (must be 1 to ", kMaxParts, ")"));
  }
  if (spec.method != "random" && spec.method != "range" && spec.method != "metis") {
    return absl::InvalidArgumentError(absl::StrCat("--method ", spec.method, " (random, range or metis)"));
  }
  GNND_ASSIGN_OR_RETURN(const DatasetDir in, DatasetDir::Open(dataset_dir));
  const DatasetSchema& schema = in.schema();
  if (schema.partitioned()) {
    return absl::InvalidArgumentError(absl::StrCat(dataset_dir, " is part ", schema.partition.part, " of ",
                                                   schema.partition.num_parts,
                                                   " already: partition the whole dataset"));
  }
  std::error_code error;
  if (fs::exists(fs::symlink_status(out_dir, error))) {
    return absl::AlreadyExistsError(absl::StrCat(out_dir, ": exists (gnnctl partition writes a new directory)"));
  }
  // Written beside OUT under a temporary name, renamed into place once every part is valid.
  const fs::path out = fs::absolute(out_dir);
  const fs::path staging = out.parent_path() / absl::StrCat(".", out.filename().string(), ".partition-", ::getpid());
  fs::remove_all(staging, error);
  fs::create_directories(staging, error);
  if (error) return absl::InternalError(absl::StrCat("create ", staging.string(), ": ", error.message()));
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ignored;
      if (!path.empty()) fs::remove_all(path, ignored);
    }
  } cleanup{staging};

  GNND_ASSIGN_OR_RETURN(const std::vector<uint32_t> parts, AssignParts(spec, in));
  std::vector<OwnerMap> maps(schema.node_types.size());
  std::set<std::string> replaced = {kManifestFile};  // the files each part writes anew
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const NodeTypeSchema& type = schema.node_types[t];
    if (type.features < 0) continue;
    maps[t] = MapOwners(spec, type, parts);
    replaced.insert(schema.arrays[type.features].file());
  }
  v1::DatasetManifest manifest = in.manifest();
  v1::Partition& partition = *manifest.mutable_partition();
  partition.set_dataset_id(NewDatasetId());
  partition.set_num_parts(spec.parts);
  partition.set_method(spec.method);
  partition.set_seed(spec.method == "range" ? 0 : spec.seed);
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    if (schema.node_types[t].features < 0) continue;
    auto* part_rows = schema.format_version == 1
                          ? manifest.mutable_part_rows()
                          : manifest.mutable_node_types(static_cast<int>(t))->mutable_part_rows();
    part_rows->Assign(maps[t].part_rows.begin(), maps[t].part_rows.end());
  }
  std::string summary;
  for (uint32_t part = 0; part < spec.parts; ++part) {
    const fs::path dir = staging / absl::StrCat("part-", part);
    fs::create_directories(dir, error);
    if (error) return absl::InternalError(absl::StrCat("create ", dir.string(), ": ", error.message()));
    for (const fs::directory_entry& entry : fs::directory_iterator(dataset_dir)) {
      const std::string name = entry.path().filename().string();
      if (!entry.is_regular_file() || replaced.count(name) > 0) continue;
      GNND_RETURN_IF_ERROR(LinkOrCopy(entry.path(), dir / name));
    }
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      const NodeTypeSchema& type = schema.node_types[t];
      if (type.features < 0) continue;
      const std::string prefix = schema.format_version == 1 ? "" : type.name + ".";
      GNND_RETURN_IF_ERROR(WriteOwnedRows(in, type, maps[t], part, dir / schema.arrays[type.features].file()));
      if (part == 0) {  // the map once, then linked into every part
        GNND_RETURN_IF_ERROR(WriteColumn(dir / (prefix + "owner.npy"), DType::kInt32, maps[t].owner));
        GNND_RETURN_IF_ERROR(WriteColumn(dir / (prefix + "owner_row.npy"), DType::kInt64, maps[t].row));
      } else {
        for (const std::string& file : {prefix + "owner.npy", prefix + "owner_row.npy"}) {
          GNND_RETURN_IF_ERROR(LinkOrCopy(staging / "part-0" / file, dir / file));
        }
      }
    }
    partition.set_part(part);
    GNND_RETURN_IF_ERROR(WriteManifest(dir.string(), manifest));
    GNND_ASSIGN_OR_RETURN(const DatasetDir written, DatasetDir::Open(dir.string()));
    GNND_RETURN_IF_ERROR(written.Validate(spec.threads));
    std::string rows;
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      if (schema.node_types[t].features < 0) continue;
      absl::StrAppend(&rows, rows.empty() ? "" : ", ", maps[t].part_rows[part], " ",
                      schema.format_version == 1 ? "" : schema.node_types[t].name + " ", "rows");
    }
    absl::StrAppend(&summary, (out / absl::StrCat("part-", part)).string(), ": part ", part, " of ", spec.parts, " (",
                    spec.method, ", dataset id ", partition.dataset_id(), "): ", rows.empty() ? "no features" : rows,
                    "\n");
  }
  fs::rename(staging, out, error);
  if (error)
    return absl::InternalError(absl::StrCat("rename ", staging.string(), " to ", out.string(), ": ", error.message()));
  cleanup.path.clear();
  return summary;
}

}  // namespace gnnd::dataset
