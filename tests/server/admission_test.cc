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

}  // namespace
}  // namespace gnnd
