// open.producer "auto" on a GPU session whose features are in memory: which of "host_gather" and "sm" makes its
// batches, from the rate the trainer takes them. host_gather holds no SM for the rows but a fill takes longer
// (sampled, copied out, gathered by gnnd's threads, uploaded); sm holds SMs the trainer may want. Which serves a
// trainer better shows in the one figure that matters, the time between its batches: the session tries each in
// turn (host_gather, sm, sm, host_gather: a window of batches each, so that a trainer still speeding up or slowing
// down favors neither), keeps the one the trainer took faster, and moves to sm for good if host_gather's threads
// later gather a batch in more than a share of that time (the host is the bound: other sessions took its cores).
// Pure logic: CudaSlots feeds it each batch it delivers.
#pragma once

#include <string>

#include "common/base/vocabulary.h"

namespace gnnd {

class AutoProducer {
 public:
  // host_gather needs this many of gnnd's producer threads (one would gather a products batch in ~30 ms).
  static constexpr int kMinThreads = 2;
  // Batches left out at the start of a window (the fills in flight were made the other way, graphs are captured,
  // the trainer may have paused between epochs).
  static constexpr int kSettleBatches = 2;
  // A window ends after this many batches and at least this much wall time.
  static constexpr int kWindowBatches = 16;
  static constexpr double kWindowSeconds = 0.4;
  // Windows tried: host_gather, sm, sm, host_gather, so that a steady trend cancels (in run BF, the order
  // host_gather, sm, host_gather, sm found sm faster by 1-2 % for a trainer that ran 2 % faster on host_gather).
  static constexpr int kTrialWindows = 4;
  static constexpr BatchProducer kTrialOrder[kTrialWindows] = {BatchProducer::kHostGather, BatchProducer::kSm,
                                                               BatchProducer::kSm, BatchProducer::kHostGather};
  // host_gather is kept unless sm's batches came this much faster (within it, SMs are left to the trainer).
  static constexpr double kTie = 0.01;
  // Once decided, the host is the bound when its gather of a batch takes more than this share of the interval.
  static constexpr double kMaxGatherShare = 0.8;

  // With `threads` producer threads to gather on. `copies_fit`: host_gather's pinned copies of the slots fit the
  // session's max_session_bytes. Without either, sm from the start. `max_gather_share`: see kMaxGatherShare.
  explicit AutoProducer(int threads, bool copies_fit = true, double max_gather_share = kMaxGatherShare);

  // Where the fills enqueued from now on are made.
  BatchProducer current() const { return current_; }
  // What it chose and why, in words (gnnctl stats).
  const std::string& why() const { return why_; }
  // A batch delivered `interval` seconds after the previous one, made by host_gather (`gather`: the seconds its
  // rows took on the host) or by sm. True when this batch changed current().
  bool Delivered(double interval, bool on_host, double gather);
  // A new epoch (or a window ended): the window starts over.
  void Restart();

 private:
  bool EndWindow(double each, double gathered);

  int threads_;
  double max_gather_share_;
  BatchProducer current_ = BatchProducer::kSm;
  std::string why_;
  bool decided_ = false;
  int trial_ = 0;                     // trial windows ended
  double trial_seconds_[2] = {0, 0};  // per producer (0 host_gather, 1 sm): the trial windows' mean intervals
  int settle_ = kSettleBatches;
  int batches_ = 0;
  double seconds_ = 0, gather_ = 0;
};

}  // namespace gnnd
