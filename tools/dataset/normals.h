// Standard normal values for the synthetic generators, two from each random word: the normal distribution's
// quantile at (k + 1/2) / 65536 for each 16-bit half k, from a table made once (a discrete normal with exact
// quantiles and tails to ±4.3). A lookup per value where Box-Muller took a logarithm, a square root and a sine or
// cosine, which were most of a feature-heavy preset's generation time.
#pragma once

#include <cstdint>

namespace gnnd::dataset {

// The 65536 quantiles, ascending (thread-safe; made on first use).
const float* NormalQuantiles();

// The normal values of `word`'s low and high 16 bits.
inline void TwoNormals(const float* quantiles, uint32_t word, float* out) {
  out[0] = quantiles[word & 0xffff];
  out[1] = quantiles[word >> 16];
}

}  // namespace gnnd::dataset
