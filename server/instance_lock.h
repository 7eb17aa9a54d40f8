// One gnnd per instance on a host. Instances namespace shared-memory names (common/base/vocabulary.h);
// two gnnd of one instance would load, unload and remove each other's segments. Each gnnd holds an
// exclusive flock on /dev/shm/<instance prefix>.lock for its life (released by the kernel however it
// ends, so a killed gnnd never blocks the next). The file stays: removing it would let a gnnd that opened
// it just before lock an unlinked file while a third locks a new one.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gnnd {

class InstanceLock {
 public:
  // FAILED_PRECONDITION naming the instance and the holder's pid if another gnnd holds it;
  // PERMISSION_DENIED if the lock file is not this user's own regular file (another user made it).
  static absl::StatusOr<std::unique_ptr<InstanceLock>> Acquire(const std::string& instance);
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
