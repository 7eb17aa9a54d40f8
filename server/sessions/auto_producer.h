// open.producer "auto" on a GPU session whose features are in memory: which of "host_gather" and "sm" makes its
// batches, from what its batches measure. host_gather holds no SM for the rows (the trainer keeps the SM time a
// zero-copy gather takes), so a session starts on it wherever gnnd has threads to gather with, and stays while
// they gather a batch well inside the time the trainer takes one. Once a window of batches shows they do not
// (the host is the bound, whatever else uses its cores, and the SMs gather faster), the session moves to sm for
// good: going back and forth would cost the trainer more than either. Pure logic: CudaSlots feeds it.
#pragma once

#include <string>

#include "common/base/vocabulary.h"

namespace gnnd {

class AutoProducer {
 public:
  // host_gather needs this many of gnnd's producer threads (one would gather a products batch in ~30 ms).
  static constexpr int kMinThreads = 2;
  // Batches left out after a start or a new epoch (the pipeline fills, the trainer may have paused).
  static constexpr int kSettleBatches = 4;
  // A window ends after this many batches and at least this much wall time.
  static constexpr int kWindowBatches = 16;
  static constexpr double kWindowSeconds = 0.25;
  // The host keeps up while its gather of a batch takes at most this share of the trainer's interval.
  static constexpr double kMaxGatherShare = 0.8;

  // With `threads` producer threads to gather on; the host keeps up while it gathers within `max_gather_share`
  // of the trainer's interval. `copies_fit`: host_gather's pinned copies of the slots fit the session's
  // max_session_bytes (else sm from the start).
  explicit AutoProducer(int threads, double max_gather_share = kMaxGatherShare, bool copies_fit = true);

  BatchProducer current() const { return current_; }
  // What it chose and why, in words (gnnctl stats).
  const std::string& why() const { return why_; }
  // A batch delivered `interval` seconds after the previous one; its rows took `gather` seconds on the host
  // (0 for a batch the SMs gathered), its GPU part `gpu` seconds. True when this batch changed the choice.
  bool Delivered(double interval, double gather, double gpu);
  // A new epoch: the window starts over.
  void Restart();

 private:
  int threads_;
  double max_gather_share_;
  BatchProducer current_;
  std::string why_;
  int settle_ = kSettleBatches;
  int batches_ = 0;
  double seconds_ = 0, gather_ = 0, gpu_ = 0;
};

}  // namespace gnnd
