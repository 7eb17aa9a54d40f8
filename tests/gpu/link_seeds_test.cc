// The seed side of link batches on the GPU (kernels/cuda/link_seeds.h) against MakeLinkSeeds on the host:
// the same negatives (strict or not), hop-0 nodes and local pairs, byte for byte, for every negative mode,
// both index widths and a batch smaller than the largest. Skips without a GPU.
#include "kernels/cuda/link_seeds.h"

#include <cuda_runtime.h>

#include <random>

#include "common/dataset/dataset.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd::cuda {
namespace {

using test_util::Download;

template <typename T>
T* Upload(const void* host, size_t bytes) {
  void* device = nullptr;
  EXPECT_EQ(cudaMalloc(&device, bytes), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  return static_cast<T*>(device);
}

class LinkSeedsTest : public ::testing::TestWithParam<v1::IndexDType> {};

TEST_P(LinkSeedsTest, NegativesHopZeroAndPairsEqualTheHostsForEveryMode) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  gnnd::testing::ScratchDir dir;
  auto spec = dataset::PresetSpec("tiny", 0.5);
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(dataset::Generate(*spec, {.seed = 5, .threads = 2}, dir / "g").ok());
  auto source = DatasetDir::Open(dir / "g");
  ASSERT_TRUE(source.ok()) << source.status();
  const GraphData graph{source->manifest(), source->arrays(), source->schema()};
  const int64_t num_nodes = graph.num_nodes();
  const int64_t* indptr = graph.arrays.indptr();
  // The neighbor ids at the width under test (the generator's are 32-bit here).
  ASSERT_FALSE(graph.wide_indices());
  const auto* narrow = static_cast<const int32_t*>(graph.arrays[ArrayId::kIndices]);
  const std::vector<int64_t> wide(narrow, narrow + indptr[num_nodes]);
  const bool is_wide = GetParam() == v1::INDEX_DTYPE_INT64;
  const void* indices = is_wide ? static_cast<const void*>(wide.data()) : narrow;
  const DeviceRelation csc{Upload<int64_t>(indptr, sizeof(int64_t) * (num_nodes + 1)),
                           Upload<void>(indices, (is_wide ? 8 : 4) * indptr[num_nodes]), GetParam()};
  const LinkRelation relation{indptr, indices, is_wide, num_nodes, num_nodes, true, "the graph"};

  // Positives: edges of the graph, some repeated (a batch may hold a pair twice).
  constexpr int64_t kMaxPositives = 300;
  std::mt19937_64 rng(3);
  std::vector<int64_t> src, dst;
  while (static_cast<int64_t>(src.size()) < kMaxPositives) {
    const int64_t v = static_cast<int64_t>(rng() % num_nodes);
    if (indptr[v + 1] == indptr[v]) continue;
    const int64_t p = indptr[v] + static_cast<int64_t>(rng() % (indptr[v + 1] - indptr[v]));
    src.push_back(narrow[p]);
    dst.push_back(v);
    if (src.size() % 50 == 0) src.push_back(src.back()), dst.push_back(dst.back());
  }
  src.resize(kMaxPositives);
  dst.resize(kMaxPositives);
  int64_t* device_src = Upload<int64_t>(src.data(), sizeof(int64_t) * kMaxPositives);
  int64_t* device_dst = Upload<int64_t>(dst.data(), sizeof(int64_t) * kMaxPositives);

  const SamplingKey key = MakeSamplingKey(9, 2, RandomPurpose::kNegatives);
  for (const NegativeSpec negatives :
       {NegativeSpec{NegativeMode::kNone, 1, false}, NegativeSpec{NegativeMode::kBinary, 3, true},
        NegativeSpec{NegativeMode::kBinary, 1, false}, NegativeSpec{NegativeMode::kTriplet, 2, true}}) {
    auto seeds = CudaLinkSeeds::Create(kMaxPositives, negatives);
    ASSERT_TRUE(seeds.ok()) << seeds.status();
    int64_t* hop0 = nullptr;
    int64_t* num_hop0 = nullptr;
    ASSERT_EQ(cudaMalloc(&hop0, sizeof(int64_t) * (*seeds)->max_hop0()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&num_hop0, sizeof(int64_t)), cudaSuccess);
    for (const int64_t positives : {kMaxPositives, int64_t{37}}) {
      const uint64_t batch = 11 + positives;
      LinkSeeds expected;
      ASSERT_TRUE(MakeLinkSeeds(key, batch, std::span(src).first(positives), std::span(dst).first(positives), negatives,
                                relation, expected)
                      .ok());
      ASSERT_TRUE(
          (*seeds)->Make(key, batch, device_src, device_dst, positives, csc, num_nodes, hop0, num_hop0, nullptr).ok());
      ASSERT_TRUE((*seeds)->CheckStrict(batch, device_src, nullptr).ok());
      const std::string what = absl::StrCat("mode ", static_cast<int>(negatives.mode), ", ", positives, " positives");
      const int64_t n = Download(num_hop0, 1)[0];
      EXPECT_EQ(Download(hop0, n), expected.src_nodes) << what;
      if (negatives.mode == NegativeMode::kTriplet) {
        EXPECT_EQ(Download((*seeds)->src_index(), positives), expected.src_index) << what;
        EXPECT_EQ(Download((*seeds)->dst_pos_index(), positives), expected.dst_pos_index) << what;
        EXPECT_EQ(Download((*seeds)->dst_neg_index(positives), positives * negatives.amount), expected.dst_neg_index)
            << what;
      } else {
        const int64_t pairs = static_cast<int64_t>(expected.pair_src.size());
        EXPECT_EQ(Download((*seeds)->pair_src(), pairs), expected.pair_src) << what;
        EXPECT_EQ(Download((*seeds)->pair_dst(), pairs), expected.pair_dst) << what;
      }
    }
    cudaFree(hop0);
    cudaFree(num_hop0);
  }
  // A graph too dense for strict negatives: every draw an edge. Both sides say so alike.
  const std::vector<int64_t> full_indptr = {0, 2, 4};
  const std::vector<int64_t> full_indices = {0, 1, 0, 1};
  const LinkRelation dense{full_indptr.data(), full_indices.data(), true, 2, 2, true, "the graph"};
  const DeviceRelation dense_csc{Upload<int64_t>(full_indptr.data(), 24), Upload<void>(full_indices.data(), 32),
                                 v1::INDEX_DTYPE_INT64};
  const NegativeSpec strict{NegativeMode::kBinary, 2, true};
  LinkSeeds ignored;
  std::vector<int64_t> one = {0};
  const absl::Status host = MakeLinkSeeds(key, 4, one, one, strict, dense, ignored);
  ASSERT_TRUE(absl::IsFailedPrecondition(host)) << host;
  auto seeds = CudaLinkSeeds::Create(1, strict);
  ASSERT_TRUE(seeds.ok());
  int64_t* device_one = Upload<int64_t>(one.data(), 8);
  int64_t* hop0 = nullptr;
  int64_t* num_hop0 = nullptr;
  ASSERT_EQ(cudaMalloc(&hop0, sizeof(int64_t) * (*seeds)->max_hop0()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&num_hop0, sizeof(int64_t)), cudaSuccess);
  ASSERT_TRUE((*seeds)->Make(key, 4, device_one, device_one, 1, dense_csc, 2, hop0, num_hop0, nullptr).ok());
  EXPECT_EQ((*seeds)->CheckStrict(4, device_one, nullptr), host);
  for (void* p : {static_cast<void*>(device_one), static_cast<void*>(hop0), static_cast<void*>(num_hop0),
                  static_cast<void*>(device_src), static_cast<void*>(device_dst),
                  static_cast<void*>(const_cast<int64_t*>(csc.indptr)), const_cast<void*>(csc.indices),
                  static_cast<void*>(const_cast<int64_t*>(dense_csc.indptr)), const_cast<void*>(dense_csc.indices)}) {
    cudaFree(p);
  }
}

INSTANTIATE_TEST_SUITE_P(IndexWidths, LinkSeedsTest, ::testing::Values(v1::INDEX_DTYPE_INT32, v1::INDEX_DTYPE_INT64));

}  // namespace
}  // namespace gnnd::cuda
