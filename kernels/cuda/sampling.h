// Sampling phase of the CUDA backend: for one hop, how many in-neighbors each frontier node contributes
// (the shared rule, common/batch/sampling.h), their offsets, and the sampled neighbors themselves.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "common/batch/batch.h"
#include "common/batch/sampling.h"
#include "kernels/cuda/dedup.h"
#include "kernels/cuda/device_dataset.h"
#include "kernels/cuda/workspace.h"

namespace gnnd::cuda {

// Samples hop `hop` (0-based) of `bound.frontier` frontier nodes at most: writes each sampled edge's
// destination (out.edge_dst), its source's global id (w.sampled) and the per-node offsets (w.offsets,
// whose entry bound.frontier is the hop's edge count), and inserts the sources into the node table (the
// ids it adds into w.keys: dedup.h's AddHopNodes goes on from there).
// The draws use the batch's key and index (w.args).
absl::Status SampleHop(Workspace& w, const DeviceGraph& graph, const HopBound& bound, int hop, int32_t fanout,
                       const IdRange& ids, BatchView out, cudaStream_t stream);

}  // namespace gnnd::cuda
