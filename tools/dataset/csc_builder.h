// Turns a stream of edges u -> v into CSC (indptr.npy, indices.npy: for each v, its in-neighbors u),
// with memory bounded by the node count, not the edge count: edges are spooled to a temporary file,
// counted, then scattered into the memory-mapped indices file (page cache, not heap), and every
// neighbor list is sorted by source id so the result does not depend on the input's edge order (parallel
// edges by their input position). With edge ids, each edge's position in the input comes along in
// PREFIXe_id.npy: an undirected copy has its edge's, a deduplicated edge its first occurrence's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gnnd::dataset {

struct CscOptions {
  bool undirected = false;  // also add v -> u for every u -> v
  bool dedup = false;       // drop parallel edges and self-loops
  int threads = 1;
  bool edge_ids = false;  // also write PREFIXe_id.npy: each CSC edge's position among the spooled edges
};

class EdgeSpool {
 public:
  // Spools edges over node ids [0, num_nodes) into `path` (int32 pairs when ids fit, else int64).
  static absl::StatusOr<EdgeSpool> Create(const std::string& path, int64_t num_nodes);
  // A typed relation's edges: sources in [0, num_src) of one type, destinations in [0, num_dst) of another
  // (or the same, `same_type`: then dedup also drops self-loops and undirected is allowed).
  static absl::StatusOr<EdgeSpool> CreateTyped(const std::string& path, int64_t num_src, int64_t num_dst,
                                               bool same_type);
  EdgeSpool(EdgeSpool&&) noexcept;
  EdgeSpool& operator=(EdgeSpool&&) = delete;
  ~EdgeSpool();

  // Adds u -> v; an id outside [0, num_nodes) is an error naming `where` (file and line, or position).
  absl::Status Add(int64_t src, int64_t dst, absl::string_view where) {
    if (src < 0 || src >= num_src_ || dst < 0 || dst >= num_dst_) return OutOfRange(src, dst, where);
    if (wide_) {
      const int64_t pair[2] = {src, dst};
      Append(pair, sizeof(pair));
    } else {
      const int32_t pair[2] = {static_cast<int32_t>(src), static_cast<int32_t>(dst)};
      Append(pair, sizeof(pair));
    }
    ++count_;
    return buffer_.size() >= kFlushBytes ? Flush() : absl::OkStatus();
  }
  absl::Status Flush();
  int64_t count() const { return count_; }
  int64_t num_src() const { return num_src_; }
  int64_t num_dst() const { return num_dst_; }

  // Builds PREFIXindptr.npy (num_dst + 1) and PREFIXindices.npy (int32 when num_src < 2^31) in `dir` from
  // the spooled edges (and PREFIXe_id.npy, options.edge_ids); returns the edge count written.
  absl::StatusOr<int64_t> BuildCsc(const std::string& dir, const CscOptions& options, const std::string& prefix = "");

 private:
  static constexpr size_t kFlushBytes = 8 << 20;
  EdgeSpool() = default;
  void Append(const void* data, size_t bytes) {
    const char* p = static_cast<const char*>(data);
    buffer_.insert(buffer_.end(), p, p + bytes);
  }
  absl::Status OutOfRange(int64_t src, int64_t dst, absl::string_view where) const;
  // Calls fn(src, dst) for every spooled edge, reading the spool in blocks.
  template <typename Fn>
  absl::Status ForEach(Fn fn);

  std::string path_;
  int fd_ = -1;
  int64_t num_src_ = 0, num_dst_ = 0;
  bool same_type_ = true;
  bool wide_ = false;
  int64_t count_ = 0;
  std::vector<char> buffer_;
};

}  // namespace gnnd::dataset
