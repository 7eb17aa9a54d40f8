// A batch described as data, for everything past the samplers (the session stream, the C ABI, the Python
// package): named arrays with their dtype, row shape, the count that sizes them and their place in a slot;
// counts are named scalars whose values each batch announces (v1::BatchSchema, BatchReady.counts). gnnd
// makes the schema once per session; clients read batches by it, not by a layout of their own.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/dtype.h"
#include "common/batch/batch.h"

namespace gnnd {

struct BatchArraySchema {
  std::string name;
  DType dtype = DType::kInt64;
  std::vector<int64_t> row_shape;  // empty: one element per row
  int count = 0;                   // index into BatchSchema::counts: its value is the number of rows
  uint64_t offset = 0;             // bytes from the slot's start
  int64_t rows = -1;               // rows the slot holds: -1 for its count's capacity (less: features of
                                   // slots sized by the batches, OpenSession.slots_may_grow)

  size_t row_bytes() const;
};

struct BatchSchema {
  std::vector<std::string> counts;
  std::vector<int64_t> capacity;  // per count: the largest value a slot holds
  std::vector<BatchArraySchema> arrays;
  uint64_t slot_bytes = 0;

  // The position of the array or count named `name`, or -1.
  int ArrayNamed(std::string_view name) const;
  int CountNamed(std::string_view name) const;
  // The rows a slot holds of array `index`.
  int64_t Rows(int index) const {
    const BatchArraySchema& a = arrays[index];
    return a.rows >= 0 ? a.rows : capacity[a.count];
  }
};

// Bounds on what a schema from the wire may hold.
inline constexpr int kMaxBatchArrays = 256;
inline constexpr int kMaxBatchCounts = 1024;
inline constexpr int kMaxRowDims = 1;  // features are [rows, dim]; nothing has more dimensions yet

// The schema of the homogeneous layout (common/batch/batch.h), arrays in kBatchArrayNames' order. Counts:
// nodes, edges, seeds, node_hops (hops + 1), edge_hops (hops), then nodes_hop0 .. nodes_hopL and
// edges_hop0 .. edges_hop(L-1), so that a trainer has every per-hop count in host memory.
BatchSchema HomogeneousBatchSchema(const HomogeneousLayout& layout, int64_t feature_dim, DType feature_dtype);
// The count values of a homogeneous batch, in that schema's order.
std::vector<int64_t> HomogeneousBatchCounts(std::span<const int32_t> nodes_per_hop,
                                            std::span<const int32_t> edges_per_hop);

// Checks a batch's count values against the schema (their number, 0 <= value <= capacity).
absl::Status CheckBatchCounts(const BatchSchema& schema, std::span<const int64_t> counts);
// The first array whose slot holds fewer rows than the batch with these counts has (its slot rows are then
// not all written), or -1: the batch fits its slot.
int FirstArrayOverflowing(const BatchSchema& schema, std::span<const int64_t> counts);
// The bytes of a batch's arrays: each array's rows (its count's value) times its row's bytes.
uint64_t BatchBytes(const BatchSchema& schema, std::span<const int64_t> counts);

}  // namespace gnnd
