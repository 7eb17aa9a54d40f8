// Gather phase of the CUDA backend: each batch node's feature row, one warp per row, from the hot tier
// (GPU memory, this GPU's or an NVLink peer's) when the node is hot, else zero-copy from registered host
// memory; and the seeds' labels the same way.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "common/batch/batch.h"
#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

struct GatherOptions {
  // Rows that are not multiples of 16 bytes: read with 16-byte loads shifted through shared memory
  // (when a block's staging fits in `shared_bytes_limit`), else with the widest narrower loads.
  bool shifted = true;
  size_t shared_bytes_limit = 48 * 1024;  // the device's per-block limit (cudaDevAttrMaxSharedMemoryPerBlock)
  // Rows of 16-byte multiples: how many rows a warp reads at once, 1 or kRowsPerWarp (0: by the stream,
  // RowsPerWarpOn).
  int rows_per_warp = 0;
};

// A warp reads this many rows at once in a slice of few SMs.
inline constexpr int kRowsPerWarp = 4;

// Rows a warp reads at once on `stream`: kRowsPerWarp on a green context of at most 16 SMs, where beside a trainer
// under MPS the producer's SMs hold few of its warps and each zero-copy read takes microseconds; else 1: on a whole
// idle GPU more reads in flight slow them down (bench/notes/gather.md).
int RowsPerWarpOn(cudaStream_t stream);

// Where rows are read from: `host` (num_rows rows of row_bytes, device-visible), except those of nodes
// that `hot` holds. Without `host` (features on storage, staged by the host) only hot rows are written.
struct RowSource {
  const char* host = nullptr;
  int64_t num_rows = 0;
  size_t row_bytes = 0;
  HotView hot;
};

// out[i] = the row of ids[i], for i < *count (device memory; null: all) and i < bound.
absl::Status GatherRows(const int64_t* ids, const int64_t* count, int64_t bound, const RowSource& source,
                        const GatherOptions& options, void* out, cudaStream_t stream);

}  // namespace gnnd::cuda
