// Gather phase of the CUDA backend: each batch node's feature row, read zero-copy from registered host
// memory (or wherever the features live), one warp per row, and the seeds' labels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "common/batch.h"
#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

struct GatherOptions {
  // Rows that are not multiples of 16 bytes: read with 16-byte loads shifted through shared memory
  // (when a block's staging fits in `shared_bytes_limit`), else with the widest narrower loads.
  bool shifted = true;
  size_t shared_bytes_limit = 48 * 1024;  // the device's per-block limit (cudaDevAttrMaxSharedMemoryPerBlock)
};

// Copies the features of the batch's nodes (w.state->num_nodes of at most `max_nodes`) into out.features.
absl::Status GatherFeatures(const Workspace& w, const DeviceGraph& graph, int64_t max_nodes,
                            const GatherOptions& options, BatchView out, cudaStream_t stream);
// Copies the labels of the `num_seeds` seeds into out.labels.
absl::Status GatherLabels(const DeviceGraph& graph, int64_t num_seeds, BatchView out, cudaStream_t stream);

}  // namespace gnnd::cuda
