#include "server/sessions/auto_producer.h"

#include "absl/strings/str_format.h"

namespace gnnd {

AutoProducer::AutoProducer(int threads, double max_gather_share, bool copies_fit)
    : threads_(threads), max_gather_share_(max_gather_share) {
  if (!copies_fit) {
    current_ = BatchProducer::kSm;
    why_ = "sm: host_gather's pinned copies of the slots would take the session past max_session_bytes";
    return;
  }
  if (threads_ < kMinThreads) {
    current_ = BatchProducer::kSm;
    why_ = absl::StrFormat("sm: gnnd has %d producer thread(s) to gather rows on (host_gather wants %d)", threads_,
                           kMinThreads);
    return;
  }
  current_ = BatchProducer::kHostGather;
  why_ = absl::StrFormat("host_gather: %d producer threads gather the rows, no SM reads them (nothing measured yet)",
                         threads_);
}

void AutoProducer::Restart() {
  settle_ = kSettleBatches;
  batches_ = 0;
  seconds_ = gather_ = gpu_ = 0;
}

bool AutoProducer::Delivered(double interval, double gather, double gpu) {
  if (current_ != BatchProducer::kHostGather) return false;  // sm is for good
  if (settle_ > 0) {
    --settle_;
    return false;
  }
  ++batches_;
  seconds_ += interval;
  gather_ += gather;
  gpu_ += gpu;
  if (batches_ < kWindowBatches || seconds_ < kWindowSeconds) return false;
  const double each = seconds_ / batches_, gathered = gather_ / batches_, sampled = gpu_ / batches_;
  Restart();
  settle_ = 0;
  if (gathered <= max_gather_share_ * each) {
    why_ = absl::StrFormat(
        "host_gather: %d producer threads gather a batch's rows in %.1f ms, the trainer takes one every %.1f ms "
        "(the GPU samples it in %.1f ms)",
        threads_, gathered * 1e3, each * 1e3, sampled * 1e3);
    return false;
  }
  current_ = BatchProducer::kSm;
  why_ = absl::StrFormat(
      "sm: host_gather's %d producer threads took %.1f ms a batch, the trainer one every %.1f ms (over %.0f %%): the "
      "host was the bound",
      threads_, gathered * 1e3, each * 1e3, max_gather_share_ * 100);
  return true;
}

}  // namespace gnnd
