#include "tools/dataset/csc_builder.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/dataset/npy.h"
#include "tools/dataset/progress.h"

namespace gnnd::dataset {

absl::StatusOr<EdgeSpool> EdgeSpool::Create(const std::string& path, int64_t num_nodes) {
  return CreateTyped(path, num_nodes, num_nodes, /*same_type=*/true);
}

absl::StatusOr<EdgeSpool> EdgeSpool::CreateTyped(const std::string& path, int64_t num_src, int64_t num_dst,
                                                 bool same_type) {
  EdgeSpool spool;
  spool.path_ = path;
  spool.num_src_ = num_src;
  spool.num_dst_ = num_dst;
  spool.same_type_ = same_type;
  spool.wide_ = std::max(num_src, num_dst) >= (int64_t{1} << 31);
  spool.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (spool.fd_ < 0) return ErrnoStatus(errno, absl::StrCat("create ", path));
  spool.buffer_.reserve(kFlushBytes + 16);
  return spool;
}

EdgeSpool::EdgeSpool(EdgeSpool&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      num_src_(other.num_src_),
      num_dst_(other.num_dst_),
      same_type_(other.same_type_),
      wide_(other.wide_),
      count_(other.count_),
      buffer_(std::move(other.buffer_)) {
  other.fd_ = -1;
}

EdgeSpool::~EdgeSpool() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(path_.c_str());
}

absl::Status EdgeSpool::OutOfRange(int64_t src, int64_t dst, absl::string_view where) const {
  const bool source = src < 0 || src >= num_src_;
  const int64_t bad = source ? src : dst, bound = source ? num_src_ : num_dst_;
  const absl::string_view what = same_type_ && num_src_ == num_dst_ ? "node id"
                                 : source                           ? "source id"
                                                                    : "destination id";
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", what, " ", bad, " is out of range [0, ", bound, ")"));
}

absl::Status EdgeSpool::Flush() {
  GNND_RETURN_IF_ERROR(WriteFully(fd_, buffer_.data(), buffer_.size(), path_));
  buffer_.clear();
  return absl::OkStatus();
}

template <typename Fn>
absl::Status EdgeSpool::ForEach(Fn fn) {
  const size_t pair_bytes = wide_ ? 16 : 8;
  std::vector<char> block((kFlushBytes / pair_bytes) * pair_bytes);
  off_t offset = 0;
  const off_t end = static_cast<off_t>(count_ * pair_bytes);
  while (offset < end) {
    const size_t want = std::min<size_t>(block.size(), end - offset);
    const ssize_t n = ::pread(fd_, block.data(), want, offset);
    if (n <= 0 || n % pair_bytes != 0) {
      return n < 0 ? ErrnoStatus(errno, absl::StrCat("read ", path_))
                   : absl::DataLossError(absl::StrCat(path_, ": short read"));
    }
    for (ssize_t i = 0; i < n; i += pair_bytes) {
      if (wide_) {
        int64_t pair[2];
        std::memcpy(pair, block.data() + i, 16);
        fn(pair[0], pair[1]);
      } else {
        int32_t pair[2];
        std::memcpy(pair, block.data() + i, 8);
        fn(pair[0], pair[1]);
      }
    }
    offset += n;
  }
  return absl::OkStatus();
}

namespace {

// Sorts every neighbor list by source (then by edge id, where ids come along: `ids` non-null, permuted with
// the sources); with dedup drops repeats, keeping the first (self-loops were never scattered), and packs the
// lists to the front, rewriting indptr. Returns the final edge count.
template <typename Index>
int64_t SortAndPack(Index* indices, int64_t* ids, std::vector<int64_t>& indptr, bool dedup, int threads) {
  const int64_t n = static_cast<int64_t>(indptr.size()) - 1;
  std::vector<int64_t> kept(dedup ? n : 0);
  ParallelFor(n, 1 << 14, threads, [&](int64_t begin, int64_t end) {
    std::vector<std::pair<Index, int64_t>> list;
    for (int64_t v = begin; v < end; ++v) {
      Index* first = indices + indptr[v];
      Index* last = indices + indptr[v + 1];
      if (ids == nullptr) {
        std::sort(first, last);
        if (dedup) kept[v] = std::unique(first, last) - first;
        continue;
      }
      int64_t* first_id = ids + indptr[v];
      list.clear();
      for (Index* p = first; p != last; ++p) list.emplace_back(*p, first_id[p - first]);
      std::sort(list.begin(), list.end());
      if (dedup) {
        list.erase(
            std::unique(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
            list.end());
        kept[v] = static_cast<int64_t>(list.size());
      }
      for (size_t i = 0; i < list.size(); ++i) first[i] = list[i].first, first_id[i] = list[i].second;
    }
  });
  if (!dedup) return indptr[n];
  int64_t out = 0;
  for (int64_t v = 0; v < n; ++v) {
    const int64_t start = indptr[v];
    if (out != start) {
      std::memmove(indices + out, indices + start, kept[v] * sizeof(Index));
      if (ids != nullptr) std::memmove(ids + out, ids + start, kept[v] * sizeof(int64_t));
    }
    indptr[v] = out;
    out += kept[v];
  }
  indptr[n] = out;
  return out;
}

}  // namespace

absl::StatusOr<int64_t> EdgeSpool::BuildCsc(const std::string& dir, const CscOptions& options,
                                            const std::string& prefix) {
  GNND_RETURN_IF_ERROR(Flush());
  if (options.undirected && !(same_type_ && num_src_ == num_dst_)) {
    return absl::InternalError("undirected edges between two node types (add a reverse relation instead)");
  }
  // u == v is a self-loop (dropped by dedup) only within one type.
  const bool drop_loops = options.dedup && same_type_;
  const int64_t n = num_dst_;
  // 1. In-degrees (indptr[v + 1] counts v's in-edges), then their prefix sum.
  std::vector<int64_t> indptr(n + 1, 0);
  {
    Progress progress("csc: counting", count_, "edges");
    int64_t seen = 0;
    GNND_RETURN_IF_ERROR(ForEach([&](int64_t u, int64_t v) {
      if (!(drop_loops && u == v)) {
        ++indptr[v + 1];
        if (options.undirected) ++indptr[u + 1];
      }
      if ((++seen & 0xfffff) == 0) progress.Set(seen);
    }));
    progress.Set(seen);
  }
  for (int64_t v = 0; v < n; ++v) indptr[v + 1] += indptr[v];
  const int64_t scattered = indptr[n];

  // 2. Scatter sources into the mapped indices file, at each destination's cursor.
  const bool narrow = num_src_ < (int64_t{1} << 31);
  GNND_ASSIGN_OR_RETURN(NpyWriter indices_file,
                        NpyWriter::CreateMapped(absl::StrCat(dir, "/", prefix, "indices.npy"),
                                                narrow ? DType::kInt32 : DType::kInt64, {scattered}));
  std::optional<NpyWriter> ids_file;
  int64_t* ids = nullptr;
  if (options.edge_ids) {
    GNND_ASSIGN_OR_RETURN(
        ids_file, NpyWriter::CreateMapped(absl::StrCat(dir, "/", prefix, "e_id.npy"), DType::kInt64, {scattered}));
    ids = ids_file->mutable_as<int64_t>();
  }
  int64_t edges;
  {
    std::vector<int64_t> cursor(indptr.begin(), indptr.end() - 1);
    Progress progress("csc: scattering", count_, "edges");
    int64_t seen = 0;
    auto scatter = [&](auto* indices) {
      return ForEach([&](int64_t u, int64_t v) {
        if (!(drop_loops && u == v)) {
          if (ids != nullptr) ids[cursor[v]] = seen;
          indices[cursor[v]++] = static_cast<std::remove_pointer_t<decltype(indices)>>(u);
          if (options.undirected) {
            if (ids != nullptr) ids[cursor[u]] = seen;
            indices[cursor[u]++] = static_cast<std::remove_pointer_t<decltype(indices)>>(v);
          }
        }
        if ((++seen & 0xfffff) == 0) progress.Set(seen);
      });
    };
    GNND_RETURN_IF_ERROR(narrow ? scatter(indices_file.mutable_as<int32_t>())
                                : scatter(indices_file.mutable_as<int64_t>()));
    progress.Set(seen);
  }
  // 3. Sort each list (and drop repeats), then write both files.
  edges = narrow ? SortAndPack(indices_file.mutable_as<int32_t>(), ids, indptr, options.dedup, options.threads)
                 : SortAndPack(indices_file.mutable_as<int64_t>(), ids, indptr, options.dedup, options.threads);
  GNND_RETURN_IF_ERROR(indices_file.Truncate(edges));
  GNND_RETURN_IF_ERROR(indices_file.Finish());
  if (ids_file) {
    GNND_RETURN_IF_ERROR(ids_file->Truncate(edges));
    GNND_RETURN_IF_ERROR(ids_file->Finish());
  }
  GNND_ASSIGN_OR_RETURN(NpyWriter indptr_file,
                        NpyWriter::CreateAppendable(absl::StrCat(dir, "/", prefix, "indptr.npy"), DType::kInt64, {}));
  GNND_RETURN_IF_ERROR(indptr_file.Append(indptr.data(), n + 1));
  GNND_RETURN_IF_ERROR(indptr_file.Finish());
  return edges;
}

}  // namespace gnnd::dataset
