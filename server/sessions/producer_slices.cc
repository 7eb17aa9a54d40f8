#include "server/sessions/producer_slices.h"

#include "common/base/log.h"
#include "common/base/status.h"

namespace gnnd {

// The smallest slice: a green context's SM granularity on Hopper is 8 (smaller requests round up to it).
constexpr int kSmallestSlice = 8;

absl::StatusOr<std::shared_ptr<ProducerSlices>> ProducerSlices::Create(int device) {
  GNND_ASSIGN_OR_RETURN(const int total, cuda::SmCount(device));
  std::shared_ptr<ProducerSlices> slices(new ProducerSlices());
  slices->device_ = device;
  slices->total_sms_ = total;
  for (int sms = kSmallestSlice; sms < total; sms *= 2) slices->sizes_.push_back(sms);
  slices->sizes_.push_back(total);
  slices->contexts_.resize(slices->sizes_.size() - 1);
  slices->ceiling_ = static_cast<int>(slices->sizes_.size()) - 1;
  // The smallest slice now: a session that cannot have it fails at open, not at its first move.
  if (slices->contexts_.empty()) return slices;
  GNND_ASSIGN_OR_RETURN(slices->contexts_[0], cuda::GreenContext::Create(device, slices->sizes_[0]));
  slices->sizes_[0] = slices->contexts_[0]->sms();
  return slices;
}

ProducerSlices::Slice ProducerSlices::At(int level) const {
  const bool whole = level == static_cast<int>(contexts_.size());
  return {level, sizes_[level], whole ? nullptr : contexts_[level]->stream()};
}

ProducerSlices::Slice ProducerSlices::Join() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++sessions_;
  return At(level_);
}

void ProducerSlices::Leave() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--sessions_ > 0) return;
  if (level_ != 0) LogInfo("producer slice on cuda:%d: no sessions; the next starts on %d SMs", device_, sizes_[0]);
  level_ = 0;
  ceiling_ = static_cast<int>(sizes_.size()) - 1;
}

ProducerSlices::Slice ProducerSlices::Current() {
  std::lock_guard<std::mutex> lock(mutex_);
  return At(level_);
}

ProducerSlices::Slice ProducerSlices::Grow(int from) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (from != level_ || level_ >= ceiling_) return At(level_);
  const int next = level_ + 1;
  if (next < static_cast<int>(contexts_.size()) && contexts_[next] == nullptr) {
    absl::StatusOr<std::unique_ptr<cuda::GreenContext>> context = cuda::GreenContext::Create(device_, sizes_[next]);
    if (!context.ok()) {
      LogWarning("producer slice on cuda:%d: stays at %d SMs (%s)", device_, sizes_[level_],
                 context.status().ToString());
      ceiling_ = level_;
      return At(level_);
    }
    contexts_[next] = *std::move(context);
    sizes_[next] = contexts_[next]->sms();
  }
  level_ = next;
  LogInfo("producer slice on cuda:%d: %d -> %d of %d SMs (a trainer waited for its batches)", device_, sizes_[from],
          sizes_[next], total_sms_);
  return At(level_);
}

ProducerSlices::Slice ProducerSlices::Back(int from) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (from == level_ && level_ > 0) {
    level_ = from - 1;
    ceiling_ = level_;
    LogInfo("producer slice on cuda:%d: back to %d SMs (%d made batches no faster)", device_, sizes_[level_],
            sizes_[from]);
  }
  return At(level_);
}

}  // namespace gnnd
