// SliceGovernor: when a GPU producer asks for a larger or smaller slice of SMs, and when it asks to go back;
// SliceLevels: how the asks of a GPU's sessions move the slice they share.
#include "server/sessions/slice_governor.h"

#include <gtest/gtest.h>

#include <utility>

namespace gnnd {
namespace {

using Move = SliceGovernor::Move;

// Feeds batches `seconds` apart with `idle` of each spent waiting on the trainer and `fill` on the GPU;
// returns the first move other than kNone and kStay, and after how many batches (kStay and 0 if none).
std::pair<Move, int> Feed(SliceGovernor& governor, int count, double seconds, double idle, double fill) {
  for (int i = 1; i <= count; ++i) {
    const Move move = governor.Delivered(seconds, idle, fill);
    if (move != Move::kNone && move != Move::kStay) return {move, i};
  }
  return {Move::kStay, 0};
}

constexpr int kFirstWindow = SliceGovernor::kSettleBatches + SliceGovernor::kWindowBatches;

TEST(SliceGovernorTest, ABusyProducerGrowsAtTheEndOfItsFirstWindow) {
  SliceGovernor governor;
  // 50 ms apart: 8 batches span 0.4 s; the 2 settling batches do not count.
  EXPECT_EQ(Feed(governor, 100, 0.05, 0.0, 0.04), std::make_pair(Move::kGrow, kFirstWindow));
}

TEST(SliceGovernorTest, AProducerIdleSomeOfTheTimeStays) {
  SliceGovernor governor;
  for (int i = 1; i < kFirstWindow; ++i) EXPECT_EQ(governor.Delivered(0.05, 0.01, 0.04), Move::kNone) << i;
  EXPECT_EQ(governor.Delivered(0.05, 0.01, 0.04), Move::kStay);  // idle 20 %: a window ends, the slice suits
  EXPECT_EQ(Feed(governor, 200, 0.05, 0.01, 0.04).first, Move::kStay);
  SliceGovernor barely_busy;
  EXPECT_EQ(Feed(barely_busy, 200, 0.05, 0.0045, 0.04).first, Move::kGrow);  // idle 9 %
  SliceGovernor barely_idle;
  EXPECT_EQ(Feed(barely_idle, 200, 0.05, 0.029, 0.02).first, Move::kStay);  // idle 58 %
}

TEST(SliceGovernorTest, AProducerIdleMostOfTheTimeShrinks) {
  SliceGovernor governor;
  EXPECT_EQ(Feed(governor, 100, 0.05, 0.035, 0.01), std::make_pair(Move::kShrink, kFirstWindow));  // idle 70 %
}

TEST(SliceGovernorTest, AWindowSpansAQuarterSecondAtLeast) {
  SliceGovernor governor;
  // Batches 10 ms apart: the window closes after 25 counted batches, not 8.
  const auto [move, batches] = Feed(governor, 100, 0.01, 0.0, 0.009);
  EXPECT_EQ(move, Move::kGrow);
  EXPECT_GE(batches - SliceGovernor::kSettleBatches, 25);
  EXPECT_LE(batches - SliceGovernor::kSettleBatches, 26);  // the sum of 0.01s may fall just short at 25
}

TEST(SliceGovernorTest, AGrowThatDidNotSpeedTheFillGoesBack) {
  SliceGovernor governor;
  ASSERT_EQ(Feed(governor, 100, 0.05, 0.0, 0.04).first, Move::kGrow);
  governor.Moved(/*judge=*/true);
  // 0.036 s: 1.11 x faster, below kMinSpeedup.
  EXPECT_EQ(Feed(governor, 100, 0.05, 0.0, 0.036), std::make_pair(Move::kBack, kFirstWindow));
}

TEST(SliceGovernorTest, AGrowThatPaidStaysOrGrowsAgainButNeverShrinks) {
  SliceGovernor still_busy;
  ASSERT_EQ(Feed(still_busy, 100, 0.05, 0.0, 0.04).first, Move::kGrow);
  still_busy.Moved(/*judge=*/true);
  EXPECT_EQ(Feed(still_busy, 100, 0.035, 0.0, 0.025), std::make_pair(Move::kGrow, kFirstWindow));

  SliceGovernor now_idle;
  ASSERT_EQ(Feed(now_idle, 100, 0.05, 0.0, 0.04).first, Move::kGrow);
  now_idle.Moved(/*judge=*/true);
  // 2.7 x faster and idle 70 %: it asked for this slice and got what it asked; a shrink would undo it.
  EXPECT_EQ(Feed(now_idle, 200, 0.05, 0.035, 0.015).first, Move::kStay);
  now_idle.Moved(/*judge=*/false);  // another session moved the slice: asks as anyone would
  EXPECT_EQ(Feed(now_idle, 200, 0.05, 0.035, 0.015).first, Move::kShrink);
}

TEST(SliceGovernorTest, AMoveOfAnotherSessionIsNotJudged) {
  SliceGovernor governor;
  ASSERT_EQ(Feed(governor, 100, 0.05, 0.0, 0.04).first, Move::kGrow);
  governor.Moved(/*judge=*/false);
  // No faster, still busy: asks to grow again, never to go back.
  EXPECT_EQ(Feed(governor, 100, 0.05, 0.0, 0.04).first, Move::kGrow);
}

TEST(SliceGovernorTest, ANewEpochRestartsTheWindowButKeepsTheJudgment) {
  SliceGovernor governor;
  ASSERT_EQ(Feed(governor, 100, 0.05, 0.0, 0.04).first, Move::kGrow);
  governor.Moved(/*judge=*/true);
  EXPECT_EQ(Feed(governor, 5, 0.05, 0.0, 0.04).first, Move::kStay);  // part of a window
  governor.Restart();
  // The batches before the restart are dropped: the next window is a full one, and it judges the grow.
  EXPECT_EQ(Feed(governor, 100, 0.05, 0.0, 0.04), std::make_pair(Move::kBack, kFirstWindow));
}

TEST(SliceGovernorTest, SettlingBatchesAfterAMoveDoNotCount) {
  SliceGovernor governor;
  governor.Moved(/*judge=*/false);
  // The first two batches wait long on the trainer (the pipeline refills); left out, the window is busy.
  EXPECT_EQ(Feed(governor, SliceGovernor::kSettleBatches, 0.5, 0.5, 0.04).first, Move::kStay);
  EXPECT_EQ(Feed(governor, 100, 0.05, 0.0, 0.04), std::make_pair(Move::kGrow, SliceGovernor::kWindowBatches));
}

int a = 0, b = 0;  // two sessions' keys (distinct objects, so distinct addresses)
constexpr double kVeto = SliceLevels::kVetoSeconds;

// `levels` levels with sessions a and b on the smallest.
SliceLevels Joined(int levels) {
  SliceLevels joined(levels);
  joined.Join(&a);
  joined.Join(&b);
  return joined;
}

TEST(SliceLevelsTest, GrowsFromTheCurrentLevelUpToTheTop) {
  SliceLevels levels = Joined(3);
  EXPECT_TRUE(levels.Grow(&a, 0, 1));
  EXPECT_FALSE(levels.Grow(&b, 0, 2));  // b still ran on 0: a moved it already
  EXPECT_EQ(levels.level(), 1);
  EXPECT_TRUE(levels.Grow(&b, 1, 3));
  EXPECT_FALSE(levels.Grow(&b, 2, 4));  // the whole GPU is the top
  EXPECT_EQ(levels.level(), 2);
}

TEST(SliceLevelsTest, AGrowThatDidNotPayCapsTheLevelUntilTheLastSessionLeaves) {
  SliceLevels levels = Joined(4);
  ASSERT_TRUE(levels.Grow(&a, 0, 1));
  ASSERT_TRUE(levels.Grow(&a, 1, 2));
  EXPECT_FALSE(levels.Back(&a, 1, 3));  // not the current level
  EXPECT_TRUE(levels.Back(&a, 2, 3));
  EXPECT_EQ(levels.level(), 1);
  EXPECT_FALSE(levels.CanGrow(1));
  EXPECT_FALSE(levels.Grow(&b, 1, 4));
  EXPECT_FALSE(levels.Leave(&a));
  EXPECT_EQ(levels.level(), 1);  // b still runs
  EXPECT_TRUE(levels.Leave(&b));
  EXPECT_EQ(levels.level(), 0);
  levels.Join(&a);
  EXPECT_TRUE(levels.Grow(&a, 0, 5));  // no ceiling any more
  EXPECT_TRUE(levels.Grow(&a, 1, 6));
  EXPECT_TRUE(levels.Grow(&a, 2, 7));
}

TEST(SliceLevelsTest, ShrinksAtAnAskUnlessAnotherSessionFoundItBusyLately) {
  SliceLevels levels = Joined(3);
  ASSERT_TRUE(levels.Grow(&a, 0, 100));
  ASSERT_TRUE(levels.Grow(&a, 1, 100));
  EXPECT_FALSE(levels.Shrink(&b, 2, 101));  // a grew it a second ago
  levels.Stay(&a, 100 + kVeto);             // and its next window found it busy
  EXPECT_FALSE(levels.Shrink(&b, 2, 100 + 1.9 * kVeto));
  EXPECT_EQ(levels.level(), 2);
  EXPECT_TRUE(levels.Shrink(&b, 2, 100 + 2.1 * kVeto));  // a has found nothing since: its veto lapsed
  EXPECT_EQ(levels.level(), 1);
  EXPECT_FALSE(levels.Shrink(&b, 2, 200));  // b still ran on 2: one level a move
  EXPECT_TRUE(levels.Shrink(&a, 1, 200));   // b's own asks are no veto
  EXPECT_EQ(levels.level(), 0);
  EXPECT_FALSE(levels.Shrink(&a, 0, 300));  // the smallest
  EXPECT_EQ(levels.level(), 0);
}

TEST(SliceLevelsTest, ASessionThatAsksToShrinkWithdrawsItsVeto) {
  SliceLevels levels = Joined(3);
  ASSERT_TRUE(levels.Grow(&a, 0, 10));
  EXPECT_FALSE(levels.Shrink(&b, 1, 11));  // a's veto (its grow a second ago)
  EXPECT_TRUE(levels.Shrink(&a, 1, 12));   // a itself asks now: b's ask is no veto
  EXPECT_EQ(levels.level(), 0);
}

TEST(SliceLevelsTest, ALeavingSessionsVetoNoLongerCounts) {
  SliceLevels levels = Joined(3);
  ASSERT_TRUE(levels.Grow(&a, 0, 10));
  EXPECT_FALSE(levels.Shrink(&b, 1, 11));
  levels.Leave(&a);
  EXPECT_TRUE(levels.Shrink(&b, 1, 12));
  EXPECT_EQ(levels.level(), 0);
}

TEST(SliceLevelsTest, ACapHoldsTheCurrentLevel) {
  SliceLevels levels(3);
  levels.Join(&a);
  levels.Cap();  // the next slice could not be made
  EXPECT_FALSE(levels.Grow(&a, 0, 1));
  EXPECT_EQ(levels.level(), 0);
}

}  // namespace
}  // namespace gnnd
