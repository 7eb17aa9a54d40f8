// AutoProducer (open.producer "auto"): a GPU session tries host_gather and sm in turn and keeps the one its
// trainer took batches from faster; without threads or room for host_gather's copies it is sm from the start;
// host_gather found to be the bound (the host's gather near the trainer's interval) goes to sm for good.
#include "server/sessions/auto_producer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace gnnd {
namespace {

constexpr int kAutoWindow = AutoProducer::kSettleBatches + AutoProducer::kWindowBatches;

// A trainer whose batches come `host` seconds apart on host_gather (gathered in `gather`) and `sm` apart on sm.
// Feeds up to `count` batches, each made the way current() says; returns the producers in the order taken (the
// first included) and, in `batches`, how many were fed at the last change.
std::vector<BatchProducer> Trainer(AutoProducer& producer, int count, double host, double sm, double gather,
                                   int* batches = nullptr) {
  std::vector<BatchProducer> taken{producer.current()};
  for (int i = 1; i <= count; ++i) {
    const bool on_host = producer.current() == BatchProducer::kHostGather;
    if (producer.Delivered(on_host ? host : sm, on_host, on_host ? gather : 0)) {
      taken.push_back(producer.current());
      if (batches != nullptr) *batches = i;
    }
  }
  return taken;
}

constexpr BatchProducer kHost = BatchProducer::kHostGather, kSm = BatchProducer::kSm;

TEST(AutoProducerTest, WithoutThreadsOrRoomForTheCopiesItIsSmFromTheStart) {
  AutoProducer one(1);
  EXPECT_EQ(one.why(), "sm: gnnd has 1 producer thread(s) to gather rows on (host_gather wants 2)");
  EXPECT_EQ(Trainer(one, 500, 0.01, 0.05, 0.001), std::vector<BatchProducer>{kSm});  // never tried, however slow
  AutoProducer no_room(16, /*copies_fit=*/false);
  EXPECT_EQ(no_room.why(),
            "sm: host_gather's pinned copies of the slots would take the session past max_session_bytes");
  EXPECT_EQ(Trainer(no_room, 500, 0.01, 0.05, 0.001), std::vector<BatchProducer>{kSm});
}

TEST(AutoProducerTest, TriesBothInTurnAndKeepsHostGatherWhereTheTrainerIsFasterWithIt) {
  AutoProducer producer(16);
  EXPECT_EQ(producer.current(), kHost);
  EXPECT_EQ(producer.why(), "host_gather: trying host_gather and sm in turn, 4 windows (16 producer threads)");
  int at = 0;
  // 17.0 ms a batch with host_gather, 17.6 with sm (the SMs it holds slow the trainer): 16 batches span 0.27 s,
  // short of a window's 0.4: 24 batches a window on host_gather, 23 on sm.
  const int trials = 2 * (AutoProducer::kSettleBatches + 24) + 2 * (AutoProducer::kSettleBatches + 23);
  // Windows host_gather, sm, sm, host_gather: changes after the first and the third, and none at the end.
  EXPECT_EQ(Trainer(producer, trials, 0.0170, 0.0176, 0.004, &at), (std::vector<BatchProducer>{kHost, kSm, kHost}));
  EXPECT_EQ(at, AutoProducer::kSettleBatches + 24 + 2 * (AutoProducer::kSettleBatches + 23));
  EXPECT_EQ(producer.why(), "host_gather: the trainer took a batch every 17.0 ms with it, 17.6 ms with sm");
  // Decided: later windows say how it goes.
  Trainer(producer, 100, 0.0170, 0.0176, 0.004);
  EXPECT_EQ(producer.why(),
            "host_gather: the trainer took a batch every 17.0 ms with it, 17.6 ms with sm; 16 producer threads "
            "gather a batch's rows in 4.0 ms");
}

TEST(AutoProducerTest, KeepsSmWhereTheTrainerIsFasterWithItAndHostGatherOnATie) {
  AutoProducer producer(16);
  // A fill on the host takes longer than the trainer's step (LABOR on products): 15.4 ms a batch against 13.9.
  EXPECT_EQ(Trainer(producer, 1000, 0.0154, 0.0139, 0.0037), (std::vector<BatchProducer>{kHost, kSm, kHost, kSm}));
  int at = 0;  // the trial's last window is host_gather's: sm at its end
  AutoProducer again(16);
  Trainer(again, 1000, 0.0154, 0.0139, 0.0037, &at);
  EXPECT_EQ(at, 2 * (AutoProducer::kSettleBatches + 26) + 2 * (AutoProducer::kSettleBatches + 29));
  EXPECT_EQ(producer.why(), "sm: the trainer took a batch every 13.9 ms with it, 15.4 ms with host_gather");
  EXPECT_EQ(Trainer(producer, 500, 0.001, 0.05, 0.0), std::vector<BatchProducer>{kSm});  // for good
  // Within kTie of each other: host_gather, which leaves the SMs alone.
  AutoProducer tie(16);
  EXPECT_EQ(Trainer(tie, 1000, 0.0170, 0.01695, 0.004).back(), kHost);
}

// A trainer still warming up: its intervals fall linearly from 1.6 x to 1 x over its first 240 batches, which the
// trial's windows span; host_gather is 1.2 % faster throughout.
BatchProducer ChosenForAWarmingTrainer(double host, double sm) {
  AutoProducer producer(16);
  for (int i = 0; i < 1000; ++i) {
    const bool on_host = producer.current() == BatchProducer::kHostGather;
    const double warming = 1 + 0.6 * std::max(0.0, 1 - i / 240.0);
    producer.Delivered((on_host ? host : sm) * warming, on_host, 0.004);
  }
  return producer.current();
}

TEST(AutoProducerTest, ATrendOverTheTrialFavorsNeither) {
  // Tried in the order host_gather, sm, host_gather, sm, sm's windows (each later) would have seemed 1.9 % faster.
  EXPECT_EQ(ChosenForAWarmingTrainer(0.0170, 0.0172), kHost);
  EXPECT_EQ(ChosenForAWarmingTrainer(0.0180, 0.0170), kSm);
}

TEST(AutoProducerTest, BatchesMadeTheOtherWayAndTheSettlingOnesDoNotCount) {
  AutoProducer producer(8);
  // A slow start (the pipeline filling, graphs captured) is left out, and so are batches made by sm while the
  // window is host_gather's (fills in flight across a change).
  for (int i = 0; i < AutoProducer::kSettleBatches; ++i) EXPECT_FALSE(producer.Delivered(1.0, true, 0.5));
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(producer.Delivered(9.0, false, 0.0));
  // Then windows of 16 batches (30 ms apart: 0.48 s) on host_gather, 16 (60 ms) on sm.
  EXPECT_EQ(Trainer(producer, 4 * kAutoWindow, 0.03, 0.06, 0.001).size(), 3u);  // host, sm (twice), host
  EXPECT_EQ(producer.why(), "host_gather: the trainer took a batch every 30.0 ms with it, 60.0 ms with sm");
}

TEST(AutoProducerTest, AHostThatIsTheBoundGoesToSmForGoodTrialOrNot) {
  AutoProducer producer(2);
  int at = 0;
  // The host gathers a batch in 30 ms and the batches come every 31 ms: the first window says so.
  EXPECT_EQ(Trainer(producer, 1000, 0.031, 0.020, 0.030, &at), (std::vector<BatchProducer>{kHost, kSm}));
  EXPECT_EQ(at, kAutoWindow);
  EXPECT_EQ(producer.why(),
            "sm: host_gather's 2 producer threads took 30.0 ms a batch, the trainer one every 31.0 ms (over 80 %): "
            "the host was the bound");
  // Decided for host_gather, then the host slows (other sessions took its cores): sm for good.
  AutoProducer later(4);
  EXPECT_EQ(Trainer(later, 1000, 0.017, 0.018, 0.004).back(), kHost);
  EXPECT_EQ(Trainer(later, 1000, 0.017, 0.018, 0.016), (std::vector<BatchProducer>{kHost, kSm}));
  EXPECT_EQ(Trainer(later, 1000, 0.001, 0.05, 0.0).size(), 1u);
}

TEST(AutoProducerTest, ANewEpochStartsTheWindowOver) {
  AutoProducer producer(4);
  for (int i = 0; i < AutoProducer::kSettleBatches + 5; ++i) producer.Delivered(0.03, true, 0.001);
  producer.Restart();
  // The gap before the new epoch's first batch (the trainer evaluated) settles, and the window counts anew.
  EXPECT_FALSE(producer.Delivered(5.0, true, 0.001));
  EXPECT_EQ(Trainer(producer, 4 * kAutoWindow - 1, 0.03, 0.06, 0.001).size(), 3u);
  EXPECT_EQ(producer.why(), "host_gather: the trainer took a batch every 30.0 ms with it, 60.0 ms with sm");
}

}  // namespace
}  // namespace gnnd
