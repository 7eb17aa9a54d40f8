#include "server/stage_histograms.h"

#include <algorithm>

namespace gnnd {

void StageHistograms::Cell::Observe(double seconds) {
  const size_t bucket = std::lower_bound(kBounds.begin(), kBounds.end(), seconds) - kBounds.begin();
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[bucket];
  sum_ += seconds;
  ++count_;
}

StageHistograms::Cell& StageHistograms::Get(const std::string& stage, const std::string& dataset,
                                            const std::string& device) {
  std::lock_guard<std::mutex> lock(mutex_);
  return cells_[{stage, dataset, device}];  // std::map: the cell never moves
}

void StageHistograms::AppendTo(v1::Stats& stats) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [key, cell] : cells_) {
    std::lock_guard<std::mutex> cell_lock(cell.mutex_);
    if (cell.count_ == 0) continue;  // a stage this backend does not measure (GPU: sample, gather)
    v1::StageHistogram& h = *stats.add_histograms();
    std::tie(*h.mutable_stage(), *h.mutable_dataset(), *h.mutable_device()) = key;
    h.mutable_bounds()->Add(kBounds.begin(), kBounds.end());
    h.mutable_counts()->Add(cell.counts_.begin(), cell.counts_.end());
    h.set_sum(cell.sum_);
    h.set_count(cell.count_);
  }
}

}  // namespace gnnd
