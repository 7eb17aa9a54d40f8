#include "common/dataset/graph.h"

#include <algorithm>

#include "common/batch/sampling.h"

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

std::vector<int64_t> GraphData::FirstUndrawableWeights() const {
  std::vector<int64_t> out(schema.arrays.size(), -1);
  for (const RelationSchema& r : schema.relations) {
    for (const EdgeAttributeSchema& a : r.edge_attrs) {
      if (!a.CanWeighDraws()) continue;
      const auto* w = static_cast<const float*>(arrays.data[a.array]);
      const float* bad = std::find_if(w, w + r.num_edges, [](float x) { return !weighted::Drawable(x); });
      if (bad != w + r.num_edges) out[a.array] = bad - w;
    }
  }
  return out;
}

int64_t GraphData::MaxInDegree() const {
  const std::vector<int64_t> each = MaxInDegrees();
  return each.empty() ? 0 : *std::max_element(each.begin(), each.end());
}

}  // namespace gnnd
