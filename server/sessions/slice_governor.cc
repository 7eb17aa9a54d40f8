#include "server/sessions/slice_governor.h"

#include <limits>

namespace gnnd {

SliceGovernor::Move SliceGovernor::Delivered(double seconds, double idle, double fill) {
  if (settle_ > 0) {
    --settle_;
    return Move::kNone;
  }
  ++batches_;
  seconds_ += seconds;
  idle_ += idle;
  fill_ += fill;
  if (batches_ < kWindowBatches || seconds_ < kWindowSeconds) return Move::kNone;
  const double mean_fill = fill_ / batches_;
  const double idle_share = idle_ / seconds_;
  batches_ = 0;
  seconds_ = idle_ = fill_ = 0;
  last_fill_ = mean_fill;
  if (grown_from_fill_ > 0) {
    const bool paid = mean_fill * kMinSpeedup <= grown_from_fill_;
    grown_from_fill_ = 0;
    if (!paid) return Move::kBack;
    grown_here_ = true;
  }
  if (idle_share < kGrowBelowIdle) return Move::kGrow;
  return idle_share > kShrinkAboveIdle && !grown_here_ ? Move::kShrink : Move::kStay;
}

void SliceGovernor::Moved(bool judge) {
  Restart();
  grown_from_fill_ = judge ? last_fill_ : 0;
  grown_here_ = false;
}

void SliceGovernor::Restart() {
  settle_ = kSettleBatches;
  batches_ = 0;
  seconds_ = idle_ = fill_ = 0;
}

void SliceLevels::Join(const void* session) { busy_at_[session] = -std::numeric_limits<double>::infinity(); }

bool SliceLevels::Leave(const void* session) {
  busy_at_.erase(session);
  if (!busy_at_.empty()) return false;
  level_ = 0;
  ceiling_ = top_;
  return true;
}

bool SliceLevels::Grow(const void* session, int from, double now) {
  busy_at_[session] = now;
  if (!CanGrow(from)) return false;
  ++level_;
  return true;
}

bool SliceLevels::Back(const void* session, int from, double now) {
  busy_at_[session] = now;
  if (from != level_ || level_ == 0) return false;
  ceiling_ = --level_;
  return true;
}

bool SliceLevels::Shrink(const void* session, int from, double now) {
  busy_at_[session] = -std::numeric_limits<double>::infinity();
  if (from != level_ || level_ == 0) return false;
  for (const auto& [other, busy_at] : busy_at_) {
    if (now - busy_at < kVetoSeconds) return false;
  }
  --level_;
  return true;
}

}  // namespace gnnd
