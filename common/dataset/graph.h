// The graph and node data every sampler reads: a dataset's manifest, schema and pointers to its arrays, wherever
// they live (files, shared memory). Shared by the CPU and CUDA backends and by the tools.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/dataset/dataset.h"
#include "common/dataset/time_order.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd {

struct GraphData {
  v1::DatasetManifest manifest;
  DatasetArrays arrays;
  DatasetSchema schema;

  int64_t num_nodes() const { return manifest.num_nodes(); }
  bool wide_indices() const { return manifest.index_dtype() == v1::INDEX_DTYPE_INT64; }
  // The largest in-degree of each relation (bounds a fanout of -1 through it); a pass over each indptr.
  std::vector<int64_t> MaxInDegrees() const;
  // The largest of those.
  int64_t MaxInDegree() const;
  // Per array of the schema: for an edge attribute of one float32 an edge (one that may weight draws), the index
  // of its first value the weighted rule cannot draw by (weighted::Drawable: negative, NaN, infinite, or
  // positive outside [kMinWeight, kMaxWeight]), -1 if none (and for every other array); a pass over each.
  std::vector<int64_t> FirstUndrawableWeights() const;

  // The temporal rule's time orders, built on first use; copies of a GraphData share them (and its arrays).
  std::shared_ptr<TimeOrderCache> time_orders = std::make_shared<TimeOrderCache>();
};

// What opening a session reads of a dataset beyond its schema: passes over its arrays, made once when it is
// loaded (GraphData::Summary).
struct GraphSummary {
  std::vector<int64_t> max_in_degrees;  // per relation (GraphData::MaxInDegrees): bounds a fanout of -1
  // Per array (GraphData::FirstUndrawableWeights); empty: found for an attribute when a session asks.
  std::vector<int64_t> first_undrawable_weights;
  static GraphSummary Of(const GraphData& graph) { return {graph.MaxInDegrees(), graph.FirstUndrawableWeights()}; }
};

}  // namespace gnnd
