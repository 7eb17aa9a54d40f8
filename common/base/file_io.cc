#include "common/base/file_io.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/base/status.h"

namespace gnnd {
namespace {

constexpr int kReadFlags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Keeps `fd` if it is a regular file.
absl::StatusOr<FileDescriptor> RegularOnly(int fd, absl::string_view what) {
  FileDescriptor file(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", what));
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": is ", FileKind(st.st_mode), ", not a regular file"));
  }
  return file;
}

}  // namespace

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<FileDescriptor> OpenRegularFile(const std::string& path, absl::string_view what) {
  if (path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the path contains a NUL byte"));
  }
  const int fd = ::open(path.c_str(), kReadFlags);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", what));
  return RegularOnly(fd, what);
}

absl::StatusOr<FileDescriptor> OpenRegularFileIn(int dir_fd, const std::string& name, absl::string_view what) {
  open_how how{};
  how.flags = kReadFlags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, dir_fd, name.c_str(), &how, sizeof(how)));
  if (fd < 0 && errno == ENOSYS) fd = ::openat(dir_fd, name.c_str(), kReadFlags | O_NOFOLLOW);
  if (fd < 0) {
    if (errno == EXDEV || errno == ELOOP) {
      return absl::PermissionDeniedError(
          absl::StrCat(what, ": a symbolic link out of the dataset directory (only links within it are followed)"));
    }
    return ErrnoStatus(errno, absl::StrCat("open ", what));
  }
  return RegularOnly(fd, what);
}

absl::StatusOr<std::string> ReadAll(int fd, size_t limit, absl::string_view what) {
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("read ", what));
    }
    if (n == 0) return text;
    if (text.size() + n > limit) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": larger than ", limit, " bytes"));
    }
    text.append(buffer, n);
  }
}

absl::Status WriteFully(int fd, const void* data, size_t size, absl::string_view path) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("write ", path));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status PreadFully(int fd, void* data, size_t size, off_t offset, absl::string_view path) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("read ", path));
    }
    if (n == 0) return absl::DataLossError(absl::StrCat(path, ": ends early (truncated?)"));
    p += n;
    size -= static_cast<size_t>(n);
    offset += n;
  }
  return absl::OkStatus();
}

}  // namespace gnnd
