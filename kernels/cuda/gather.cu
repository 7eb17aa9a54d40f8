#include "kernels/cuda/gather.h"

namespace gnnd::cuda {
namespace {

// One warp per row, `Vector`-wide loads (the widest that the row size allows).
template <typename Vector>
__global__ void GatherKernel(const HopState* state, const int64_t* node_ids, const char* features, size_t row_bytes,
                             char* out, int64_t bound) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (i >= bound || i >= state->num_nodes) return;
  const auto* src = reinterpret_cast<const Vector*>(features + node_ids[i] * row_bytes);
  auto* dst = reinterpret_cast<Vector*>(out + i * row_bytes);
  const size_t words = row_bytes / sizeof(Vector);
  for (size_t w = lane; w < words; w += kWarp) dst[w] = src[w];
}

// 16-byte words of shared memory one warp stages a row in, with room for the shift.
__host__ __device__ size_t StageWords(size_t row_bytes) { return (row_bytes + 31) / 16 + 1; }

// Rows whose size is not a multiple of 16 bytes start at arbitrary 4- or 2-byte boundaries. Reading them
// with narrow loads turns each row into many small PCIe reads; instead each warp reads the 16-byte-aligned
// span covering the row with 16-byte loads into shared memory, then writes the row out shifted into
// place. `Word` is the widest unit that divides the row size (4 or 2 bytes).
template <typename Word>
__global__ void GatherShiftedKernel(const HopState* state, const int64_t* node_ids, const char* features,
                                    size_t features_bytes, size_t row_bytes, char* out, int64_t bound) {
  extern __shared__ uint4 stage[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  uint4* mine = stage + warp * StageWords(row_bytes);
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
  if (i >= bound || i >= state->num_nodes) return;
  const size_t start = static_cast<size_t>(node_ids[i]) * row_bytes;
  const size_t first = start & ~size_t{15}, end = start + row_bytes;
  const size_t head = start - first, chunks = (end - first + 15) / 16;
  for (size_t c = lane; c < chunks; c += kWarp) {
    const size_t at = first + 16 * c;
    if (at + 16 <= features_bytes) {
      mine[c] = *reinterpret_cast<const uint4*>(features + at);
    } else {  // the array's last bytes: never read past its end
      const Word* tail = reinterpret_cast<const Word*>(features + at);
      Word* dst = reinterpret_cast<Word*>(mine + c);
      for (size_t w = 0; at + (w + 1) * sizeof(Word) <= features_bytes && w < 16 / sizeof(Word); ++w) dst[w] = tail[w];
    }
  }
  __syncwarp();
  const Word* src = reinterpret_cast<const Word*>(reinterpret_cast<const char*>(mine) + head);
  Word* dst = reinterpret_cast<Word*>(out + i * row_bytes);
  for (size_t w = lane; w < row_bytes / sizeof(Word); w += kWarp) dst[w] = src[w];
}

__global__ void LabelsKernel(const int64_t* node_ids, const int64_t* labels, int64_t* out, int64_t num_seeds) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < num_seeds) out[i] = labels[node_ids[i]];
}

}  // namespace

absl::Status GatherFeatures(const Workspace& w, const DeviceGraph& graph, int64_t max_nodes,
                            const GatherOptions& options, BatchView out, cudaStream_t stream) {
  const size_t row = FeatureRowBytes(graph.manifest);
  const char* features = static_cast<const char*>(graph.features);
  char* dst = static_cast<char*>(out.features);
  const int blocks = Blocks(max_nodes * kWarp);
  const size_t stage_bytes = (kThreads / kWarp) * StageWords(row) * 16;
  if (row % 16 != 0 && options.shifted && stage_bytes <= options.shared_bytes_limit) {
    const size_t features_bytes = row * static_cast<size_t>(graph.manifest.num_nodes());
    return DispatchWord<4>(row, [&](auto word) -> absl::Status {
      GNND_LAUNCH(GatherShiftedKernel<decltype(word)>, blocks, kThreads, stage_bytes, stream, w.state, out.node_ids,
                  features, features_bytes, row, dst, max_nodes);
      return absl::OkStatus();
    });
  }
  return DispatchWord<16>(row, [&](auto word) -> absl::Status {
    GNND_LAUNCH(GatherKernel<decltype(word)>, blocks, kThreads, 0, stream, w.state, out.node_ids, features, row, dst,
                max_nodes);
    return absl::OkStatus();
  });
}

absl::Status GatherLabels(const DeviceGraph& graph, int64_t num_seeds, BatchView out, cudaStream_t stream) {
  GNND_LAUNCH(LabelsKernel, Blocks(num_seeds), kThreads, 0, stream, out.node_ids, graph.labels, out.labels, num_seeds);
  return absl::OkStatus();
}

}  // namespace gnnd::cuda
