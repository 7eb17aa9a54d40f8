// The sampling rule, written once for the CPU and CUDA backends (host and device code include it):
// uniform neighbor sampling without replacement, PyG NeighborLoader semantics. Which k of a node's d
// in-neighbor positions are taken is a pure function of (seed, epoch, batch, hop, node id), so both
// backends, any thread count and any schedule give bit-identical batches.
#pragma once

#include <cstdint>

#include "common/base/philox.h"

namespace gnnd {

// Philox key purposes: each kind of draw under a session seed gets its own key.
enum class RandomPurpose : uint64_t { kNeighbors = 1, kSeedPermutation = 2, kNegatives = 3 };

struct SamplingKey {
  uint32_t key0, key1;
};

// The key for all draws of one purpose in one epoch.
GNND_HOST_DEVICE SamplingKey MakeSamplingKey(uint64_t seed, uint64_t epoch, RandomPurpose purpose) {
  const uint64_t k = Mix64(seed ^ Mix64(epoch * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(purpose)));
  return {static_cast<uint32_t>(k), static_cast<uint32_t>(k >> 32)};
}

// How many in-neighbors a node of in-degree `degree` contributes: all of them when fanout < 0 or
// degree <= fanout, else fanout.
GNND_HOST_DEVICE int64_t SampleCount(int64_t degree, int32_t fanout) {
  return (fanout < 0 || degree <= fanout) ? degree : fanout;
}

// Chooses k = SampleCount(degree, fanout) < degree distinct positions in [0, degree) uniformly
// (Floyd's algorithm) and writes them to positions[0..k) in ascending order. Draws come from Philox
// under `key` with counter (node, relation, hop, batch, block): node < 2^48 (its id within its type) in
// the low 48 bits, the relation (< 256; 0 for a homogeneous graph) in the next 8, hop (1-based) in the
// top 8. `batch` is the global batch index (step * world_size + rank). Call only when k < degree
// (otherwise take positions 0..degree-1).
template <typename Position>
GNND_HOST_DEVICE void ChoosePositions(SamplingKey key, uint64_t batch, uint32_t hop, uint32_t relation, uint64_t node,
                                      int64_t degree, int64_t k, Position* positions) {
  const Philox4x32 base = {{static_cast<uint32_t>(node),
                            static_cast<uint32_t>(node >> 32) | (relation << 16) | (hop << 24),
                            static_cast<uint32_t>(batch), 0}};
  Philox4x32 words{};
  for (int64_t i = 0; i < k; ++i) {
    if ((i & 1) == 0) {  // two 64-bit draws per Philox block
      Philox4x32 counter = base;
      counter.v[3] = static_cast<uint32_t>(i >> 1);
      words = Philox4x32_10(counter, key.key0, key.key1);
    }
    const uint64_t random = (static_cast<uint64_t>(words.v[(i & 1) * 2]) << 32) | words.v[(i & 1) * 2 + 1];
    const int64_t j = degree - k + i;  // Floyd: pick t in [0, j]; if taken, take j
    Position t = static_cast<Position>(Below64(random, static_cast<uint64_t>(j) + 1));
    // Insert t (or j) keeping positions[0..i) sorted; j exceeds every earlier pick, so it goes last.
    int64_t at = i;
    while (at > 0 && positions[at - 1] > t) --at;
    if (at > 0 && positions[at - 1] == t) {
      positions[i] = static_cast<Position>(j);
      continue;
    }
    for (int64_t m = i; m > at; --m) positions[m] = positions[m - 1];
    positions[at] = t;
  }
}

}  // namespace gnnd
