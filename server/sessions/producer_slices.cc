#include "server/sessions/producer_slices.h"

#include <chrono>

#include "common/base/log.h"
#include "common/base/status.h"

namespace gnnd {

// The smallest slice: a green context's SM granularity on Hopper is 8 (smaller requests round up to it).
constexpr int kSmallestSlice = 8;

absl::StatusOr<std::shared_ptr<ProducerSlices>> ProducerSlices::Create(int device) {
  GNND_ASSIGN_OR_RETURN(const int total, cuda::SmCount(device));
  std::vector<int> sizes;
  for (int sms = kSmallestSlice; sms < total; sms *= 2) sizes.push_back(sms);
  sizes.push_back(total);
  std::shared_ptr<ProducerSlices> slices(new ProducerSlices(static_cast<int>(sizes.size())));
  slices->device_ = device;
  slices->total_sms_ = total;
  slices->sizes_ = std::move(sizes);
  slices->contexts_.resize(slices->sizes_.size() - 1);
  // The smallest slice now: a session that cannot have it fails at open, not at its first move.
  if (slices->contexts_.empty()) return slices;
  GNND_ASSIGN_OR_RETURN(slices->contexts_[0], cuda::GreenContext::Create(device, slices->sizes_[0]));
  slices->sizes_[0] = slices->contexts_[0]->sms();
  return slices;
}

ProducerSlices::Slice ProducerSlices::At(int level) const {
  const bool whole = level == static_cast<int>(contexts_.size());
  return {level, whole ? nullptr : contexts_[level]->stream()};
}

void ProducerSlices::Log(int from, const char* why) const {
  LogInfo("producer slice on cuda:%d: %d -> %d of %d SMs (%s)", device_, sizes_[from], sizes_[levels_.level()],
          total_sms_, why);
}

ProducerSlices::Slice ProducerSlices::Join(const void* session) {
  std::lock_guard<std::mutex> lock(mutex_);
  levels_.Join(session);
  return At(levels_.level());
}

void ProducerSlices::Leave(const void* session) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int level = levels_.level();
  if (levels_.Leave(session) && level != 0) {
    LogInfo("producer slice on cuda:%d: no sessions; the next starts on %d SMs", device_, sizes_[0]);
  }
}

ProducerSlices::Slice ProducerSlices::Follow(const void* session, int from, SliceGovernor::Move move) {
  std::lock_guard<std::mutex> lock(mutex_);
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  switch (move) {
    case SliceGovernor::Move::kNone:
      break;
    case SliceGovernor::Move::kStay:
      levels_.Stay(session, now);
      break;
    case SliceGovernor::Move::kGrow: {
      const int next = from + 1;
      if (levels_.CanGrow(from) && next < static_cast<int>(contexts_.size()) && contexts_[next] == nullptr) {
        absl::StatusOr<std::unique_ptr<cuda::GreenContext>> made = cuda::GreenContext::Create(device_, sizes_[next]);
        if (!made.ok()) {
          LogWarning("producer slice on cuda:%d: stays at %d SMs (%s)", device_, sizes_[from],
                     made.status().ToString());
          levels_.Cap();
          break;
        }
        contexts_[next] = *std::move(made);
        sizes_[next] = contexts_[next]->sms();
      }
      if (levels_.Grow(session, from, now)) Log(from, "a trainer waited for its batches");
      break;
    }
    case SliceGovernor::Move::kBack:
      if (levels_.Back(session, from, now)) Log(from, "the larger slice made batches no faster; it stays below it");
      break;
    case SliceGovernor::Move::kShrink:
      if (levels_.Shrink(session, from, now)) Log(from, "its producers idled most of the time");
      break;
  }
  return At(levels_.level());
}

}  // namespace gnnd
