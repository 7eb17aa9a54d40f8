// SliceGovernor: when a GPU producer asks for a larger slice of SMs, and when it asks to go back.
#include "server/sessions/slice_governor.h"

#include <gtest/gtest.h>

namespace gnnd {
namespace {

using Move = SliceGovernor::Move;

// Feeds batches `seconds` apart with `idle` of each spent waiting on the trainer and `fill` on the GPU;
// returns the first move other than kStay and how many batches it took (0 and kStay if none in `count`).
std::pair<Move, int> Feed(SliceGovernor& governor, int count, double seconds, double idle, double fill) {
  for (int i = 1; i <= count; ++i) {
    const Move move = governor.Delivered(seconds, idle, fill);
    if (move != Move::kStay) return {move, i};
  }
  return {Move::kStay, 0};
}

constexpr int kFirstWindow = SliceGovernor::kSettleBatches + SliceGovernor::kWindowBatches;

TEST(SliceGovernorTest, ABusyProducerGrowsAtTheEndOfItsFirstWindow) {
  SliceGovernor governor;
  // 50 ms apart: 8 batches span 0.4 s; the 2 settling batches do not count.
  EXPECT_EQ(Feed(governor, 100, 0.05, 0.0, 0.04), std::make_pair(Move::kGrow, kFirstWindow));
}

TEST(SliceGovernorTest, AProducerIdleAShareOfTheTimeStays) {
  SliceGovernor governor;
  EXPECT_EQ(Feed(governor, 200, 0.05, 0.01, 0.04).first, Move::kStay);  // idle 20 %
  SliceGovernor barely;
  EXPECT_EQ(Feed(barely, 200, 0.05, 0.0045, 0.04).first, Move::kGrow);  // idle 9 %
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

TEST(SliceGovernorTest, AGrowThatPaidStaysOrGrowsAgain) {
  SliceGovernor still_busy;
  ASSERT_EQ(Feed(still_busy, 100, 0.05, 0.0, 0.04).first, Move::kGrow);
  still_busy.Moved(/*judge=*/true);
  EXPECT_EQ(Feed(still_busy, 100, 0.035, 0.0, 0.025), std::make_pair(Move::kGrow, kFirstWindow));

  SliceGovernor enough;
  ASSERT_EQ(Feed(enough, 100, 0.05, 0.0, 0.04).first, Move::kGrow);
  enough.Moved(/*judge=*/true);
  EXPECT_EQ(Feed(enough, 200, 0.05, 0.02, 0.025).first, Move::kStay);  // faster, and now idle 40 %
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

}  // namespace
}  // namespace gnnd
