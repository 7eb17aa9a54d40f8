// How a GPU session's producer judges its slice of SMs under producer_sms auto (producer_slices.h), from the
// batches it delivers: a producer that is nearly never idle (waiting on the trainer) is what the trainer
// waits for, so it asks for the next larger slice; the first window on a slice it asked for shows whether
// the slice made its batches faster, and if not it asks to go back (the bound is elsewhere, PCIe say, and
// the SMs are worth more to the trainer). Pure logic: what a session measures goes in, a move comes out.
#pragma once

namespace gnnd {

class SliceGovernor {
 public:
  enum class Move { kStay, kGrow, kBack };

  // A window ends after this many batches and at least this much wall time (a fast trainer's batches come
  // every few ms; one window must span more than a scheduling hiccup).
  static constexpr int kWindowBatches = 8;
  static constexpr double kWindowSeconds = 0.25;
  // Batches left out after a start or a move (the pipeline fills, graphs are captured on the new slice).
  static constexpr int kSettleBatches = 2;
  // Grow when the producer was idle less than this share of a window.
  static constexpr double kGrowBelowIdle = 0.10;
  // A grown slice must make a batch's fill at least this much faster (mean fill time ratio), else back.
  static constexpr double kMinSpeedup = 1.15;

  // A batch delivered `seconds` after the previous one, of which the producer spent `idle` waiting on the
  // trainer (every slot with it); `fill` the batch's time on the GPU. Returns what to do with the slice.
  Move Delivered(double seconds, double idle, double fill);
  // The session's producer moved to another slice: windows start over. `judge`: the move was this session's
  // kGrow, so the next window decides whether it paid.
  void Moved(bool judge);
  // A new epoch: the window starts over (the trainer may have paused between epochs); a grow being judged
  // still is.
  void Restart();

 private:
  int settle_ = kSettleBatches;
  int batches_ = 0;
  double seconds_ = 0, idle_ = 0, fill_ = 0;
  double grown_from_fill_ = 0;  // the mean fill before this session's grow, while it is judged (0: none)
  double last_fill_ = 0;        // the last window's mean fill
};

}  // namespace gnnd
