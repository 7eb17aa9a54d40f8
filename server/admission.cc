#include "server/admission.h"

#include <sys/statvfs.h>

#include "absl/strings/str_cat.h"
#include "common/base/limits.h"

namespace gnnd {
namespace {

// percent% of `limit`, rounded down, without overflow.
uint64_t ShareOf(uint64_t limit, uint32_t percent) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(limit) * percent / 100);
}

uint64_t ShmBytes() {
  struct statvfs st;
  if (::statvfs("/dev/shm", &st) != 0) return uint64_t{8} << 30;
  return static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
}

}  // namespace

Admission::Limits Admission::FromConfig(const v1::DaemonConfig& config) {
  Limits l;
  l.max_sessions = config.max_sessions() > 0 ? config.max_sessions() : kDefaultMaxSessions;
  l.max_total_slot_bytes = config.max_total_slot_bytes() > 0 ? config.max_total_slot_bytes() : ShmBytes() / 2;
  l.uid_share_percent = config.uid_share_percent() > 0 ? config.uid_share_percent() : 50;
  return l;
}

Admission::Ticket::~Ticket() { admission_->Release(uid_, bytes_); }

absl::StatusOr<std::unique_ptr<Admission::Ticket>> Admission::Reserve(uid_t uid, uint64_t slot_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = by_uid_.find(uid);  // no entry for a uid that is refused
  const Use mine = found == by_uid_.end() ? Use{} : found->second;
  const uint64_t uid_sessions = std::max<uint64_t>(1, ShareOf(limits_.max_sessions, limits_.uid_share_percent));
  auto refuse = [&](absl::string_view limit, uint64_t value, absl::string_view what) {
    return absl::ResourceExhaustedError(absl::StrCat("open: ", what, " (", limit, " = ", value,
                                                     "); close sessions or ask the administrator to raise it"));
  };
  // Every sum below is of what was admitted within the limit, so `limit - in use` cannot wrap.
  if (total_.sessions >= limits_.max_sessions) {
    return refuse("max_sessions", limits_.max_sessions, "gnnd has as many sessions open as it allows");
  }
  if (mine.sessions >= uid_sessions) {
    return refuse("uid_share_percent", limits_.uid_share_percent,
                  absl::StrCat("uid ", uid, " has its share of sessions open (", uid_sessions, ")"));
  }
  if (absl::Status fits = CheckBytesLocked(uid, slot_bytes); !fits.ok()) return fits;
  ++total_.sessions;
  total_.bytes += slot_bytes;
  ++by_uid_[uid].sessions;
  by_uid_[uid].bytes += slot_bytes;
  return std::unique_ptr<Ticket>(new Ticket(this, uid, slot_bytes));
}

absl::Status Admission::CheckBytesLocked(uid_t uid, uint64_t bytes) const {
  const auto found = by_uid_.find(uid);
  const uint64_t mine = found == by_uid_.end() ? 0 : found->second.bytes;
  const uint64_t uid_bytes = ShareOf(limits_.max_total_slot_bytes, limits_.uid_share_percent);
  auto refuse = [&](absl::string_view limit, uint64_t value, absl::string_view what) {
    return absl::ResourceExhaustedError(absl::StrCat("open: ", what, " (", limit, " = ", value,
                                                     "); close sessions or ask the administrator to raise it"));
  };
  if (bytes > limits_.max_total_slot_bytes - total_.bytes) {
    return refuse("max_total_slot_bytes", limits_.max_total_slot_bytes,
                  absl::StrCat("the session's ", bytes,
                               " bytes (slots, seed lists, buffers) would exceed what gnnd allows, with ", total_.bytes,
                               " in use"));
  }
  if (mine > uid_bytes || bytes > uid_bytes - mine) {
    return refuse("uid_share_percent", limits_.uid_share_percent,
                  absl::StrCat("the session's ", bytes, " bytes (slots, seed lists, buffers) would exceed uid ", uid,
                               "'s share (", uid_bytes, " bytes, ", mine, " in use)"));
  }
  return absl::OkStatus();
}

absl::Status Admission::Grow(Ticket& ticket, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes <= ticket.bytes_) return absl::OkStatus();
  // Checked as a reservation of `bytes` would be, without what the ticket holds (the same refusal).
  Use& mine = by_uid_[ticket.uid_];
  total_.bytes -= ticket.bytes_;
  mine.bytes -= ticket.bytes_;
  absl::Status fits = CheckBytesLocked(ticket.uid_, bytes);
  if (fits.ok()) ticket.bytes_ = bytes;
  total_.bytes += ticket.bytes_;
  mine.bytes += ticket.bytes_;
  return fits;
}

void Admission::Release(uid_t uid, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  --total_.sessions;
  total_.bytes -= bytes;
  Use& mine = by_uid_[uid];
  --mine.sessions;
  mine.bytes -= bytes;
  if (mine.sessions == 0) by_uid_.erase(uid);
}

v1::AdmissionStats Admission::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  v1::AdmissionStats s;
  s.set_max_sessions(limits_.max_sessions);
  s.set_max_total_slot_bytes(limits_.max_total_slot_bytes);
  s.set_uid_share_percent(limits_.uid_share_percent);
  s.set_sessions(total_.sessions);
  s.set_slot_bytes(total_.bytes);
  return s;
}

}  // namespace gnnd
