#include "server/sessions/auto_producer.h"

#include "absl/strings/str_format.h"

namespace gnnd {

AutoProducer::AutoProducer(int threads, bool copies_fit, double max_gather_share)
    : threads_(threads), max_gather_share_(max_gather_share) {
  decided_ = true;
  if (!copies_fit) {
    why_ = "sm: host_gather's pinned copies of the slots would take the session past max_session_bytes";
  } else if (threads_ < kMinThreads) {
    why_ = absl::StrFormat("sm: gnnd has %d producer thread(s) to gather rows on (host_gather wants %d)", threads_,
                           kMinThreads);
  } else {
    decided_ = false;
    current_ = BatchProducer::kHostGather;
    why_ = absl::StrFormat("host_gather: trying host_gather and sm in turn, %d windows (%d producer threads)",
                           kTrialWindows, threads_);
  }
}

void AutoProducer::Restart() {
  settle_ = kSettleBatches;
  batches_ = 0;
  seconds_ = gather_ = 0;
}

bool AutoProducer::Delivered(double interval, bool on_host, double gather) {
  if (decided_ && current_ == BatchProducer::kSm) return false;           // for good
  if (on_host != (current_ == BatchProducer::kHostGather)) return false;  // made before the last change
  if (settle_ > 0) {
    --settle_;
    return false;
  }
  ++batches_;
  seconds_ += interval;
  gather_ += gather;
  if (batches_ < kWindowBatches || seconds_ < kWindowSeconds) return false;
  const double each = seconds_ / batches_, gathered = gather_ / batches_;
  Restart();  // the next window
  return EndWindow(each, gathered);
}

bool AutoProducer::EndWindow(double each, double gathered) {
  const bool on_host = current_ == BatchProducer::kHostGather;
  if (on_host && gathered > max_gather_share_ * each) {  // the host is the bound, trial or not
    decided_ = true;
    current_ = BatchProducer::kSm;
    why_ = absl::StrFormat(
        "sm: host_gather's %d producer threads took %.1f ms a batch, the trainer one every %.1f ms (over %.0f %%): "
        "the host was the bound",
        threads_, gathered * 1e3, each * 1e3, max_gather_share_ * 100);
    return true;
  }
  if (decided_) {  // host_gather kept: say how it goes
    why_ = absl::StrFormat(
        "host_gather: the trainer took a batch every %.1f ms with it, %.1f ms with sm; %d producer threads gather "
        "a batch's rows in %.1f ms",
        each * 1e3, trial_seconds_[1] * 1e3, threads_, gathered * 1e3);
    return false;
  }
  trial_seconds_[on_host ? 0 : 1] += each / (kTrialWindows / 2);
  if (++trial_ < kTrialWindows) {
    const BatchProducer was = current_;
    current_ = kTrialOrder[trial_];
    return current_ != was;
  }
  decided_ = true;
  const double host = trial_seconds_[0], sm = trial_seconds_[1];
  const BatchProducer was = current_;
  if (sm * (1 + kTie) < host) {
    current_ = BatchProducer::kSm;
    why_ = absl::StrFormat("sm: the trainer took a batch every %.1f ms with it, %.1f ms with host_gather", sm * 1e3,
                           host * 1e3);
  } else {
    current_ = BatchProducer::kHostGather;
    why_ = absl::StrFormat("host_gather: the trainer took a batch every %.1f ms with it, %.1f ms with sm", host * 1e3,
                           sm * 1e3);
  }
  return current_ != was;
}

}  // namespace gnnd
