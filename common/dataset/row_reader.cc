#include "common/dataset/row_reader.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/status.h"

namespace gnnd {

struct RowReader::Ring {
  io_uring ring;
};

namespace {

uint64_t RoundUp(uint64_t value, uint64_t to) { return (value + to - 1) / to * to; }

// Whether a page-aligned O_DIRECT read of `fd` works (some file systems open O_DIRECT and refuse the read).
bool DirectReadWorks(int fd) {
  void* page = nullptr;
  if (::posix_memalign(&page, RowReader::kPageBytes, RowReader::kPageBytes) != 0) return false;
  const bool ok = ::pread(fd, page, RowReader::kPageBytes, 0) >= 0;
  std::free(page);
  return ok;
}

// A requested row: where it starts in the file and where it goes in the output.
struct Piece {
  uint64_t start;
  size_t out;
};

// One read: the pages [offset, offset + bytes) holding pieces [first, last), whose data ends `needed`
// bytes after `offset` (the last page may run past the end of the file).
struct Extent {
  uint64_t offset, bytes, needed;
  size_t first, last;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RowReader>> RowReader::Open(const RowTable& table, const Options& options) {
  if (options.queue_depth < 1 || options.queue_depth > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("queue_depth = ", options.queue_depth, " (must be 1 to 4096)"));
  }
  if (table.row_bytes == 0 || table.num_rows < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(table.path, ": rows of ", table.row_bytes, " bytes, ", table.num_rows, " of them"));
  }
  const int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW;
  int fd = options.direct ? ::open(table.path.c_str(), flags | O_DIRECT) : -1;
  if (options.direct && fd < 0 && errno != EINVAL) return ErrnoStatus(errno, absl::StrCat("open ", table.path));
  const bool direct = fd >= 0 && DirectReadWorks(fd);
  if (options.direct && !direct) {
    LogWarning("%s: O_DIRECT refused by its file system; reading its rows through the page cache", table.path);
  }
  if (!direct) {
    if (fd >= 0) ::close(fd);
    fd = ::open(table.path.c_str(), flags);
  }
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", table.path));
  auto reader = std::unique_ptr<RowReader>(new RowReader(table, fd, direct, options.queue_depth));
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", table.path));
  const uint64_t end = table.data_offset + table.row_bytes * static_cast<uint64_t>(table.num_rows);
  if (!S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < end) {
    return absl::InvalidArgumentError(absl::StrCat(table.path, ": ", st.st_size, " bytes, the table of ",
                                                   table.num_rows, " rows needs ", end, " (or not a file)"));
  }
  // The ring is the reader's only once initialized: its destructor exits an initialized ring alone (exiting
  // a zeroed one would close descriptor 0, someone else's by then).
  auto ring = std::make_unique<Ring>();
  if (const int err = io_uring_queue_init(options.queue_depth, &ring->ring, 0); err < 0) {
    return ErrnoStatus(-err, "io_uring_queue_init");
  }
  reader->ring_ = std::move(ring);
  void* staging = nullptr;
  if (::posix_memalign(&staging, kPageBytes, reader->max_read_bytes_ * options.queue_depth) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("staging buffers of ", reader->max_read_bytes_ * options.queue_depth, " bytes"));
  }
  reader->staging_ = static_cast<std::byte*>(staging);
  return reader;
}

RowReader::RowReader(RowTable table, int fd, bool direct, unsigned queue_depth)
    : table_(std::move(table)),
      fd_(fd),
      direct_(direct),
      queue_depth_(queue_depth),
      max_read_bytes_(std::max(kMaxReadBytes, RoundUp(table_.row_bytes, kPageBytes) + kPageBytes)) {}

RowReader::~RowReader() {
  if (ring_) io_uring_queue_exit(&ring_->ring);
  std::free(staging_);
  ::close(fd_);
}

absl::Status RowReader::Read(std::span<const int64_t> ids, void* out) {
  std::vector<std::byte*> rows(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) rows[i] = static_cast<std::byte*>(out) + i * table_.row_bytes;
  return Read(ids, rows);
}

absl::Status RowReader::Read(std::span<const int64_t> ids, std::span<std::byte* const> rows) {
  const uint64_t row_bytes = table_.row_bytes;
  std::vector<Piece> pieces(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= table_.num_rows) {
      return absl::InvalidArgumentError(
          absl::StrCat(table_.path, ": row ", ids[i], " requested, the table has ", table_.num_rows));
    }
    pieces[i] = {table_.data_offset + static_cast<uint64_t>(ids[i]) * row_bytes, i};
  }
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.start < b.start; });
  // Pages in file order, each once: a row joins the current read if its pages touch or overlap it and the
  // read stays within max_read_bytes_, else it starts the next read (which holds it whole).
  std::vector<Extent> extents;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const uint64_t first = pieces[i].start / kPageBytes * kPageBytes, end = pieces[i].start + row_bytes;
    const uint64_t last = RoundUp(end, kPageBytes);
    if (!extents.empty()) {
      Extent& e = extents.back();
      if (first <= e.offset + e.bytes && std::max(last, e.offset + e.bytes) - e.offset <= max_read_bytes_) {
        e.bytes = std::max(last, e.offset + e.bytes) - e.offset;
        e.needed = std::max(e.needed, end - e.offset);
        e.last = i + 1;
        continue;
      }
    }
    extents.push_back({first, last - first, end - first, i, i + 1});
  }

  struct Slot {
    size_t extent;
    uint64_t done;
  };
  std::vector<Slot> slots(queue_depth_);
  std::vector<unsigned> free_slots;
  for (unsigned s = queue_depth_; s > 0; --s) free_slots.push_back(s - 1);
  auto submit = [&](unsigned s) {
    const Extent& e = extents[slots[s].extent];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);  // never null: at most queue_depth_ in flight
    io_uring_prep_read(sqe, fd_, staging_ + s * max_read_bytes_ + slots[s].done,
                       static_cast<unsigned>(e.bytes - slots[s].done), e.offset + slots[s].done);
    io_uring_sqe_set_data64(sqe, s);
    ++stats_.reads;
  };
  size_t next = 0;
  unsigned in_flight = 0;
  absl::Status failed;
  while ((failed.ok() && next < extents.size()) || in_flight > 0) {
    while (failed.ok() && in_flight < queue_depth_ && next < extents.size()) {
      const unsigned s = free_slots.back();
      free_slots.pop_back();
      slots[s] = {next++, 0};
      submit(s);
      ++in_flight;
    }
    if (const int err = io_uring_submit(&ring_->ring); err < 0 && failed.ok()) {
      failed = ErrnoStatus(-err, absl::StrCat("io_uring_submit for ", table_.path));
    }
    io_uring_cqe* cqe = nullptr;
    if (const int err = io_uring_wait_cqe(&ring_->ring, &cqe); err < 0) {
      if (err == -EINTR) continue;
      return ErrnoStatus(-err, absl::StrCat("io_uring_wait_cqe for ", table_.path));  // the ring is unusable
    }
    const unsigned s = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_->ring, cqe);
    Slot& slot = slots[s];
    const Extent& e = extents[slot.extent];
    if (res > 0) {
      slot.done += static_cast<uint64_t>(res);
      stats_.bytes_read += static_cast<uint64_t>(res);
    }
    if (res > 0 && slot.done < e.needed && failed.ok()) {
      submit(s);  // a short read with more to come: the rest
      (void)io_uring_submit(&ring_->ring);
      continue;
    }
    --in_flight;
    free_slots.push_back(s);
    if (!failed.ok()) continue;  // draining what is in flight
    // The first row of the read that it did not deliver whole, for the error messages.
    size_t cut = e.first;
    while (cut + 1 < e.last && pieces[cut].start + row_bytes <= e.offset + slot.done) ++cut;
    const int64_t row = static_cast<int64_t>((pieces[cut].start - table_.data_offset) / row_bytes);
    if (res < 0) {
      failed =
          ErrnoStatus(-res, absl::StrCat("read ", table_.path, " at byte ", e.offset + slot.done, " (row ", row, ")"));
    } else if (slot.done < e.needed) {
      failed = absl::DataLossError(absl::StrCat(table_.path, ": ends at byte ", e.offset + slot.done, ", before row ",
                                                row, " of ", table_.num_rows, " (truncated or replaced?)"));
    } else {
      const std::byte* data = staging_ + s * max_read_bytes_;
      for (size_t k = e.first; k < e.last; ++k) {
        std::memcpy(rows[pieces[k].out], data + (pieces[k].start - e.offset), row_bytes);
      }
      stats_.rows += e.last - e.first;
    }
  }
  return failed;
}

}  // namespace gnnd
