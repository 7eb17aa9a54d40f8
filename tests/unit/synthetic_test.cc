#include "tools/dataset/synthetic.h"

#include <cmath>
#include <cstring>
#include <set>

#include "common/dataset/dataset.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/normals.h"

namespace gnnd::dataset {
namespace {

using testing::ScratchDir;

SyntheticSpec Tiny() {
  auto spec = PresetSpec("tiny", 1.0);
  EXPECT_TRUE(spec.ok());
  return *spec;
}

std::string Generated(const ScratchDir& dir, const std::string& name, const SyntheticSpec& spec,
                      GenerateOptions options) {
  const std::string out = dir / name;
  absl::Status s = Generate(spec, options, out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

bool SameBytes(const DatasetDir& a, const DatasetDir& b, ArrayId id) {
  const size_t bytes = ArrayBytes(a.manifest(), id);
  return bytes == ArrayBytes(b.manifest(), id) && std::memcmp(a.file(id).data(), b.file(id).data(), bytes) == 0;
}

// The generators' normal values: the standard normal's quantiles at (k + 1/2) / 65536, so the table is ascending,
// symmetric, of mean 0 and variance 1 (to the discretization), with the quantiles a normal table gives.
TEST(Synthetic, NormalQuantilesAreTheStandardNormals) {
  const float* q = dataset::NormalQuantiles();
  double sum = 0, squares = 0;
  for (int k = 0; k < 65536; ++k) {
    if (k > 0) ASSERT_LT(q[k - 1], q[k]) << k;
    ASSERT_EQ(q[k], -q[65535 - k]) << k;
    sum += q[k];
    squares += static_cast<double>(q[k]) * q[k];
  }
  EXPECT_NEAR(sum / 65536, 0.0, 1e-9);
  EXPECT_NEAR(squares / 65536, 1.0, 2e-3);
  EXPECT_NEAR(q[65535], 4.3, 0.05);  // P(Z > 4.3) is about 1 / 65536
  // P(Z <= 1.6449) = 0.95, P(Z <= -1.96) = 0.025: k / 65536 at those points.
  EXPECT_NEAR(q[static_cast<int>(0.95 * 65536)], 1.6449, 1e-3);
  EXPECT_NEAR(q[static_cast<int>(0.025 * 65536)], -1.96, 1e-3);
  float two[2];
  dataset::TwoNormals(q, 0xffff0000u, two);
  EXPECT_EQ(two[0], q[0]);
  EXPECT_EQ(two[1], q[65535]);
}

TEST(Synthetic, PresetsAreSizedLikeOgb) {
  auto products = PresetSpec("products", 1.0);
  ASSERT_TRUE(products.ok());
  EXPECT_EQ(products->num_nodes, 2449029);
  EXPECT_EQ(products->num_edges, 61859140);
  EXPECT_EQ(products->feature_dim, 100);
  EXPECT_EQ(products->num_classes, 47);
  auto papers = PresetSpec("papers", 0.01);
  ASSERT_TRUE(papers.ok());
  EXPECT_EQ(papers->num_nodes, 1110600);
  EXPECT_EQ(papers->feature_dim, 128);
  EXPECT_EQ(papers->num_classes, 172);
  EXPECT_FALSE(PresetSpec("reddit", 1.0).ok());
  EXPECT_FALSE(PresetSpec("tiny", 0).ok());
}

TEST(Synthetic, ScrambleIsABijection) {
  for (uint64_t n : {1ull, 2ull, 7ull, 1000ull, 4097ull}) {
    std::set<uint64_t> seen;
    for (uint64_t x = 0; x < n; ++x) {
      const uint64_t y = ScrambleId(x, n, 42);
      ASSERT_LT(y, n);
      ASSERT_EQ(UnscrambleId(y, n, 42), x);
      seen.insert(y);
    }
    EXPECT_EQ(seen.size(), n);
  }
}

TEST(Synthetic, DeterministicForASeedWhateverTheThreads) {
  ScratchDir dir;
  const SyntheticSpec spec = Tiny();
  auto one = DatasetDir::Open(Generated(dir, "one", spec, {.seed = 7, .threads = 1}));
  auto four = DatasetDir::Open(Generated(dir, "four", spec, {.seed = 7, .threads = 4}));
  auto other = DatasetDir::Open(Generated(dir, "other", spec, {.seed = 8, .threads = 2}));
  ASSERT_TRUE(one.ok() && four.ok() && other.ok());
  for (ArrayId id : kAllArrays) EXPECT_TRUE(SameBytes(*one, *four, id)) << ArrayName(id);
  EXPECT_FALSE(SameBytes(*one, *other, ArrayId::kIndices));
  EXPECT_FALSE(SameBytes(*one, *other, ArrayId::kFeatures));
}

TEST(Synthetic, PowerLawHomophilousAndLearnable) {
  ScratchDir dir;
  SyntheticSpec spec = Tiny();
  spec.num_nodes = 20000;
  spec.num_edges = 300000;
  auto d = DatasetDir::Open(Generated(dir, "g", spec, {.seed = 1, .threads = 2}));
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->Validate(2).ok());
  const v1::DatasetManifest& m = d->manifest();
  const int64_t n = m.num_nodes(), dim = m.feature_dim(), classes = m.num_classes();
  const int64_t* indptr = d->arrays().indptr();
  const int32_t* indices = d->file(ArrayId::kIndices).as<int32_t>();
  const float* x = d->file(ArrayId::kFeatures).as<float>();
  const int64_t* y = d->arrays().labels();

  // Skewed degrees: the largest in-degree is far above the mean.
  int64_t max_degree = 0;
  for (int64_t v = 0; v < n; ++v) max_degree = std::max(max_degree, indptr[v + 1] - indptr[v]);
  EXPECT_GT(max_degree, 20 * m.num_edges() / n);
  EXPECT_GT(m.num_edges(), spec.num_edges * 8 / 10);  // dedup drops some, not most

  // Homophily near the planted 0.8 (+ 0.2/C by chance).
  int64_t same = 0;
  for (int64_t v = 0; v < n; ++v) {
    for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) same += y[indices[e]] == y[v];
  }
  const double homophily = static_cast<double>(same) / m.num_edges();
  EXPECT_NEAR(homophily, 0.8 + 0.2 / classes, 0.03);

  // Nearest class centroid (fitted on train) on valid: own features beat chance, and adding the
  // mean of the in-neighbors' features beats own features.
  auto mean_with_neighbors = [&](int64_t v, std::vector<double>& out) {
    out.assign(dim, 0);
    const int64_t degree = indptr[v + 1] - indptr[v];
    for (int64_t j = 0; j < dim; ++j) out[j] = x[v * dim + j];
    for (int64_t e = indptr[v]; e < indptr[v + 1]; ++e) {
      for (int64_t j = 0; j < dim; ++j) out[j] += x[indices[e] * dim + j];
    }
    for (double& value : out) value /= 1 + degree;
  };
  auto accuracy = [&](bool neighbors) {
    std::vector<double> centroid(classes * dim, 0), row;
    std::vector<int64_t> count(classes, 0);
    const int64_t* train = d->file(ArrayId::kTrain).as<int64_t>();
    for (int64_t i = 0; i < m.num_train(); ++i) {
      const int64_t v = train[i];
      if (neighbors)
        mean_with_neighbors(v, row);
      else
        row.assign(x + v * dim, x + (v + 1) * dim);
      for (int64_t j = 0; j < dim; ++j) centroid[y[v] * dim + j] += row[j];
      ++count[y[v]];
    }
    for (int64_t c = 0; c < classes; ++c) {
      for (int64_t j = 0; j < dim; ++j) centroid[c * dim + j] /= std::max<int64_t>(count[c], 1);
    }
    const int64_t* valid = d->file(ArrayId::kValid).as<int64_t>();
    int64_t correct = 0;
    for (int64_t i = 0; i < m.num_valid(); ++i) {
      const int64_t v = valid[i];
      if (neighbors)
        mean_with_neighbors(v, row);
      else
        row.assign(x + v * dim, x + (v + 1) * dim);
      int64_t best = 0;
      double best_distance = INFINITY;
      for (int64_t c = 0; c < classes; ++c) {
        double distance = 0;
        for (int64_t j = 0; j < dim; ++j) distance += std::pow(row[j] - centroid[c * dim + j], 2);
        if (distance < best_distance) best_distance = distance, best = c;
      }
      correct += best == y[v];
    }
    return static_cast<double>(correct) / m.num_valid();
  };
  const double own = accuracy(false), with_neighbors = accuracy(true);
  EXPECT_GT(own, 2.0 / classes);
  EXPECT_GT(with_neighbors, own + 0.1);
}

TEST(Synthetic, PapersPresetLeavesMostNodesUnlabeled) {
  ScratchDir dir;
  auto spec = PresetSpec("papers", 0.0002);  // 22 K nodes, 323 K edges
  ASSERT_TRUE(spec.ok());
  auto d = DatasetDir::Open(
      Generated(dir, "p", *spec, {.seed = 3, .feature_dtype = v1::FEATURE_DTYPE_FLOAT16, .threads = 2}));
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->Validate(2).ok());
  const v1::DatasetManifest& m = d->manifest();
  EXPECT_EQ(m.feature_dtype(), v1::FEATURE_DTYPE_FLOAT16);
  const double labeled = static_cast<double>(m.num_train() + m.num_valid() + m.num_test()) / m.num_nodes();
  EXPECT_NEAR(labeled, 0.0139, 0.004);
  int64_t unlabeled = 0;
  for (int64_t v = 0; v < m.num_nodes(); ++v) unlabeled += d->arrays().labels()[v] == -1;
  EXPECT_EQ(unlabeled, m.num_nodes() - (m.num_train() + m.num_valid() + m.num_test()));
}

}  // namespace
}  // namespace gnnd::dataset
