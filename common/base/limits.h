// Every default and bound of the daemon's sizing fields, written once: the config's defaults
// (FinishDaemonConfig), its checks, the open request's checks (common/wire/open_request.h) and
// admission all read them here.
#pragma once

#include <cstdint>
#include <limits>

namespace gnnd {

// Bounds that saturate at INT64_MAX instead of overflowing (capacities of huge graphs and fanouts of -1).
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max() : a + b;
}
inline int64_t SaturatingMul(int64_t a, int64_t b) {
  return b != 0 && a > std::numeric_limits<int64_t>::max() / b ? std::numeric_limits<int64_t>::max() : a * b;
}

// Beyond these a value is a mistake, and arithmetic on it could overflow.
inline constexpr int kMaxThreads = 1024;                  // producer_threads, --threads
inline constexpr uint64_t kMaxSessions = 1 << 20;         // max_sessions
inline constexpr int kMaxSlots = 64;                      // default_slots, open.num_slots
inline constexpr int64_t kMaxSeedIds = int64_t{8} << 20;  // open.seed_ids
// The largest open request gnnd reads: kMaxSeedIds ids and as many times, each a varint of up to 10 bytes,
// and 1 MiB for the rest (a link session's 4 M pairs and their times take less).
inline constexpr int kMaxOpenRequestBytes = static_cast<int>(2 * 10 * kMaxSeedIds + (1 << 20));
inline constexpr int32_t kMaxNegativeAmount = 1024;  // negatives per positive: neg_amount, a split's fixed ones
inline constexpr int32_t kMaxCudaFanout = 4096;      // a CUDA session's fanout below a node's in-degree

// What a field left at 0 means.
inline constexpr uint64_t kDefaultMaxSessions = 256;
inline constexpr int kDefaultSlots = 2;
inline constexpr uint64_t kDefaultMaxSessionBytes = uint64_t{8} << 30;

}  // namespace gnnd
