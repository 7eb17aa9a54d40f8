#include "server/admission.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace gnnd {
namespace {

TEST(Admission, ASharedLimitNearTheTopOfItsRangeDoesNotWrap) {
  // 2^63 sessions at 50 %: the share per uid is 2^62, not (2^63 * 50 mod 2^64) / 100 = 0.
  Admission admission({.max_sessions = uint64_t{1} << 63, .max_total_slot_bytes = 1 << 20, .uid_share_percent = 50});
  std::vector<std::unique_ptr<Admission::Ticket>> tickets;
  for (int i = 0; i < 3; ++i) {
    auto ticket = admission.Reserve(1000, 1);
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    tickets.push_back(std::move(*ticket));
  }
  EXPECT_EQ(admission.Stats().sessions(), 3u);
}

TEST(Admission, SlotBytesThatWouldWrapTheTotalAreRefused) {
  Admission admission({.max_sessions = 16, .max_total_slot_bytes = UINT64_MAX, .uid_share_percent = 100});
  auto first = admission.Reserve(1000, uint64_t{1} << 63);
  ASSERT_TRUE(first.ok()) << first.status();
  // 2^63 + 2^63 + 5 wraps to 5: refused, not admitted.
  auto second = admission.Reserve(1001, (uint64_t{1} << 63) + 5);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(second.status().message().find("max_total_slot_bytes"), std::string::npos) << second.status();
  // Per uid too: the same uid's second reservation would wrap its own sum.
  Admission shared({.max_sessions = 16, .max_total_slot_bytes = UINT64_MAX, .uid_share_percent = 100});
  auto a = shared.Reserve(7, UINT64_MAX - 10);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(shared.Reserve(7, 20).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(Admission, TicketsGiveTheirShareBack) {
  Admission admission({.max_sessions = 2, .max_total_slot_bytes = 100, .uid_share_percent = 50});
  auto first = admission.Reserve(5, 50);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(admission.Reserve(5, 1).status().code(), absl::StatusCode::kResourceExhausted);  // one session a uid
  first->reset();
  EXPECT_TRUE(admission.Reserve(5, 50).ok());
  EXPECT_EQ(admission.Stats().sessions(), 0u);
}

// A session reserves its least size first, then grows to what its batches need: checked as a reservation of the
// whole would be, held only if it fits, given back whole.
TEST(Admission, ATicketGrowsWithinTheLimitsOrKeepsWhatItHeld) {
  Admission admission({.max_sessions = 4, .max_total_slot_bytes = 100, .uid_share_percent = 60});
  auto ticket = admission.Reserve(5, 10);
  ASSERT_TRUE(ticket.ok());
  EXPECT_TRUE(admission.Grow(**ticket, 40).ok());
  EXPECT_EQ(admission.Stats().slot_bytes(), 40u);
  const absl::Status refused = admission.Grow(**ticket, 61);  // past uid 5's share of 60
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.message().find("the session's 61 bytes"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("(60 bytes, 0 in use)"), std::string::npos) << refused;  // its own not counted
  EXPECT_EQ(admission.Stats().slot_bytes(), 40u);
  auto other = admission.Reserve(6, 55);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(admission.Grow(**ticket, 50).code(), absl::StatusCode::kResourceExhausted);  // 105 in all
  EXPECT_TRUE(admission.Grow(**ticket, 45).ok());
  EXPECT_TRUE(admission.Grow(**ticket, 20).ok());  // never shrinks
  EXPECT_EQ(admission.Stats().slot_bytes(), 100u);
  ticket->reset();
  other->reset();
  EXPECT_EQ(admission.Stats().slot_bytes(), 0u);
  EXPECT_EQ(admission.Stats().sessions(), 0u);
}

}  // namespace
}  // namespace gnnd
