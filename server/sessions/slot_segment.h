// A session's slots: one POSIX shared-memory segment of num_slots * slot_bytes, mapped read-write by
// gnnd and by the trainer. Its name is unlinked as soon as the trainer has mapped it (or when the
// session ends), so neither side's crash leaves it behind; names carry gnnd's pid, so a restarted gnnd
// can remove what a killed one left (RemoveStale).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/base/vocabulary.h"

namespace gnnd {

class SlotSegment {
 public:
  // "<instance prefix>.slots.<pid>.<64 random bits in hex>" (gnnd.slots... for the default instance),
  // created exclusively (unguessable, so no one can take the name first), `bytes` long, with permission
  // bits `mode` (and owned by `owner` when gnnd may chown, so a trainer of another uid can map it).
  static absl::StatusOr<std::unique_ptr<SlotSegment>> Create(size_t bytes, mode_t mode, uid_t owner,
                                                             const std::string& instance = kDefaultInstance);
  ~SlotSegment();

  const std::string& name() const { return name_; }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // Removes the name (the mapping stays). Idempotent.
  void Unlink();

  // Removes slot segments of gnnd processes that no longer run (of every instance).
  static void RemoveStale();

 private:
  SlotSegment() = default;
  std::string name_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool linked_ = false;
};

}  // namespace gnnd
