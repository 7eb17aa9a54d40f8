#include "common/dataset/graph.h"

#include <algorithm>

namespace gnnd {

int64_t GraphData::MaxInDegree() const {
  const int64_t* indptr = arrays.indptr();
  int64_t best = 0;
  for (int64_t v = 0; v < num_nodes(); ++v) best = std::max(best, indptr[v + 1] - indptr[v]);
  return best;
}

}  // namespace gnnd
