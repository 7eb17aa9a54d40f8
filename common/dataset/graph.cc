#include "common/dataset/graph.h"

#include <algorithm>

namespace gnnd {

int64_t GraphData::MaxInDegree() const {
  int64_t best = 0;
  for (const RelationSchema& r : schema.relations) {
    const auto* indptr = static_cast<const int64_t*>(arrays.data[r.indptr]);
    const int64_t n = schema.node_types[r.dst_type].num_nodes;
    for (int64_t v = 0; v < n; ++v) best = std::max(best, indptr[v + 1] - indptr[v]);
  }
  return best;
}

}  // namespace gnnd
