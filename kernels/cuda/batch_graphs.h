// A sampler's batches as captured CUDA graphs: a batch's launches are the same for every batch written to
// the same output (what varies is written to the device first), so each output's two phases (sampling,
// gather) are captured once and replayed. Shared by the homogeneous and typed CUDA samplers.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "absl/status/statusor.h"

namespace gnnd::cuda {

class BatchGraphs {
 public:
  struct Phases {
    cudaGraphExec_t sampling = nullptr, gather = nullptr;
  };
  using Enqueue = std::function<absl::Status()>;

  ~BatchGraphs() { Drop(); }
  // The graphs of output `out`, captured from `sampling` and `gather` (which launch on `stream`) the first
  // time; a new stream drops the graphs of the old one (captured work belongs to its stream's context).
  absl::StatusOr<Phases> For(const void* out, cudaStream_t stream, const Enqueue& sampling, const Enqueue& gather);
  // Enqueues a batch written to `out` on `stream`: replays its graphs (captured from `sampling` and `gather` the
  // first time), or launches both phases without graphs (use_graphs false, or the legacy default stream,
  // which cannot be captured); records `sampled` (if set) between the phases; the gather phase only if
  // `gather_rows` (else the host gathers this batch's rows; the phase is captured all the same, for the next).
  // `*sampling_enqueued` is set once the sampling phase is enqueued whole (a sampler resets its state before the
  // next batch otherwise).
  absl::Status Run(const void* out, cudaStream_t stream, bool use_graphs, const Enqueue& sampling,
                   const Enqueue& gather, bool gather_rows, cudaEvent_t sampled, bool* sampling_enqueued);
  // Destroys every graph; call before the stream they were captured on goes away.
  void Drop();

 private:
  struct Entry {
    const void* out;
    Phases phases;
  };
  std::vector<Entry> entries_;  // one per output (a session's slots: a handful)
  cudaStream_t stream_ = nullptr;
};

}  // namespace gnnd::cuda
