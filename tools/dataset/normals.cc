#include "tools/dataset/normals.h"

#include <array>
#include <cmath>

namespace gnnd::dataset {
namespace {

// x with P(Z <= x) = p for a standard normal Z, by bisection on erfc (to double precision).
double Quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 80; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

struct Table {
  std::array<float, 65536> q;
  Table() {
    for (int k = 0; k < 32768; ++k) {  // the upper half mirrors the lower one
      q[k] = static_cast<float>(Quantile((k + 0.5) / 65536.0));
      q[65535 - k] = -q[k];
    }
  }
};

}  // namespace

const float* NormalQuantiles() {
  static const Table table;
  return table.q.data();
}

}  // namespace gnnd::dataset
