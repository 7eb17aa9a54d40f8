#include "server/instance_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"

namespace gnnd {
namespace {

// OK if `dir` is a directory (not a link) of this user that no one else may write; made 0700 if absent.
absl::Status OwnDirectory(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoStatus(errno, absl::StrCat("create ", dir));
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", dir));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s: not a directory of uid %d that only it may write (a %s of uid %d, mode %04o): it would hold gnnd's "
        "instance lock; remove it, or set XDG_RUNTIME_DIR",
        dir, ::geteuid(), S_ISDIR(st.st_mode) ? "directory" : "non-directory", st.st_uid, st.st_mode & 07777));
  }
  return absl::OkStatus();
}

bool OwnedBy(const char* dir, uid_t uid) {
  struct stat st;
  return dir != nullptr && *dir != '\0' && ::stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid;
}

}  // namespace

absl::StatusOr<std::string> InstanceLock::Directory() {
  const uid_t uid = ::geteuid();
  std::string dir;
  if (const char* runtime = std::getenv("RUNTIME_DIRECTORY"); runtime != nullptr && *runtime != '\0') {
    dir = std::string(runtime).substr(0, std::string(runtime).find(':'));  // the first of several
  } else if (uid == 0 && OwnedBy("/run", 0)) {
    dir = "/run/gnnd";
  } else if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); OwnedBy(xdg, uid)) {
    dir = absl::StrCat(xdg, "/gnnd");
  } else {
    dir = absl::StrCat("/tmp/gnnd-", uid);
  }
  GNND_RETURN_IF_ERROR(OwnDirectory(dir));
  return dir;
}

absl::StatusOr<std::unique_ptr<InstanceLock>> InstanceLock::Acquire(const std::string& instance) {
  GNND_RETURN_IF_ERROR(CheckInstanceName(instance, "instance"));
  GNND_ASSIGN_OR_RETURN(const std::string dir, Directory());
  const std::string path = absl::StrCat(dir, "/", InstancePrefix(instance), ".lock");
  for (;;) {
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
    // Closes fd on every return below; removes the file only once it holds the lock (path_ set).
    auto lock = std::unique_ptr<InstanceLock>(new InstanceLock(fd, ""));
    struct stat st;
    if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", path));
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      return absl::PermissionDeniedError(absl::StrCat(path, ": owned by uid ", st.st_uid, ", not by uid ", ::geteuid(),
                                                      " (or not a file); remove it to run instance '", instance, "'"));
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) return ErrnoStatus(errno, absl::StrCat("lock ", path));
      char text[64] = {};
      const ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
      const std::vector<absl::string_view> fields =
          absl::StrSplit(absl::StripAsciiWhitespace(absl::string_view(text, n > 0 ? n : 0)), ' ');
      int pid = 0, holder = 0;
      const bool known =
          fields.size() == 2 && absl::SimpleAtoi(fields[0], &pid) && absl::SimpleAtoi(fields[1], &holder);
      return absl::FailedPreconditionError(
          absl::StrCat("gnnd instance '", instance, "' is already running on this host",
                       known ? absl::StrCat(" (pid ", pid, ", uid ", holder, ")") : "",
                       ": give this one another instance name (config `instance`, --instance, or another socket)"));
    }
    // Locked: but a stopping gnnd may have removed the file between our open and our lock.
    struct stat now;
    if (::stat(path.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) continue;
    lock->path_ = path;
    const std::string holder = absl::StrCat(::getpid(), " ", ::geteuid(), "\n");
    if (::ftruncate(fd, 0) != 0 ||
        ::pwrite(fd, holder.data(), holder.size(), 0) != static_cast<ssize_t>(holder.size())) {
      return ErrnoStatus(errno, absl::StrCat("write ", path));
    }
    return lock;
  }
}

InstanceLock::~InstanceLock() {
  if (!path_.empty()) ::unlink(path_.c_str());  // while still locked: see the header
  ::close(fd_);
}

}  // namespace gnnd
