#include "kernels/cuda/gather.h"
#include "kernels/cuda/green_context.h"

namespace gnnd::cuda {
namespace {

// Where row `id` starts, and how many bytes from `base` may be read (a hot part is padded by 16 bytes, so
// a 16-byte-aligned read never leaves it; the host array's end is exact).
struct RowAt {
  const char* base;
  size_t offset;
  size_t limit;
};

__device__ RowAt Locate(const RowSource& s, int64_t id) {
  if (s.hot.rank != nullptr) {
    const int32_t r = s.hot.rank[id];
    if (r >= 0) {
      const char* part = s.hot.rows[r % s.hot.num_parts];
      return {part, static_cast<size_t>(r / s.hot.num_parts) * s.row_bytes, SIZE_MAX};
    }
  }
  return {s.host, static_cast<size_t>(id) * s.row_bytes, static_cast<size_t>(s.num_rows) * s.row_bytes};
}

__device__ int64_t Limit(const int64_t* count, int64_t bound) { return count == nullptr ? bound : min(*count, bound); }

// A warp per kRows rows, `Vector`-wide loads (the widest that the row size allows): each lane loads its word of
// every row before it stores any, so that a warp keeps kRows zero-copy reads in flight.
template <typename Vector, int kRows>
__global__ void GatherKernel(const int64_t* ids, const int64_t* count, int64_t bound, RowSource s, char* out) {
  const int64_t first = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp * kRows;
  const int lane = threadIdx.x % kWarp;
  const int64_t n = Limit(count, bound);
  if (first >= n) return;
  const Vector* src[kRows];
  Vector* dst[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    src[r] = nullptr;  // past the end, or no host table: only the hot rows are written
    dst[r] = nullptr;
    if (first + r < n) {
      const RowAt at = Locate(s, ids[first + r]);
      if (at.base != nullptr) src[r] = reinterpret_cast<const Vector*>(at.base + at.offset);
      dst[r] = reinterpret_cast<Vector*>(out + (first + r) * s.row_bytes);
    }
  }
  const size_t words = s.row_bytes / sizeof(Vector);
  for (size_t w = lane; w < words; w += kWarp) {
    Vector v[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (src[r] != nullptr) v[r] = src[r][w];
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (src[r] != nullptr) dst[r][w] = v[r];
    }
  }
}

// Rows of at most kSmallRow bytes (an edge's weight, id or few features): one thread per row. A warp per row
// would leave most lanes idle and keep 32 times fewer rows in flight; the reads are scattered either way.
inline constexpr size_t kSmallRow = 32;
template <typename Word>
__global__ void GatherSmallKernel(const int64_t* ids, const int64_t* count, int64_t bound, RowSource s, char* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= Limit(count, bound)) return;
  const RowAt at = Locate(s, ids[i]);
  if (at.base == nullptr) return;
  const auto* src = reinterpret_cast<const Word*>(at.base + at.offset);
  auto* dst = reinterpret_cast<Word*>(out + i * s.row_bytes);
  for (size_t w = 0; w < s.row_bytes / sizeof(Word); ++w) dst[w] = src[w];
}

// 16-byte words of shared memory one warp stages a row in, with room for the shift.
__host__ __device__ size_t StageWords(size_t row_bytes) { return (row_bytes + 31) / 16 + 1; }

// Rows whose size is not a multiple of 16 bytes start at arbitrary 4- or 2-byte boundaries. Reading them
// with narrow loads turns each row into many small PCIe reads; instead each warp reads the 16-byte-aligned
// span covering the row with 16-byte loads into shared memory, then writes the row out shifted into
// place. `Word` is the widest unit that divides the row size (4 or 2 bytes).
template <typename Word>
__global__ void GatherShiftedKernel(const int64_t* ids, const int64_t* count, int64_t bound, RowSource s, char* out) {
  extern __shared__ uint4 stage[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  uint4* mine = stage + warp * StageWords(s.row_bytes);
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kWarp;
  if (i >= Limit(count, bound)) return;
  const RowAt row = Locate(s, ids[i]);
  if (row.base == nullptr) return;  // the whole warp: one row
  const size_t first = row.offset & ~size_t{15}, end = row.offset + s.row_bytes;
  const size_t head = row.offset - first, chunks = (end - first + 15) / 16;
  for (size_t c = lane; c < chunks; c += kWarp) {
    const size_t at = first + 16 * c;
    if (at + 16 <= row.limit) {
      mine[c] = *reinterpret_cast<const uint4*>(row.base + at);
    } else {  // the array's last bytes: never read past its end
      const Word* tail = reinterpret_cast<const Word*>(row.base + at);
      Word* dst = reinterpret_cast<Word*>(mine + c);
      for (size_t w = 0; at + (w + 1) * sizeof(Word) <= row.limit && w < 16 / sizeof(Word); ++w) dst[w] = tail[w];
    }
  }
  __syncwarp();
  const Word* src = reinterpret_cast<const Word*>(reinterpret_cast<const char*>(mine) + head);
  Word* dst = reinterpret_cast<Word*>(out + i * s.row_bytes);
  for (size_t w = lane; w < s.row_bytes / sizeof(Word); w += kWarp) dst[w] = src[w];
}

}  // namespace

int RowsPerWarpOn(cudaStream_t stream) {
  const absl::StatusOr<int> sms = StreamSms(stream);
  return sms.ok() && *sms > 0 && *sms <= 16 ? kRowsPerWarp : 1;
}

absl::Status GatherRows(const int64_t* ids, const int64_t* count, int64_t bound, const RowSource& source,
                        const GatherOptions& options, void* out, cudaStream_t stream) {
  const size_t row = source.row_bytes;
  char* dst = static_cast<char*>(out);
  if (row <= kSmallRow) {
    return DispatchWord<16>(row, [&](auto word) -> absl::Status {
      GNND_LAUNCH(GatherSmallKernel<decltype(word)>, Blocks(bound), kThreads, 0, stream, ids, count, bound, source,
                  dst);
      return absl::OkStatus();
    });
  }
  const int blocks = Blocks(bound * kWarp);
  const size_t stage_bytes = (kThreads / kWarp) * StageWords(row) * 16;
  if (row % 16 != 0 && options.shifted && stage_bytes <= options.shared_bytes_limit) {
    return DispatchWord<4>(row, [&](auto word) -> absl::Status {
      GNND_LAUNCH(GatherShiftedKernel<decltype(word)>, blocks, kThreads, stage_bytes, stream, ids, count, bound, source,
                  dst);
      return absl::OkStatus();
    });
  }
  return DispatchWord<16>(row, [&](auto word) -> absl::Status {
    using Vector = decltype(word);
    const int asked = options.rows_per_warp > 0 ? options.rows_per_warp : RowsPerWarpOn(stream);
    const int rows = asked == kRowsPerWarp ? kRowsPerWarp : 1;
    auto* const gather_kernel = rows == kRowsPerWarp ? GatherKernel<Vector, kRowsPerWarp> : GatherKernel<Vector, 1>;
    GNND_LAUNCH(gather_kernel, Blocks((bound + rows - 1) / rows * kWarp), kThreads, 0, stream, ids, count, bound,
                source, dst);
    return absl::OkStatus();
  });
}

}  // namespace gnnd::cuda
