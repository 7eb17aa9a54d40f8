// A homogeneous dataset's minibatch as API 1.0 clients map it (SessionOpened.layout, gnnd_batch of the C ABI):
// the one layout (common/batch/layout.h) of its one node type and relation places its arrays so:
//   node_ids          int64[N]   seeds first, then the nodes first reached at hop 1 sorted by id, hop 2, ...
//   num_nodes_per_hop int32[L+1] hop 0 = the seeds
//   edge_src/edge_dst int32[E]   local indices into node_ids, message direction src -> dst, by hop
//   num_edges_per_hop int32[L]
//   features          [N, D]     dataset dtype
//   labels            int64[S]   labels of the seeds (S = num_nodes_per_hop[0])
// Each hop's nodes and edges are a prefix of the next hop's, so PyG and DGL views are slices.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/dtype.h"

namespace gnnd {

// Upper bounds on a batch's node and edge counts, from the spec and the graph (a fanout of -1 is
// bounded by the largest in-degree; every count by the graph's size).
struct HopBound {
  int64_t frontier = 0;     // nodes expanded at this hop
  int64_t edges = 0;        // edges sampled at this hop
  int64_t nodes_after = 0;  // all nodes once this hop's new ones are added
};
struct HomogeneousCapacity {
  int64_t max_seeds = 0;
  int64_t max_nodes = 0;
  int64_t max_edges = 0;
  std::vector<HopBound> hops;  // one per fanout
  // Rows of features a slot holds: -1 for max_nodes (the bound), less when the slots are sized by the
  // batches a session samples (OpenSession.slots_may_grow).
  int64_t max_feature_rows = -1;
  int64_t feature_rows() const { return max_feature_rows < 0 ? max_nodes : max_feature_rows; }
};
// Every array of a batch buffer starts at a multiple of this, so GPU and host views of a slot agree and
// loads can be vectorized (the homogeneous and the typed layouts alike).
inline constexpr size_t kBatchAlignment = 256;
constexpr size_t AlignBatchOffset(size_t n) { return (n + kBatchAlignment - 1) / kBatchAlignment * kBatchAlignment; }
// Places a slot's arrays one after another, each at a kBatchAlignment boundary.
class ArrayPlacer {
 public:
  explicit ArrayPlacer(size_t start = 0) : end_(start) {}
  // The offset of an array of `bytes`.
  size_t Place(size_t bytes) {
    const size_t offset = end_;
    end_ = AlignBatchOffset(end_ + bytes);
    return offset;
  }
  size_t end() const { return end_; }

 private:
  size_t end_;
};

// Byte offsets of each array in one contiguous buffer (each kBatchAlignment-aligned).
struct HomogeneousLayout {
  int num_hops = 0;
  HomogeneousCapacity capacity;
  size_t feature_row_bytes = 0;
  size_t node_ids = 0, num_nodes_per_hop = 0, edge_src = 0, edge_dst = 0, num_edges_per_hop = 0;
  size_t features = 0, labels = 0;
  size_t total_bytes = 0;

  static HomogeneousLayout Make(const HomogeneousCapacity& capacity, int num_hops, size_t feature_row_bytes);
};

// Bytes of a batch's arrays as filled (not the slot's capacity): what "bytes served" counts.
uint64_t BatchArrayBytes(int64_t num_nodes, int64_t num_edges, int64_t num_seeds, int num_hops,
                         size_t feature_row_bytes);

// A batch's arrays, in the order of the canonical layout: their names (as in gnnd_batch of the C ABI, the
// Python package and the .npz of `gnnctl sample`), element types and shapes.
inline constexpr int kNumBatchArrays = 7;
inline constexpr std::array<const char*, kNumBatchArrays> kBatchArrayNames = {
    "node_ids", "num_nodes_per_hop", "edge_src", "edge_dst", "num_edges_per_hop", "features", "labels"};
struct BatchArray {
  const char* name;
  DType dtype;
  int ndim;  // 1, or 2 for the features
  int64_t shape[2];
  void* data;
};
struct HomogeneousView;
// The arrays of a batch held in `view` with the given counts (passed in: on a GPU the view's own counts
// are in device memory). Features are [num_nodes, feature_dim] of `feature_dtype`.
std::array<BatchArray, kNumBatchArrays> BatchArrays(const HomogeneousView& view, int64_t num_nodes, int64_t num_edges,
                                                    int64_t num_seeds, int64_t feature_dim, DType feature_dtype);

// Typed pointers into one batch buffer laid out by a HomogeneousLayout.
struct HomogeneousView {
  int num_hops = 0;
  int64_t* node_ids = nullptr;
  int32_t* num_nodes_per_hop = nullptr;
  int32_t* edge_src = nullptr;
  int32_t* edge_dst = nullptr;
  int32_t* num_edges_per_hop = nullptr;
  void* features = nullptr;
  int64_t* labels = nullptr;
  int64_t feature_rows = 0;  // rows `features` holds (a batch with more nodes has none of its rows there)

  static HomogeneousView At(void* base, const HomogeneousLayout& layout);
  int64_t num_seeds() const { return num_nodes_per_hop[0]; }
  int64_t num_nodes() const;
  int64_t num_edges() const;
};

// A batch in its own heap buffer (the CPU producer's pool, tests, gnnctl sample).
class HomogeneousBuffer {
 public:
  explicit HomogeneousBuffer(const HomogeneousLayout& layout);
  HomogeneousView view() { return HomogeneousView::At(bytes_.data(), layout_); }
  const HomogeneousLayout& layout() const { return layout_; }

 private:
  HomogeneousLayout layout_;
  std::vector<std::byte> bytes_;
};

}  // namespace gnnd
