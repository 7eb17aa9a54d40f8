// Opening files that come from outside (dataset directories, configs) safely, and whole-buffer file I/O
// that retries short transfers and EINTR, with errors naming the file.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gnnd {

// A file descriptor closed when it goes away.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  ~FileDescriptor();
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// Opens `path` read-only if it is a regular file. A FIFO, device, socket or directory is refused at once
// (opening never blocks), naming `what` and what the path is instead.
absl::StatusOr<FileDescriptor> OpenRegularFile(const std::string& path, absl::string_view what);
// The same for `name` inside the directory open as `dir_fd`: symbolic links may point within the
// directory but not out of it (openat2 RESOLVE_BENEATH; where the kernel lacks it, no link is followed).
absl::StatusOr<FileDescriptor> OpenRegularFileIn(int dir_fd, const std::string& name, absl::string_view what);
// Reads all of an open file, refusing more than `limit` bytes.
absl::StatusOr<std::string> ReadAll(int fd, size_t limit, absl::string_view what);

absl::Status WriteFully(int fd, const void* data, size_t size, absl::string_view path);
// Reads exactly `size` bytes at `offset`; a file that ends first is DATA_LOSS.
absl::Status PreadFully(int fd, void* data, size_t size, off_t offset, absl::string_view path);

}  // namespace gnnd
