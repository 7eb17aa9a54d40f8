#include "tools/dataset/csc_builder.h"

#include "common/dataset/npy.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"

namespace gnnd::dataset {
namespace {

using testing::ScratchDir;

struct Csc {
  std::vector<int64_t> indptr;
  std::vector<int32_t> indices;
  std::vector<int64_t> ids;  // options.edge_ids
};

Csc Build(const std::vector<std::pair<int64_t, int64_t>>& edges, int64_t n, CscOptions options) {
  ScratchDir dir;
  auto spool = EdgeSpool::Create(dir / "spool", n);
  EXPECT_TRUE(spool.ok());
  for (auto [u, v] : edges) EXPECT_TRUE(spool->Add(u, v, "test").ok());
  auto count = spool->BuildCsc(dir.path(), options);
  EXPECT_TRUE(count.ok()) << count.status();
  auto indptr = NpyFile::Open(dir / "indptr.npy");
  auto indices = NpyFile::Open(dir / "indices.npy");
  EXPECT_TRUE(indptr.ok() && indices.ok());
  EXPECT_EQ(indices->header().dtype, DType::kInt32);
  EXPECT_EQ(indices->header().shape[0], *count);
  Csc csc;
  csc.indptr.assign(indptr->as<int64_t>(), indptr->as<int64_t>() + n + 1);
  csc.indices.assign(indices->as<int32_t>(), indices->as<int32_t>() + *count);
  if (options.edge_ids) {
    auto ids = NpyFile::Open(dir / "e_id.npy");
    EXPECT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(ids->header().shape, std::vector<int64_t>{*count});
    csc.ids.assign(ids->as<int64_t>(), ids->as<int64_t>() + *count);
  }
  return csc;
}

const std::vector<std::pair<int64_t, int64_t>> kEdges = {{3, 0}, {1, 0}, {1, 0}, {2, 2}, {0, 3}, {2, 3}, {1, 3}};

TEST(CscBuilder, InNeighborsSortedBySource) {
  Csc csc = Build(kEdges, 4, {});
  EXPECT_EQ(csc.indptr, (std::vector<int64_t>{0, 3, 3, 4, 7}));
  EXPECT_EQ(csc.indices, (std::vector<int32_t>{1, 1, 3, 2, 0, 1, 2}));
}

TEST(CscBuilder, DedupDropsParallelEdgesAndSelfLoops) {
  Csc csc = Build(kEdges, 4, {.dedup = true});
  EXPECT_EQ(csc.indptr, (std::vector<int64_t>{0, 2, 2, 2, 5}));
  EXPECT_EQ(csc.indices, (std::vector<int32_t>{1, 3, 0, 1, 2}));
}

TEST(CscBuilder, UndirectedAddsReverseEdges) {
  Csc csc = Build({{0, 1}, {2, 1}, {1, 0}}, 3, {.undirected = true, .dedup = true});
  // Edges {0-1, 1-2}: 0 <- 1; 1 <- 0, 2; 2 <- 1.
  EXPECT_EQ(csc.indptr, (std::vector<int64_t>{0, 1, 3, 4}));
  EXPECT_EQ(csc.indices, (std::vector<int32_t>{1, 0, 2, 1}));
  Csc doubled = Build({{0, 1}, {1, 0}}, 2, {.undirected = true});
  EXPECT_EQ(doubled.indices, (std::vector<int32_t>{1, 1, 0, 0}));  // without dedup both copies stay
}

TEST(CscBuilder, ResultDoesNotDependOnEdgeOrderOrThreads) {
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t i = 0; i < 20000; ++i) edges.push_back({(i * 7919) % 1000, (i * 104729) % 997});
  Csc a = Build(edges, 1000, {.dedup = true, .threads = 1});
  std::reverse(edges.begin(), edges.end());
  Csc b = Build(edges, 1000, {.dedup = true, .threads = 4});
  EXPECT_EQ(a.indptr, b.indptr);
  EXPECT_EQ(a.indices, b.indices);
}

// Each CSC edge's id is its row in the input: parallel edges in input order, an undirected copy its edge's, a
// deduplicated edge its first row's, a dropped self-loop nowhere.
TEST(CscBuilder, EdgeIdsAreTheInputRows) {
  // kEdges rows: 0: 3->0, 1: 1->0, 2: 1->0, 3: 2->2, 4: 0->3, 5: 2->3, 6: 1->3.
  Csc plain = Build(kEdges, 4, {.edge_ids = true});
  EXPECT_EQ(plain.indices, (std::vector<int32_t>{1, 1, 3, 2, 0, 1, 2}));
  EXPECT_EQ(plain.ids, (std::vector<int64_t>{1, 2, 0, 3, 4, 6, 5}));
  Csc dedup = Build(kEdges, 4, {.dedup = true, .edge_ids = true});
  EXPECT_EQ(dedup.indices, (std::vector<int32_t>{1, 3, 0, 1, 2}));
  EXPECT_EQ(dedup.ids, (std::vector<int64_t>{1, 0, 4, 6, 5}));
  Csc undirected = Build({{0, 1}, {2, 1}, {1, 0}}, 3, {.undirected = true, .edge_ids = true});
  // 0 <- 1 (row 0 reversed, row 2); 1 <- 0 (row 0, row 2 reversed), 2 (row 1); 2 <- 1 (row 1 reversed).
  EXPECT_EQ(undirected.indices, (std::vector<int32_t>{1, 1, 0, 0, 2, 1}));
  EXPECT_EQ(undirected.ids, (std::vector<int64_t>{0, 2, 0, 2, 1, 1}));
  // With ids, the CSC itself is the one built without them.
  std::vector<std::pair<int64_t, int64_t>> edges;
  for (int64_t i = 0; i < 20000; ++i) edges.push_back({(i * 7919) % 1000, (i * 104729) % 997});
  Csc with = Build(edges, 1000, {.dedup = true, .threads = 4, .edge_ids = true});
  Csc without = Build(edges, 1000, {.dedup = true, .threads = 4});
  EXPECT_EQ(with.indptr, without.indptr);
  EXPECT_EQ(with.indices, without.indices);
  for (size_t k = 0; k < with.ids.size(); ++k) {
    ASSERT_EQ(edges[with.ids[k]].first, with.indices[k]) << k;
  }
}

TEST(CscBuilder, OutOfRangeIdNamesWhere) {
  ScratchDir dir;
  auto spool = EdgeSpool::Create(dir / "spool", 5);
  ASSERT_TRUE(spool.ok());
  absl::Status s = spool->Add(1, 5, "edges.txt line 9");
  EXPECT_EQ(s.message(), "edges.txt line 9: node id 5 is out of range [0, 5)");
  s = spool->Add(-1, 2, "edges.txt line 10");
  EXPECT_EQ(s.message(), "edges.txt line 10: node id -1 is out of range [0, 5)");
}

}  // namespace
}  // namespace gnnd::dataset
