// Philox4x32-10 (Salmon et al., SC'11): a counter-based RNG, so any random number is a pure function of
// (key, counter). It is gnnd's RNG, shared by the CPU and CUDA code: the synthetic generator, seed
// permutations and neighbor sampling draw from it, which is what makes results independent of thread count
// and identical across backends. The one exception is LABOR's number per source (common/batch/sampling.h,
// namespace labor): SplitMix64, Mix64 below over a counter, as pure a function of its inputs and one 64-bit
// finalizer instead of ten Philox rounds, since a LABOR draw takes one for every in-edge it visits.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GNND_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GNND_HOST_DEVICE inline
#endif

namespace gnnd {

struct Philox4x32 {
  uint32_t v[4];
};

namespace philox_detail {
constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

GNND_HOST_DEVICE void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
#if defined(__CUDA_ARCH__)
  *hi = __umulhi(a, b);
  *lo = a * b;
#else
  const uint64_t product = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(product >> 32);
  *lo = static_cast<uint32_t>(product);
#endif
}
}  // namespace philox_detail

// Ten rounds of Philox4x32 on `counter` under the 64-bit key (key0, key1).
GNND_HOST_DEVICE Philox4x32 Philox4x32_10(Philox4x32 counter, uint32_t key0, uint32_t key1) {
  using namespace philox_detail;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kWeyl0;
      key1 += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, counter.v[0], &hi0, &lo0);
    MulHiLo(kMul1, counter.v[2], &hi1, &lo1);
    counter = {{hi1 ^ counter.v[1] ^ key0, lo1, hi0 ^ counter.v[3] ^ key1, lo0}};
  }
  return counter;
}

// Four random words for position `index` of stream `stream` under a 64-bit seed. Different streams
// (one per purpose: features, edges, splits, ...) never share a counter.
GNND_HOST_DEVICE Philox4x32 RandomWords(uint64_t seed, uint32_t stream, uint64_t index, uint32_t sub = 0) {
  return Philox4x32_10({{static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), stream, sub}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// splitmix64's finalizer: a cheap 64-bit mixing function, for deriving keys and hashing ids.
GNND_HOST_DEVICE uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A uniform integer in [0, range) from 64 random bits (multiply-high; bias below range / 2^64).
GNND_HOST_DEVICE uint64_t Below64(uint64_t random, uint64_t range) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(random, range);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(random) * range) >> 64);
#endif
}

// A uniform float in [0, 1) from one random word (24 bits, exact in float).
GNND_HOST_DEVICE float UniformFloat(uint32_t word) { return static_cast<float>(word >> 8) * (1.0f / 16777216.0f); }

// A uniform double in [0, 1) from two random words (53 bits).
GNND_HOST_DEVICE double UniformDouble(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(bits & ((uint64_t{1} << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace gnnd
