#include "server/sessions/slot_segment.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/base/log.h"
#include "common/base/status.h"

namespace gnnd {

// Plain shm_open/mmap rather than Boost.Interprocess here: the segment is handed to another uid
// (fchown) and its pages are committed up front (fallocate), which Boost does not expose.
absl::StatusOr<std::unique_ptr<SlotSegment>> SlotSegment::Create(size_t bytes, mode_t mode, uid_t owner,
                                                                 const std::string& instance) {
  auto segment = std::unique_ptr<SlotSegment>(new SlotSegment());
  // An unguessable name, created exclusively: another user cannot squat it in advance.
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
    uint64_t random = 0;
    if (::getrandom(&random, sizeof(random), 0) != sizeof(random)) return ErrnoStatus(errno, "getrandom");
    segment->name_ = absl::StrFormat("%s.slots.%d.%016x", InstancePrefix(instance), ::getpid(), random);
    fd = ::shm_open(("/" + segment->name_).c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) return ErrnoStatus(errno, absl::StrCat("shm_open ", segment->name_));
  }
  if (fd < 0) return absl::AlreadyExistsError("no free slot segment name after 16 random draws");
  segment->linked_ = true;
  absl::Status status;
  if (::fchmod(fd, mode) != 0) status = ErrnoStatus(errno, "fchmod slot segment");
  if (status.ok() && owner != ::geteuid() && ::geteuid() == 0 && ::fchown(fd, owner, static_cast<gid_t>(-1)) != 0) {
    status = ErrnoStatus(errno, "fchown slot segment");
  }
  // Commit the pages now: running out of /dev/shm later would be a SIGBUS in the middle of a batch.
  if (status.ok()) {
    if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
      status = ErrnoStatus(err, absl::StrCat("allocate ", bytes, " bytes of /dev/shm for session slots"));
    }
  }
  if (status.ok()) {
    void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) {
      status = ErrnoStatus(errno, "mmap slot segment");
    } else {
      segment->data_ = data;
      segment->bytes_ = bytes;
    }
  }
  ::close(fd);
  if (!status.ok()) return status;  // the destructor unlinks
  return segment;
}

SlotSegment::~SlotSegment() {
  if (data_ != nullptr) ::munmap(data_, bytes_);
  Unlink();
}

void SlotSegment::Unlink() {
  if (!linked_) return;
  ::shm_unlink(("/" + name_).c_str());
  linked_ = false;
}

void SlotSegment::RemoveStale() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string file = entry.path().filename();
    if (!absl::StartsWith(file, kDefaultInstance)) continue;  // gnnd.slots.PID.* or gnnd-INSTANCE.slots.PID.*
    const std::vector<std::string> parts = absl::StrSplit(file, '.');
    int pid = 0;
    if (parts.size() != 4 || parts[1] != "slots" || !absl::SimpleAtoi(parts[2], &pid)) continue;
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    LogInfo("removing %s, left by gnnd pid %d which is gone", file, pid);
    ::shm_unlink(("/" + file).c_str());
  }
}

}  // namespace gnnd
