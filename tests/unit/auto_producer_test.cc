// AutoProducer (open.producer "auto"): a GPU session starts on host_gather where gnnd has threads to gather
// with, stays while they gather a batch well inside the trainer's interval, and moves to sm for good once a
// window shows they do not; stats' words say which and why.
#include "server/sessions/auto_producer.h"

#include <gtest/gtest.h>

namespace gnnd {
namespace {

constexpr int kFirstAutoWindow = AutoProducer::kSettleBatches + AutoProducer::kWindowBatches;

// Feeds `count` batches; returns after how many the choice changed (0: it did not).
int FeedAuto(AutoProducer& producer, int count, double interval, double gather, double gpu) {
  for (int i = 1; i <= count; ++i) {
    if (producer.Delivered(interval, gather, gpu)) return i;
  }
  return 0;
}

TEST(AutoProducerTest, StartsOnHostGatherWithThreadsAndOnSmWithout) {
  const AutoProducer threads(16);
  EXPECT_EQ(threads.current(), BatchProducer::kHostGather);
  EXPECT_EQ(threads.why(), "host_gather: 16 producer threads gather the rows, no SM reads them (nothing measured yet)");
  AutoProducer one(1);
  EXPECT_EQ(one.current(), BatchProducer::kSm);
  EXPECT_EQ(one.why(), "sm: gnnd has 1 producer thread(s) to gather rows on (host_gather wants 2)");
  EXPECT_EQ(FeedAuto(one, 200, 0.1, 0.0, 0.001), 0);  // sm stays sm
  EXPECT_EQ(one.current(), BatchProducer::kSm);
}

TEST(AutoProducerTest, CopiesOverTheSessionsLimitMeanSmFromTheStart) {
  AutoProducer producer(16, AutoProducer::kMaxGatherShare, /*copies_fit=*/false);
  EXPECT_EQ(producer.current(), BatchProducer::kSm);
  EXPECT_EQ(producer.why(),
            "sm: host_gather's pinned copies of the slots would take the session past max_session_bytes");
  EXPECT_EQ(FeedAuto(producer, 200, 0.017, 0.0, 0.001), 0);
}

TEST(AutoProducerTest, AHostThatKeepsUpStaysAndSaysByHowMuch) {
  AutoProducer producer(16);
  // A trainer taking a batch every 17 ms, gathered in 4 ms: 20 batches span 0.34 s, past the window's time.
  EXPECT_EQ(FeedAuto(producer, 500, 0.017, 0.004, 0.0015), 0);
  EXPECT_EQ(producer.current(), BatchProducer::kHostGather);
  EXPECT_EQ(producer.why(),
            "host_gather: 16 producer threads gather a batch's rows in 4.0 ms, the trainer takes one every 17.0 ms "
            "(the GPU samples it in 1.5 ms)");
  // Just inside the share stays too.
  AutoProducer near(4);
  EXPECT_EQ(FeedAuto(near, 500, 0.020, 0.0159, 0.001), 0);
}

TEST(AutoProducerTest, AHostThatIsTheBoundMovesToSmAtTheEndOfTheFirstWindowForGood) {
  AutoProducer producer(2);
  // The host gathers a batch in 30 ms and the batches come every 31 ms: it is what the trainer waits for.
  EXPECT_EQ(FeedAuto(producer, 500, 0.031, 0.030, 0.002), kFirstAutoWindow);
  EXPECT_EQ(producer.current(), BatchProducer::kSm);
  EXPECT_EQ(producer.why(),
            "sm: host_gather's 2 producer threads took 30.0 ms a batch, the trainer one every 31.0 ms (over 80 %): the "
            "host was the bound");
  // sm's batches (no host gather) never bring host_gather back.
  EXPECT_EQ(FeedAuto(producer, 500, 0.1, 0.0, 0.002), 0);
  EXPECT_EQ(producer.current(), BatchProducer::kSm);
}

TEST(AutoProducerTest, AWindowNeedsItsTimeAndTheSettlingBatchesDoNotCount) {
  AutoProducer fast(8);
  // 1 ms apart: 16 batches span 16 ms, short of the window's 0.25 s; it ends at the 250th counted batch.
  EXPECT_EQ(FeedAuto(fast, 1000, 0.001, 0.0009, 0.0002), AutoProducer::kSettleBatches + 250);
  // A slow start (the pipeline filling, graphs captured) is left out: only the settling batches are slow.
  AutoProducer settles(8);
  for (int i = 0; i < AutoProducer::kSettleBatches; ++i) EXPECT_FALSE(settles.Delivered(0.05, 0.049, 0.01));
  EXPECT_EQ(FeedAuto(settles, 500, 0.017, 0.004, 0.001), 0);
}

TEST(AutoProducerTest, ANewEpochSettlesAgainAndTheHostCanStillBeFoundTheBound) {
  AutoProducer producer(4);
  EXPECT_EQ(FeedAuto(producer, 100, 0.017, 0.004, 0.001), 0);
  producer.Restart();
  // The gap before the new epoch's first batch (the trainer evaluated) is a settling batch, not a window's.
  EXPECT_FALSE(producer.Delivered(5.0, 0.004, 0.001));
  EXPECT_EQ(FeedAuto(producer, 500, 0.017, 0.016, 0.001), kFirstAutoWindow - 1);
  EXPECT_EQ(producer.current(), BatchProducer::kSm);
}

}  // namespace
}  // namespace gnnd
