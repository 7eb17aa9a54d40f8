// The CPU backend's batches against the definition: every invariant of the layout and the sampling
// semantics, checked over whole epochs of a generated graph, plus determinism across thread counts.
#include "kernels/cpu/sampler.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/batch/seeds.h"
#include "common/dataset/row_cache.h"
#include "gtest/gtest.h"
#include "server/sessions/producer.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd {
namespace {

using testing::ScratchDir;

class SamplerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir();
    auto spec = dataset::PresetSpec("tiny", 0.3);  // 3000 nodes, ~28 K edges, deduplicated
    ASSERT_TRUE(spec.ok());
    ASSERT_TRUE(dataset::Generate(*spec, {.seed = 2, .threads = 2}, *dir_ / "g").ok());
    auto d = DatasetDir::Open(*dir_ / "g");
    ASSERT_TRUE(d.ok()) << d.status();
    dataset_ = new DatasetDir(std::move(*d));
    graph_ = new GraphData{dataset_->manifest(), dataset_->arrays(), dataset_->schema()};
  }
  static void TearDownTestSuite() {
    delete graph_;
    delete dataset_;
    delete dir_;
  }

  static std::span<const int64_t> Split(ArrayId id) {
    return {static_cast<const int64_t*>(graph_->arrays[id]), static_cast<size_t>(ArrayShape(graph_->manifest, id)[0])};
  }
  static HomogeneousLayout Layout(const SamplingSpec& spec) {
    auto capacity =
        ComputeHomogeneousCapacity(spec, graph_->num_nodes(), graph_->manifest.num_edges(), graph_->MaxInDegree());
    EXPECT_TRUE(capacity.ok());
    return HomogeneousLayout::Make(*capacity, spec.num_hops(), FeatureRowBytes(graph_->manifest));
  }

  // Asserts every rule of the layout and of the sampling semantics for one batch.
  static void CheckBatch(const std::vector<int32_t>& fanouts, std::span<const int64_t> seeds, const HomogeneousView& b,
                         const HomogeneousCapacity& capacity) {
    const int64_t* indptr = graph_->arrays.indptr();
    const int32_t* indices = static_cast<const int32_t*>(graph_->arrays[ArrayId::kIndices]);
    const int64_t nodes = b.num_nodes(), edges = b.num_edges();
    ASSERT_LE(nodes, capacity.max_nodes);
    ASSERT_LE(edges, capacity.max_edges);
    ASSERT_EQ(b.num_seeds(), static_cast<int64_t>(seeds.size()));
    for (size_t i = 0; i < seeds.size(); ++i) ASSERT_EQ(b.node_ids[i], seeds[i]) << "seeds first, in order";
    std::set<int64_t> unique(b.node_ids, b.node_ids + nodes);
    ASSERT_EQ(static_cast<int64_t>(unique.size()), nodes) << "node ids repeat";

    int64_t frontier_begin = 0, frontier_end = b.num_nodes_per_hop[0], edge = 0;
    std::set<int64_t> reached(b.node_ids, b.node_ids + frontier_end);
    for (size_t hop = 0; hop < fanouts.size(); ++hop) {
      const int64_t hop_end = frontier_end + b.num_nodes_per_hop[hop + 1];
      // The per-hop bounds the GPU backend sizes its launches by.
      ASSERT_LE(frontier_end - frontier_begin, capacity.hops[hop].frontier) << "hop " << hop;
      ASSERT_LE(b.num_edges_per_hop[hop], capacity.hops[hop].edges) << "hop " << hop;
      ASSERT_LE(hop_end, capacity.hops[hop].nodes_after) << "hop " << hop;
      for (int64_t i = frontier_end + 1; i < hop_end; ++i)
        ASSERT_LT(b.node_ids[i - 1], b.node_ids[i]) << "hop not sorted";
      std::set<int64_t> fresh;  // sources of this hop not reached before: must be exactly the new nodes
      const int64_t edge_end = edge + b.num_edges_per_hop[hop];
      for (int64_t v = frontier_begin; v < frontier_end; ++v) {
        const int64_t node = b.node_ids[v];
        const int64_t degree = indptr[node + 1] - indptr[node];
        std::set<int64_t> neighbors;
        while (edge < edge_end && b.edge_dst[edge] == v) {
          const int32_t src = b.edge_src[edge];
          ASSERT_GE(src, 0);
          ASSERT_LT(src, hop_end) << "edge source beyond this hop's nodes";
          const int64_t u = b.node_ids[src];
          ASSERT_TRUE(std::binary_search(indices + indptr[node], indices + indptr[node + 1], u))
              << u << " -> " << node << " is not an edge";
          ASSERT_TRUE(neighbors.insert(u).second) << "neighbor repeated";
          if (!reached.contains(u)) fresh.insert(u);
          ++edge;
        }
        ASSERT_EQ(static_cast<int64_t>(neighbors.size()), SampleCount(degree, fanouts[hop])) << "node " << node;
      }
      ASSERT_EQ(edge, edge_end) << "hop's edges not grouped by destination in frontier order";
      ASSERT_EQ(std::vector<int64_t>(fresh.begin(), fresh.end()),
                std::vector<int64_t>(b.node_ids + frontier_end, b.node_ids + hop_end));
      reached.insert(fresh.begin(), fresh.end());
      frontier_begin = frontier_end;
      frontier_end = hop_end;
    }
    ASSERT_EQ(frontier_end, nodes);
    const size_t row = FeatureRowBytes(graph_->manifest);
    const auto* features = static_cast<const std::byte*>(graph_->arrays[ArrayId::kFeatures]);
    for (int64_t i = 0; i < nodes; ++i) {
      ASSERT_EQ(std::memcmp(static_cast<const std::byte*>(b.features) + i * row, features + b.node_ids[i] * row, row),
                0);
    }
    for (int64_t i = 0; i < b.num_seeds(); ++i) ASSERT_EQ(b.labels[i], graph_->arrays.labels()[seeds[i]]);
  }

  static ScratchDir* dir_;
  static DatasetDir* dataset_;
  static GraphData* graph_;
};

ScratchDir* SamplerTest::dir_ = nullptr;
DatasetDir* SamplerTest::dataset_ = nullptr;
GraphData* SamplerTest::graph_ = nullptr;

TEST_F(SamplerTest, WholeEpochsSatisfyTheDefinition) {
  const std::vector<std::vector<int32_t>> fanout_sets = {{15, 10, 5}, {-1}, {2, -1}, {1, 1, 1, 1}};
  for (const auto& fanouts : fanout_sets) {
    for (uint64_t seed : {0, 9}) {
      const SamplingSpec spec = SamplingSpec::OneRelation(64, fanouts);
      const HomogeneousLayout layout = Layout(spec);
      HomogeneousBuffer buffer(layout);
      CpuSampler sampler(*graph_, {.fanouts = {fanouts}}, seed);
      EpochSeeds seeds(Split(ArrayId::kTrain), {.seed = seed, .batch_size = 64}, 1);
      for (int64_t step = 0; step < seeds.num_steps(); ++step) {
        sampler.Sample(1, seeds.batch_index(step), seeds.batch(step), buffer.view());
        ASSERT_NO_FATAL_FAILURE(CheckBatch(fanouts, seeds.batch(step), buffer.view(), layout.capacity))
            << "seed " << seed << " step " << step << " fanouts[0] " << fanouts[0];
      }
    }
  }
}

std::vector<std::vector<std::byte>> Epoch(const GraphData& graph, const HomogeneousLayout& layout,
                                          const std::vector<int32_t>& fanouts, uint64_t seed, EpochSeeds seeds,
                                          int threads, int num_slots) {
  std::vector<HomogeneousBuffer> buffers(num_slots, HomogeneousBuffer(layout));
  std::vector<HomogeneousView> slots;
  for (HomogeneousBuffer& b : buffers) slots.push_back(b.view());
  const std::unique_ptr<ThreadPool> workers = *ThreadPool::Create(threads, "the test's producers");
  CpuProducer producer(*CpuProducer::InMemory({&graph, SamplingSpec{.fanouts = {fanouts}}, std::nullopt, seed, {}},
                                              {AsBatchViews(slots), {}, nullptr}, threads),
                       static_cast<int>(slots.size()), 2, std::move(seeds), *workers, threads);
  std::vector<std::vector<std::byte>> out;
  int64_t expected_step = 0;
  while (auto ready = producer.Next()) {
    EXPECT_EQ(ready->step, expected_step++);
    out.push_back(testing::BatchContents(slots[ready->slot], layout.feature_row_bytes));
    producer.Release(ready->slot);
  }
  EXPECT_EQ(expected_step, producer.num_steps());
  return out;
}

TEST_F(SamplerTest, SameSeedSameBatchesAtAnyThreadCount) {
  const std::vector<int32_t> fanouts = {10, 5};
  const HomogeneousLayout layout = Layout(SamplingSpec::OneRelation(32, fanouts));
  const SeedScheduleSpec schedule{.seed = 4, .batch_size = 32, .rank = 1, .world_size = 2};
  const auto one = Epoch(*graph_, layout, fanouts, 4, EpochSeeds(Split(ArrayId::kTrain), schedule, 2), 1, 1);
  const auto three = Epoch(*graph_, layout, fanouts, 4, EpochSeeds(Split(ArrayId::kTrain), schedule, 2), 3, 5);
  ASSERT_GT(one.size(), 10u);
  EXPECT_EQ(one, three);
  const auto other = Epoch(*graph_, layout, fanouts, 5, EpochSeeds(Split(ArrayId::kTrain), schedule, 2), 2, 2);
  ASSERT_EQ(other.size(), one.size());
  EXPECT_NE(other[0], one[0]);
}

// The same epoch in two stages, features read from the dataset's file through a RowCache of `cache_rows`.
std::vector<std::vector<std::byte>> StagedEpoch(const DatasetDir& dir, const HomogeneousLayout& layout,
                                                const std::vector<int32_t>& fanouts, uint64_t seed, EpochSeeds seeds,
                                                int threads, int num_slots, int64_t cache_rows, int window,
                                                absl::Status* status = nullptr,
                                                const std::function<void()>& after_first_batch = nullptr,
                                                std::shared_ptr<const std::vector<bool>> held = {}) {
  GraphData graph{dir.manifest(), dir.arrays(), dir.schema()};
  graph.arrays.data[graph.arrays.positions[static_cast<int>(ArrayId::kFeatures)]] = nullptr;  // none in memory
  const NpyFile& file = dir.file(ArrayId::kFeatures);
  const RowTable table{file.path(), file.header().data_offset, layout.feature_row_bytes, graph.num_nodes()};
  auto cache = RowCache::Create(table, cache_rows * RowCache::BytesPerRow(table.row_bytes), nullptr,
                                {.reader = {.queue_depth = 8}});
  EXPECT_TRUE(cache.ok()) << cache.status();
  std::vector<HomogeneousBuffer> buffers(num_slots, HomogeneousBuffer(layout));
  std::vector<HomogeneousView> slots;
  for (HomogeneousBuffer& b : buffers) slots.push_back(b.view());
  const std::unique_ptr<ThreadPool> workers = *ThreadPool::Create(threads, "the test's producers");
  CpuProducer producer(
      *CpuProducer::OnStorage({&graph, SamplingSpec{.fanouts = {fanouts}}, std::nullopt, seed, AsBatchLayout(layout)},
                              {AsBatchViews(slots), {}, nullptr}, {cache->get()}, window, threads, 2, {held}),
      num_slots, 2, std::move(seeds), *workers, threads);
  std::vector<std::vector<std::byte>> out;
  const auto* rows =
      static_cast<const std::byte*>(dir.arrays().data[graph.arrays.positions[static_cast<int>(ArrayId::kFeatures)]]);
  uint64_t held_rows = 0;
  while (auto ready = producer.Next()) {
    const HomogeneousView& batch = slots[ready->slot];
    for (int64_t i = 0; held != nullptr && i < batch.num_nodes(); ++i) {  // what the other tier fills
      const int64_t id = batch.node_ids[i];
      if ((*held)[id]) {
        ++held_rows;
        std::memcpy(static_cast<std::byte*>(batch.features) + i * table.row_bytes, rows + id * table.row_bytes,
                    table.row_bytes);
      }
    }
    out.push_back(testing::BatchContents(slots[ready->slot], layout.feature_row_bytes));
    producer.Release(ready->slot);
    if (out.size() == 1 && after_first_batch) after_first_batch();
  }
  if (status != nullptr) *status = producer.status();
  EXPECT_EQ((*cache)->stats().window, 0) << "every announced batch gathered or withdrawn";
  EXPECT_EQ((*cache)->stats().held_elsewhere, held_rows) << "the rows the other tier served, counted by the cache";
  for (int64_t id = 0; held != nullptr && id < graph.num_nodes(); ++id) {
    if ((*held)[id]) {
      EXPECT_EQ((*cache)->SlotOf(id), -1) << "row " << id << " is held elsewhere: never read";
    }
  }
  return out;
}

TEST_F(SamplerTest, TwoStagesThroughAStorageCacheGiveTheSameBatches) {
  const std::vector<int32_t> fanouts = {10, 5};
  const HomogeneousLayout layout = Layout(SamplingSpec::OneRelation(32, fanouts));
  const SeedScheduleSpec schedule{.seed = 4, .batch_size = 32};
  const auto expected = Epoch(*graph_, layout, fanouts, 4, EpochSeeds(Split(ArrayId::kTrain), schedule, 2), 2, 2);
  for (const int64_t cache_rows : {layout.capacity.max_nodes, 2 * layout.capacity.max_nodes, graph_->num_nodes()}) {
    for (const auto& [window, threads, slots] : {std::tuple{1, 1, 1}, {3, 2, 2}, {8, 3, 4}}) {
      const auto staged = StagedEpoch(*dataset_, layout, fanouts, 4, EpochSeeds(Split(ArrayId::kTrain), schedule, 2),
                                      threads, slots, cache_rows, window);
      EXPECT_TRUE(staged == expected) << "cache " << cache_rows << " rows, window " << window << ", threads " << threads
                                      << ", slots " << slots;
    }
  }
}

TEST_F(SamplerTest, RowsHeldByAnotherTierAreNotReadAndTheOthersLandInTheirPlaces) {
  const std::vector<int32_t> fanouts = {10, 5};
  const HomogeneousLayout layout = Layout(SamplingSpec::OneRelation(32, fanouts));
  const SeedScheduleSpec schedule{.seed = 4, .batch_size = 32};
  const auto expected = Epoch(*graph_, layout, fanouts, 4, EpochSeeds(Split(ArrayId::kTrain), schedule, 2), 2, 2);
  auto held = std::make_shared<std::vector<bool>>(graph_->num_nodes(), false);
  for (int64_t id = 0; id < graph_->num_nodes(); id += 3) (*held)[id] = true;
  for (const auto& [window, threads, slots] : {std::tuple{1, 1, 1}, {4, 3, 3}}) {
    const auto staged = StagedEpoch(*dataset_, layout, fanouts, 4, EpochSeeds(Split(ArrayId::kTrain), schedule, 2),
                                    threads, slots, graph_->num_nodes(), window, nullptr, nullptr, held);
    EXPECT_TRUE(staged == expected) << "window " << window << ", threads " << threads;
  }
}

TEST_F(SamplerTest, AFeatureFileTruncatedUnderTheStagesStopsThemWithTheError) {
  ScratchDir copy;
  std::filesystem::copy(*dir_ / "g", copy / "g");
  auto dir = DatasetDir::Open(copy / "g");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string features = dir->file(ArrayId::kFeatures).path();
  const std::vector<int32_t> fanouts = {10, 5};
  const HomogeneousLayout layout = Layout(SamplingSpec::OneRelation(32, fanouts));
  absl::Status status;
  const auto staged =
      StagedEpoch(*dir, layout, fanouts, 4, EpochSeeds(Split(ArrayId::kTrain), {.seed = 4, .batch_size = 32}, 2), 1, 1,
                  graph_->num_nodes(), 1, &status,
                  [&] { std::filesystem::resize_file(features, std::filesystem::file_size(features) / 2); });
  EXPECT_TRUE(absl::IsDataLoss(status)) << status;
  EXPECT_NE(status.message().find(features), std::string::npos) << status;
  EXPECT_LT(staged.size(), 10u);
}

TEST_F(SamplerTest, SameSeedsDifferentSeedGiveDifferentNeighbors) {
  const std::vector<int32_t> fanouts = {3};
  const HomogeneousLayout layout = Layout(SamplingSpec::OneRelation(128, fanouts));
  HomogeneousBuffer a(layout), b(layout);
  const auto seeds = Split(ArrayId::kTrain).subspan(0, 128);
  CpuSampler(*graph_, {.fanouts = {fanouts}}, 1).Sample(0, 0, seeds, a.view());
  CpuSampler(*graph_, {.fanouts = {fanouts}}, 2).Sample(0, 0, seeds, b.view());
  EXPECT_NE(testing::BatchContents(a.view(), layout.feature_row_bytes),
            testing::BatchContents(b.view(), layout.feature_row_bytes));
}

// Seed lists keep duplicates: a batch of one node repeated as often as the graph has nodes holds all those
// entries plus every node they reach, more entries than the graph has nodes. The layout must hold them.
TEST_F(SamplerTest, RepeatedSeedsFitTheLayout) {
  const int64_t n = graph_->num_nodes();
  const int64_t* indptr = graph_->arrays.indptr();
  int64_t hub = 0;
  for (int64_t v = 1; v < n; ++v) {
    if (indptr[v + 1] - indptr[v] > indptr[hub + 1] - indptr[hub]) hub = v;
  }
  const std::vector<int32_t> fanouts = {-1, -1};
  const HomogeneousLayout layout = Layout(SamplingSpec::OneRelation(n, fanouts, /*seeds_may_repeat=*/true));
  HomogeneousBuffer buffer(layout);
  const std::vector<int64_t> seeds(n, hub);
  CpuSampler(*graph_, {.fanouts = {fanouts}}, 1).Sample(0, 0, seeds, buffer.view());
  const HomogeneousView b = buffer.view();
  ASSERT_GT(b.num_nodes(), n);
  ASSERT_LE(b.num_nodes(), layout.capacity.max_nodes);
  ASSERT_LE(b.num_edges(), layout.capacity.max_edges);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(b.node_ids[i], hub);
  const std::set<int64_t> reached(b.node_ids + n, b.node_ids + b.num_nodes());
  EXPECT_EQ(static_cast<int64_t>(reached.size()), b.num_nodes() - n) << "each node reached once";
  EXPECT_FALSE(reached.contains(hub));
}

TEST(HomogeneousCapacity, BoundsAndLimits) {
  auto c =
      ComputeHomogeneousCapacity(SamplingSpec::OneRelation(1024, {15, 10, 5}), 1'000'000'000, 10'000'000'000, 5000);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->max_seeds, 1024);
  EXPECT_EQ(c->max_edges, 1024 * 15 + 1024 * 150 + 1024 * 750);
  EXPECT_EQ(c->max_nodes, 1024 + 1024 * 15 + 1024 * 150 + 1024 * 750);
  // Capped by the graph: at most all 100 nodes, and each hop at most every edge.
  auto small = ComputeHomogeneousCapacity(SamplingSpec::OneRelation(1024, {-1, -1}), 100, 900, 40);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->max_seeds, 100);
  EXPECT_EQ(small->max_nodes, 100);
  EXPECT_EQ(small->max_edges, 1800);
  ASSERT_EQ(small->hops.size(), 2u);
  EXPECT_EQ(small->hops[1].frontier, 100);
  EXPECT_FALSE(
      ComputeHomogeneousCapacity(SamplingSpec::OneRelation(1 << 20, {-1, -1}), 1'000'000'000, 100'000'000'000, 100000)
          .ok());
  // Seeds from a list that may repeat: seed entries and hop-1 edges are not capped by the graph.
  auto repeated = ComputeHomogeneousCapacity(SamplingSpec::OneRelation(1024, {-1, 5}, true), 100, 900, 40);
  ASSERT_TRUE(repeated.ok());
  EXPECT_EQ(repeated->max_seeds, 1024);
  EXPECT_EQ(repeated->hops[0].edges, 1024 * 40);
  EXPECT_EQ(repeated->hops[1].edges, 100 * 5);
  EXPECT_EQ(repeated->max_nodes, 1024 + 99);
  const DatasetSchema schema = HomogeneousSchema(100, 900);
  EXPECT_EQ(CheckSamplingSpec(SamplingSpec::OneRelation(0, {5}), schema).message(),
            "batch_size = 0 (must be at least 1)");
  EXPECT_EQ(CheckSamplingSpec(SamplingSpec::OneRelation(8, {}), schema).message(),
            "fanouts has 0 entries (need 1 to 16, one per hop)");
  EXPECT_EQ(CheckSamplingSpec(SamplingSpec::OneRelation(8, {5, -2}), schema).message(),
            "fanouts[1] = -2 (must be -1 for all neighbors, or 0 or more)");
  EXPECT_TRUE(CheckHopFanouts(std::vector<int32_t>{5, 0}).ok());  // the second hop draws none
  EXPECT_EQ(CheckHopFanouts(std::vector<int32_t>{5, -7}).message(),
            "fanouts[1] = -7 (must be -1 for all neighbors, or 0 or more)");
}

}  // namespace
}  // namespace gnnd
