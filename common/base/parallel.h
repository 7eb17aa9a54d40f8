// A fork-join loop over an index range, for the bulk passes of import, validation and loading.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace gnnd {

// std::thread::hardware_concurrency(), at least 1.
int DefaultThreads();

// Calls fn(begin, end) for consecutive chunks of [0, n) of `chunk` indices (the last one shorter), on
// up to `threads` threads, and returns when all are done. Chunks are handed out dynamically, so fn must
// not depend on which thread runs it. threads <= 1 runs inline.
void ParallelFor(int64_t n, int64_t chunk, int threads, const std::function<void(int64_t, int64_t)>& fn);

// [0, n) in rounds of `chunk` x `threads` indices, for work made in parallel and consumed in order (a writer):
// make(first, begin, end) fills [begin, end) of the round that starts at `first` (ParallelFor's chunks, offsets
// within the round), then take(first, count) consumes the round on the calling thread. Returns take's first
// error.
absl::Status ParallelRounds(int64_t n, int64_t chunk, int threads,
                            const std::function<void(int64_t first, int64_t begin, int64_t end)>& make,
                            const std::function<absl::Status(int64_t first, int64_t count)>& take);

}  // namespace gnnd
