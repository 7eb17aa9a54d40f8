// A fork-join loop over an index range, for the bulk passes of import, validation and loading.
#pragma once

#include <cstdint>
#include <functional>

namespace gnnd {

// std::thread::hardware_concurrency(), at least 1.
int DefaultThreads();

// Calls fn(begin, end) for consecutive chunks of [0, n) of `chunk` indices (the last one shorter), on
// up to `threads` threads, and returns when all are done. Chunks are handed out dynamically, so fn must
// not depend on which thread runs it. threads <= 1 runs inline.
void ParallelFor(int64_t n, int64_t chunk, int threads, const std::function<void(int64_t, int64_t)>& fn);

}  // namespace gnnd
