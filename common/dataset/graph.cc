#include "common/dataset/graph.h"

#include <algorithm>

namespace gnnd {

std::vector<int64_t> GraphData::MaxInDegrees() const {
  std::vector<int64_t> out;
  for (const RelationSchema& r : schema.relations) {
    const auto* indptr = static_cast<const int64_t*>(arrays.data[r.indptr]);
    const int64_t n = schema.node_types[r.dst_type].num_nodes;
    int64_t best = 0;
    for (int64_t v = 0; v < n; ++v) best = std::max(best, indptr[v + 1] - indptr[v]);
    out.push_back(best);
  }
  return out;
}

std::vector<int64_t> GraphData::FirstNegativeWeights() const {
  std::vector<int64_t> out(schema.arrays.size(), -1);
  for (size_t i = 0; i < schema.arrays.size(); ++i) {
    const ArraySchema& a = schema.arrays[i];
    if (a.role != ArrayRole::kEdgeAttr || a.shape.size() != 1 || a.dtype != DType::kFloat32) continue;
    const auto* w = static_cast<const float*>(arrays.data[i]);
    const float* negative = std::find_if(w, w + a.shape[0], [](float x) { return x < 0; });
    if (negative != w + a.shape[0]) out[i] = negative - w;
  }
  return out;
}

int64_t GraphData::MaxInDegree() const {
  const std::vector<int64_t> each = MaxInDegrees();
  return each.empty() ? 0 : *std::max_element(each.begin(), each.end());
}

}  // namespace gnnd
