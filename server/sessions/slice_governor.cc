#include "server/sessions/slice_governor.h"

namespace gnnd {

SliceGovernor::Move SliceGovernor::Delivered(double seconds, double idle, double fill) {
  if (settle_ > 0) {
    --settle_;
    return Move::kStay;
  }
  ++batches_;
  seconds_ += seconds;
  idle_ += idle;
  fill_ += fill;
  if (batches_ < kWindowBatches || seconds_ < kWindowSeconds) return Move::kStay;
  const double mean_fill = fill_ / batches_;
  const bool busy = idle_ < kGrowBelowIdle * seconds_;
  batches_ = 0;
  seconds_ = idle_ = fill_ = 0;
  last_fill_ = mean_fill;
  if (grown_from_fill_ > 0) {
    const bool paid = mean_fill * kMinSpeedup <= grown_from_fill_;
    grown_from_fill_ = 0;
    if (!paid) return Move::kBack;
  }
  return busy ? Move::kGrow : Move::kStay;
}

void SliceGovernor::Moved(bool judge) {
  Restart();
  grown_from_fill_ = judge ? last_fill_ : 0;
}

void SliceGovernor::Restart() {
  settle_ = kSettleBatches;
  batches_ = 0;
  seconds_ = idle_ = fill_ = 0;
}

}  // namespace gnnd
