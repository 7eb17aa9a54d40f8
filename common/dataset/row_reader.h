// Rows of a table on storage (a feature .npy file that stays on disk because it outgrows memory), read by
// io_uring: the pages the requested rows cover, each read once however many rows share it, adjacent
// pages merged into one read (up to kMaxReadBytes), up to queue_depth reads in flight. O_DIRECT by
// default, into page-aligned staging buffers, so rows are not held twice (once by the reader's cache, once
// by the page cache); where O_DIRECT is refused (tmpfs, some overlay file systems) the same reads go
// through the page cache and direct() says so. One reader per thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace gnnd {

// Where a table's rows lie in its file: row i at data_offset + i * row_bytes.
struct RowTable {
  std::string path;
  uint64_t data_offset = 0;
  uint64_t row_bytes = 0;
  int64_t num_rows = 0;
};

class RowReader {
 public:
  static constexpr uint64_t kPageBytes = 4096;
  static constexpr uint64_t kMaxReadBytes = 128 * 1024;

  struct Options {
    unsigned queue_depth = 64;  // reads in flight, 1 to 4096
    bool direct = true;         // O_DIRECT where the file system takes it
  };
  struct Stats {
    uint64_t rows = 0;        // rows delivered
    uint64_t reads = 0;       // reads submitted
    uint64_t bytes_read = 0;  // bytes those reads returned
  };

  // Opens the file read-only (a regular file) and checks that it holds the table: INVALID_ARGUMENT naming
  // the path otherwise.
  static absl::StatusOr<std::unique_ptr<RowReader>> Open(const RowTable& table, const Options& options);
  ~RowReader();
  RowReader(const RowReader&) = delete;
  RowReader& operator=(const RowReader&) = delete;

  // Reads rows `ids` (any order, repeats allowed) into `out`, the i-th at out + i * row_bytes.
  // INVALID_ARGUMENT naming an id that is not a row; DATA_LOSS naming the file and a row that a read left
  // short (the file was truncated or replaced); the error of a failed read, with the file and the row.
  // On error `out` is partly written.
  absl::Status Read(std::span<const int64_t> ids, void* out);
  // The same, row ids[i] to rows[i] (rows.size() == ids.size()).
  absl::Status Read(std::span<const int64_t> ids, std::span<std::byte* const> rows);

  bool direct() const { return direct_; }
  const Stats& stats() const { return stats_; }
  const RowTable& table() const { return table_; }

 private:
  struct Ring;
  RowReader(RowTable table, int fd, bool direct, unsigned queue_depth);

  RowTable table_;
  int fd_;
  bool direct_;
  unsigned queue_depth_;
  uint64_t max_read_bytes_;  // kMaxReadBytes, or enough pages for one row
  std::unique_ptr<Ring> ring_;
  std::byte* staging_ = nullptr;  // queue_depth_ buffers of max_read_bytes_, page-aligned
  Stats stats_;
};

}  // namespace gnnd
