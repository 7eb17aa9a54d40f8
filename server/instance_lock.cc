#include "server/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"

namespace gnnd {

absl::StatusOr<std::unique_ptr<InstanceLock>> InstanceLock::Acquire(const std::string& instance) {
  GNND_RETURN_IF_ERROR(CheckInstanceName(instance, "instance"));
  std::string path = absl::StrCat("/dev/shm/", InstancePrefix(instance), ".lock");
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  auto lock = std::unique_ptr<InstanceLock>(new InstanceLock(fd, path));  // closes fd on every return below
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", path));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": owned by uid ", st.st_uid, ", not by uid ", ::geteuid(),
                                                    " (or not a file); remove it to run instance '", instance, "'"));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return ErrnoStatus(errno, absl::StrCat("lock ", path));
    char text[32] = {};
    const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
    int pid = 0;
    const bool known = n > 0 && absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(text, n)), &pid);
    return absl::FailedPreconditionError(absl::StrCat(
        "gnnd instance '", instance, "' is already running on this host", known ? absl::StrCat(" (pid ", pid, ")") : "",
        ": give this one another instance name (config ", "`instance`, --instance, or another socket)"));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return ErrnoStatus(errno, absl::StrCat("write ", path));
  }
  return lock;
}

InstanceLock::~InstanceLock() { ::close(fd_); }

}  // namespace gnnd
