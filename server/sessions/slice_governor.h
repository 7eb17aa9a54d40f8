// How GPU producers' slices of SMs are judged under producer_sms auto (producer_slices.h). Pure logic, what a
// session measures in, a move out:
// - SliceGovernor, per session, from the batches it delivers: a producer that is nearly never idle (waiting
//   on the trainer) is what the trainer waits for, so it asks for the next larger slice; the first window on a
//   slice it asked for shows whether its batches got faster, and if not it asks to go back (the bound is
//   elsewhere, PCIe say, and the SMs are worth more to the trainer); a producer idle most of the time asks
//   for a smaller slice, unless it grew to this one itself (a shrink would only bring the grow back).
// - SliceLevels, per GPU: the slice its sessions share, moved up by any session's ask, down for good by a
//   grow that did not pay, and down by one at a session's ask unless another found the slice busy lately.
#pragma once

#include <map>

namespace gnnd {

class SliceGovernor {
 public:
  // kNone: no window ended with this batch; kStay: one ended and the slice suits it.
  enum class Move { kNone, kStay, kGrow, kShrink, kBack };

  // A window ends after this many batches and at least this much wall time (a fast trainer's batches come
  // every few ms; one window must span more than a scheduling hiccup).
  static constexpr int kWindowBatches = 8;
  static constexpr double kWindowSeconds = 0.25;
  // Batches left out after a start or a move (the pipeline fills, graphs are captured on the new slice).
  static constexpr int kSettleBatches = 2;
  // Grow when the producer was idle less than this share of a window; shrink when more than this one (half
  // the SMs then keep it busy at most 80 % of the time if its fills take at most twice as long: below the
  // grow mark, so a shrink does not bring a grow back).
  static constexpr double kGrowBelowIdle = 0.10;
  static constexpr double kShrinkAboveIdle = 0.60;
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
  bool grown_here_ = false;     // this session grew to the current slice and it paid: it asks no shrink
};

// The slice (a level, 0 the smallest, `levels - 1` the whole GPU) that the sessions on one GPU share. Sessions
// are keys only; `now` is seconds on any steady clock. Not thread-safe (ProducerSlices locks).
class SliceLevels {
 public:
  // A session whose window found its slice busy (it stayed, grew or went back) keeps the slice from
  // shrinking this long: a slow trainer's window spans seconds, and a session that delivers nothing (its
  // trainer paused, or gone quiet) must not hold the slice up for ever.
  static constexpr double kVetoSeconds = 10;

  explicit SliceLevels(int levels) : top_(levels - 1), ceiling_(levels - 1) {}

  int level() const { return level_; }
  void Join(const void* session);
  // Returns true when that was the last session: the next starts on level 0, under no ceiling.
  bool Leave(const void* session);
  // Whether a session on `from` may grow: `from` is current and below the ceiling.
  bool CanGrow(int from) const { return from == level_ && level_ < ceiling_; }
  // Moves up one level if CanGrow(from); true if it did.
  bool Grow(const void* session, int from, double now);
  // A session grew to `from` for nothing: moves down one level, and the ceiling with it, if `from` is current.
  bool Back(const void* session, int from, double now);
  // The session asks to shrink from `from`: the level moves down one if `from` is current, above 0, and no
  // other session found the slice busy in the last kVetoSeconds. True if it moved.
  bool Shrink(const void* session, int from, double now);
  // The session's window suited its slice (busy enough to keep it).
  void Stay(const void* session, double now) { busy_at_[session] = now; }
  // The next level cannot be made: no growing past this one.
  void Cap() { ceiling_ = level_; }

 private:
  const int top_;
  int level_ = 0;
  int ceiling_;
  std::map<const void*, double> busy_at_;  // per session: when a window last found its slice busy (or -inf)
};

}  // namespace gnnd
