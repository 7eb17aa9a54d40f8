// One gnnd per instance on a host. Instances namespace shared-memory names (common/base/vocabulary.h);
// two gnnd of one instance would load, unload and remove each other's segments. Each gnnd holds an
// exclusive flock on <lock directory>/<instance prefix>.lock for its life, released by the kernel however
// it ends, so a killed gnnd never blocks the next (its file is taken over as it is).
//
// The lock directory is one only gnnd's user can write, so no other user can make the file first and keep
// gnnd from starting: $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=), else /run/gnnd for root, else
// $XDG_RUNTIME_DIR/gnnd, else /tmp/gnnd-<uid>; made 0700 where absent, refused where it is a link, another
// user's, or writable by group or others.
//
// A clean stop removes the file while still holding the lock. A gnnd that opened the file just before and
// locks it after finds the path gone or another file there, and starts over on the path.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gnnd {

class InstanceLock {
 public:
  // FAILED_PRECONDITION naming the instance and the holder (pid, uid) if another gnnd holds it;
  // PERMISSION_DENIED naming the directory or file where they are not this user's own.
  static absl::StatusOr<std::unique_ptr<InstanceLock>> Acquire(const std::string& instance);
  // The directory the lock file of this process's user is kept in (made if absent).
  static absl::StatusOr<std::string> Directory();
  // Removes the lock file, then lets go of the lock.
  ~InstanceLock();
  InstanceLock(const InstanceLock&) = delete;
  InstanceLock& operator=(const InstanceLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  InstanceLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace gnnd
