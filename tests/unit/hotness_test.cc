// Hotness rankings (tools/dataset/hotness.h): the expected-reads propagation against a hand-computed
// graph, counts that do not depend on the thread count, and the report's hit rates against what a cache
// of the top rows would really serve.
#include "tools/dataset/hotness.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/batch/seeds.h"
#include "common/dataset/hot_order.h"
#include "common/dataset/npy.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd::dataset {
namespace {

using gnnd::testing::ScratchDir;

// In-lists: 0 <- {1, 2, 3}, 1 <- {3}, 2 <- {}, 3 <- {4}, 4 <- {}.
struct HandGraph {
  std::vector<int64_t> indptr = {0, 3, 4, 4, 5, 5};
  std::vector<int32_t> indices = {1, 2, 3, 3, 4};
  GraphData graph;
  HandGraph() {
    graph.manifest.set_num_nodes(5);
    graph.manifest.set_num_edges(5);
    graph.manifest.set_index_dtype(v1::INDEX_DTYPE_INT32);
    graph.arrays.data.assign(kNumArrays, nullptr);  // a format_version 1 dataset's table
    for (int i = 0; i < kNumArrays; ++i) graph.arrays.positions[i] = i;
    graph.arrays.data[static_cast<int>(ArrayId::kIndptr)] = indptr.data();
    graph.arrays.data[static_cast<int>(ArrayId::kIndices)] = indices.data();
  }
};

TEST(Hotness, ExpectedReadsFollowTheFanoutCapHopByHop) {
  HandGraph g;
  const std::vector<int64_t> train = {0};
  // Seed 0 is read once; hop 1 takes 2 of its 3 in-neighbors (2/3 each); hop 2 takes node 1's and node 3's
  // only in-neighbor with their own weight: 3 again (2/3) and 4 (2/3).
  const std::vector<double> reads = ExpectedReads(g.graph, train, {2, 1}, 2);
  const std::vector<double> want = {1.0, 2.0 / 3, 2.0 / 3, 4.0 / 3, 2.0 / 3};
  ASSERT_EQ(reads.size(), want.size());
  for (size_t v = 0; v < want.size(); ++v) EXPECT_NEAR(reads[v], want[v], 1e-5) << "node " << v;
  // A fanout of -1 takes every in-neighbor.
  EXPECT_NEAR(ExpectedReads(g.graph, train, {-1}, 1)[3], 1.0, 1e-9);

  const std::vector<int64_t> order = RankByScore<double>(reads);
  EXPECT_EQ(order, (std::vector<int64_t>{3, 0, 1, 2, 4}));  // ties by id
  EXPECT_EQ(ListAppearances(g.graph, 2), (std::vector<int64_t>{0, 1, 1, 2, 1}));
  const std::vector<int64_t> truth = {5, 1, 0, 3, 1};
  EXPECT_DOUBLE_EQ(HitRate(order, 0, truth), 0.0);
  EXPECT_DOUBLE_EQ(HitRate(order, 2, truth), 0.8);  // nodes 3 and 0: 8 of 10 reads
  EXPECT_DOUBLE_EQ(HitRate(order, 5, truth), 1.0);
}

class HotnessOnAGraph : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    auto spec = PresetSpec("tiny", 0.3);
    ASSERT_TRUE(spec.ok());
    ASSERT_TRUE(Generate(*spec, {.seed = 4, .threads = 2}, *dir_ / "g").ok());
  }
  static void TearDownTestSuite() { delete dir_; }
  static ScratchDir* dir_;
};
ScratchDir* HotnessOnAGraph::dir_ = nullptr;

TEST_F(HotnessOnAGraph, CountsAreTheBatchesHoldingEachNodeWhateverTheThreads) {
  auto dir = DatasetDir::Open(*dir_ / "g");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const GraphData graph{dir->manifest(), dir->arrays(), dir->schema()};
  const std::span<const int64_t> train(static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]),
                                       graph.manifest.num_train());
  HotnessSpec spec{.fanouts = {5, 3}, .batch_size = 64, .seed = 7, .presample_batches = 6, .threads = 1};
  const std::vector<int64_t> one = CountReads(graph, train, spec, 2);
  spec.threads = 4;
  EXPECT_EQ(CountReads(graph, train, spec, 2), one);
  EXPECT_EQ(ExpectedReads(graph, train, spec.fanouts, 1), ExpectedReads(graph, train, spec.fanouts, 4));

  // The same batches sampled here, one by one: each node counted once per batch that holds it.
  std::vector<int64_t> want(graph.num_nodes(), 0);
  const EpochSeeds seeds(train, {.seed = 7, .batch_size = 64}, 2);
  auto capacity = ComputeHomogeneousCapacity(SamplingSpec::OneRelation(64, spec.fanouts), graph.num_nodes(),
                                             graph.manifest.num_edges(), graph.MaxInDegree());
  ASSERT_TRUE(capacity.ok());
  const HomogeneousLayout layout = HomogeneousLayout::Make(*capacity, 2, FeatureRowBytes(graph.manifest));
  std::vector<uint64_t> buffer(layout.total_bytes / 8 + 1);
  CpuSampler sampler(graph, {.fanouts = {spec.fanouts}}, 7);
  for (int64_t step = 0; step < 6; ++step) {
    const HomogeneousView out = HomogeneousView::At(buffer.data(), layout);
    sampler.Sample(2, seeds.batch_index(step), seeds.batch(step), out);
    for (int64_t i = 0; i < out.num_nodes(); ++i) ++want[out.node_ids[i]];
  }
  EXPECT_EQ(one, want);
}

TEST_F(HotnessOnAGraph, ReportRanksBetterThanChanceAndWritesAPermutation) {
  const HotnessSpec spec{.fanouts = {10, 5}, .batch_size = 100, .seed = 1, .presample_batches = 0, .threads = 2};
  auto report = HotnessReport(*dir_ / "g", "train", spec, /*write=*/true);
  ASSERT_TRUE(report.ok()) << report.status();
  // Rows "| percent | rows | expected | lists | presample | ideal |".
  std::vector<std::vector<double>> rows;
  for (absl::string_view line : absl::StrSplit(*report, '\n')) {
    std::vector<std::string> cells = absl::StrSplit(line, '|', absl::SkipWhitespace());
    double percent;
    if (cells.size() != 6 || !absl::SimpleAtod(cells[0], &percent)) continue;
    std::vector<double> row;
    for (const std::string& c : cells) row.push_back(std::stod(c));
    rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 7u) << *report;
  for (size_t r = 0; r < rows.size(); ++r) {
    const double share = rows[r][0] / 100;
    for (int c = 2; c < 5; ++c) EXPECT_LE(rows[r][c], rows[r][5] + 1e-9) << *report;  // none beats the ideal
    EXPECT_GT(rows[r][2], share) << "expected reads no better than a random cache:\n" << *report;
    if (r > 0) {
      EXPECT_GE(rows[r][2], rows[r - 1][2]) << *report;
    }
  }
  auto order = NpyFile::Open(*dir_ / "g/hot_order.npy");
  ASSERT_TRUE(order.ok()) << order.status();
  const auto* ids = static_cast<const int64_t*>(order->data());
  std::vector<int64_t> sorted(ids, ids + order->header().shape[0]);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> all(sorted.size());
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sorted, all);
  EXPECT_EQ(static_cast<int64_t>(all.size()), DatasetDir::Open(*dir_ / "g")->manifest().num_nodes());
}

TEST(Hotness, BadRequestsNameTheField) {
  ScratchDir dir;
  EXPECT_FALSE(HotnessReport(dir / "absent", "train", {.fanouts = {5}}, false).ok());
  auto spec = PresetSpec("tiny", 0.1);
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(Generate(*spec, {.seed = 1, .threads = 1}, dir / "g").ok());
  auto bad_split = HotnessReport(dir / "g", "nope", {.fanouts = {5}}, false);
  EXPECT_EQ(bad_split.status().code(), absl::StatusCode::kInvalidArgument);
  auto bad_fanout = HotnessReport(dir / "g", "train", {.fanouts = {-3}}, false);
  EXPECT_EQ(bad_fanout.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_fanout.status().message().find("fanouts"), std::string::npos);
}

}  // namespace
}  // namespace gnnd::dataset

namespace gnnd {
namespace {

// Writes `ids` as DIR/hot_order.npy in `dtype`.
template <typename T>
void WriteOrder(const std::filesystem::path& dir, const std::vector<T>& ids, DType dtype) {
  auto writer = NpyWriter::CreateAppendable(dir / kHotOrderFile, dtype, {});
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE(writer->Append(ids.data(), static_cast<int64_t>(ids.size())).ok());
  ASSERT_TRUE(writer->Finish().ok());
}

TEST(HotOrder, ReadsAPrefixOfDistinctIds) {
  testing::ScratchDir dir;
  EXPECT_TRUE(absl::IsNotFound(ReadHotOrder(dir.path(), 10).status()));
  WriteOrder<int64_t>(dir.path(), {7, 0, 9}, DType::kInt64);
  auto order = ReadHotOrder(dir.path(), 10);
  ASSERT_TRUE(order.ok()) << order.status();
  EXPECT_EQ(*order, (std::vector<int64_t>{7, 0, 9}));
}

TEST(HotOrder, RejectsWhatIsNotARanking) {
  struct Bad {
    std::vector<int64_t> ids;
    std::string message;
  };
  for (const Bad& bad :
       {Bad{{1, 10}, "entry 1 is 10"}, Bad{{-1}, "entry 0 is -1"}, Bad{{3, 4, 3}, "node 3 appears twice"},
        Bad{std::vector<int64_t>(11, 0), "11 ids for a dataset of 10 nodes"}}) {
    testing::ScratchDir dir;
    WriteOrder(dir.path(), bad.ids, DType::kInt64);
    const absl::Status s = ReadHotOrder(dir.path(), 10).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find(bad.message), absl::string_view::npos) << s;
  }
  testing::ScratchDir dir;
  WriteOrder<int32_t>(dir.path(), {1, 2}, DType::kInt32);
  const absl::Status s = ReadHotOrder(dir.path(), 10).status();
  EXPECT_NE(s.message().find("1-D int64"), absl::string_view::npos) << s;
}

}  // namespace
}  // namespace gnnd

namespace gnnd {
namespace {

TEST(HeatRanks, AreAPermutationHottestHighestWithinTheRange) {
  // Global ids 10..19 are the range; 3 and 25 lie outside it.
  const std::vector<int64_t> hottest_first = {14, 3, 11, 25, 17};
  const std::vector<int32_t> rank = HeatRanks(hottest_first, 10, 10);
  ASSERT_EQ(rank.size(), 10u);
  EXPECT_EQ(rank[4], 9);  // id 14
  EXPECT_EQ(rank[1], 8);  // id 11
  EXPECT_EQ(rank[7], 7);  // id 17
  std::vector<int32_t> sorted = rank;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(sorted[i], i);  // every rank once
  const std::vector<int64_t> indptr = {0, 1, 4, 4, 6};   // in-degrees 1, 3, 0, 2
  EXPECT_EQ(DegreeRanks(indptr.data(), 4), (std::vector<int32_t>{1, 3, 0, 2}));
  // Back from ranks to the hottest ids (a cache's warm start): local ids 4, 1, 7 first, then the unlisted ones.
  EXPECT_EQ(HottestRows(rank, 3), (std::vector<int64_t>{4, 1, 7}));
  EXPECT_EQ(HottestRows(rank, 100).size(), 10u);
  EXPECT_EQ(HottestRows(DegreeRanks(indptr.data(), 4), 2), (std::vector<int64_t>{1, 3}));
}

}  // namespace
}  // namespace gnnd
