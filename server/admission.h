// Daemon-wide limits on what sessions may hold, so that no trainer (or user) can exhaust the node: the
// number of open sessions and the bytes of their slots, in all and per uid. A session reserves its share
// when it opens and gives it back when it ends; a reservation over a limit is RESOURCE_EXHAUSTED naming
// the limit. Thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "gnnd/v1/config.pb.h"
#include "gnnd/v1/service.pb.h"

namespace gnnd {

class Admission {
 public:
  struct Limits {
    uint64_t max_sessions = 0;
    uint64_t max_total_slot_bytes = 0;
    uint32_t uid_share_percent = 0;  // of each limit, for one uid
  };
  // The configured limits, with defaults derived from this machine where a field is 0: 256 sessions,
  // half of /dev/shm for slots, half of each for one uid.
  static Limits FromConfig(const v1::DaemonConfig& config);
  explicit Admission(const Limits& limits) : limits_(limits) {}

  // What a session holds; returned when it goes away.
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    friend class Admission;
    Ticket(Admission* admission, uid_t uid, uint64_t bytes) : admission_(admission), uid_(uid), bytes_(bytes) {}
    Admission* admission_;
    uid_t uid_;
    uint64_t bytes_;
  };
  absl::StatusOr<std::unique_ptr<Ticket>> Reserve(uid_t uid, uint64_t slot_bytes);
  // Raises what `ticket` holds to `bytes` (a session whose size is known only after a first reservation of
  // its least size); RESOURCE_EXHAUSTED, holding what it held, if that would pass a limit.
  absl::Status Grow(Ticket& ticket, uint64_t bytes);

  // The limits and what is in use, for GetStats.
  v1::AdmissionStats Stats() const;

 private:
  struct Use {
    uint64_t sessions = 0, bytes = 0;
  };
  void Release(uid_t uid, uint64_t bytes);
  // Whether `bytes` more fit in the total and in `uid`'s share (mutex_ held): OK or the refusal.
  absl::Status CheckBytesLocked(uid_t uid, uint64_t bytes) const;

  const Limits limits_;
  mutable std::mutex mutex_;
  Use total_;
  std::map<uid_t, Use> by_uid_;
};

}  // namespace gnnd
