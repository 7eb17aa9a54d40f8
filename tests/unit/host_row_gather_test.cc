// The host's rows of a batch whose graph the GPU sampled (open.producer "host_gather"): gathered over a pool's
// threads in chunks, they are byte for byte the CPU backend's batch; rows a GPU tier holds and rows past a slot's
// feature rows stay unwritten; a gatherer destroyed with gathers in flight waits for them, and each one's `done`
// comes after its every row.
#include "server/sessions/host_row_gather.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/base/thread_pool.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"

namespace gnnd {
namespace {

// Every edge attribute and e_id of every relation, fanouts [5, 3].
SamplingSpec SpecWithEdgeData(const DatasetSchema& schema, int seed_type) {
  SamplingSpec spec;
  spec.batch_size = 48;
  spec.seed_type = seed_type;
  spec.fanouts.assign(schema.relations.size(), {5, 3});
  spec.edge_ids = true;
  for (const RelationSchema& rel : schema.relations) {
    std::vector<int>& attrs = spec.edge_attrs.emplace_back();
    for (size_t a = 0; a < rel.edge_attrs.size(); ++a) attrs.push_back(static_cast<int>(a));
  }
  return spec;
}

// A batch as the GPU leaves it for the host: the CPU backend's batch with its rows unwritten (0x5a) and e_id back
// to CSC positions.
void AsSampledGraph(const GraphData& graph, const BatchView& view, const BatchLayout& layout, std::byte* base,
                    const std::vector<std::byte>& unwritten) {
  for (size_t t = 0; t < view.types.size(); ++t) {
    const BatchView::Type& type = view.types[t];
    const BatchLayout::TypeArrays& arrays = layout.types[t];
    if (type.features != nullptr) {
      std::memcpy(base + arrays.features, unwritten.data() + arrays.features,
                  static_cast<size_t>(type.feature_rows) * graph.schema.node_types[t].feature_row_bytes());
    }
    if (type.labels != nullptr) std::memset(type.labels, 0x5a, sizeof(int64_t) * layout.capacity.max_seeds);
    for (const BatchView::EdgeRows& rows : type.attrs) {
      std::memset(rows.data, 0x5a, rows.row_bytes * static_cast<size_t>(layout.capacity.max_nodes[t]));
    }
  }
  for (size_t r = 0; r < view.relations.size(); ++r) {
    const BatchView::Relation& edges = view.relations[r];
    if (edges.e_id == nullptr) continue;
    const RelationSchema& rel = graph.schema.relations[r];
    const auto* stored = static_cast<const int64_t*>(graph.arrays.data[rel.edge_ids]);
    std::unordered_map<int64_t, int64_t> position;
    for (int64_t p = 0; p < rel.num_edges; ++p) position[stored[p]] = p;
    for (int64_t k = 0; k < view.num_edges(static_cast<int>(r)); ++k) edges.e_id[k] = position.at(edges.e_id[k]);
    for (const BatchView::EdgeRows& rows : edges.attrs) {
      std::memset(rows.data, 0x5a, rows.row_bytes * static_cast<size_t>(layout.capacity.max_edges[r]));
    }
  }
}

TEST(HostRowGather, RowsGatheredInChunksAreTheCpuBackendsBatch) {
  auto pool = ThreadPool::Create(4, "gather");
  ASSERT_TRUE(pool.ok());
  for (bool typed : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "typed " << typed);
    const testing::GeneratedGraph g(typed, {.seed = 4, .threads = 2, .edge_attrs = true});
    const GraphData& graph = g.graph();
    const int seed_type = typed ? graph.schema.NodeTypeNamed("paper") : 0;
    const SamplingSpec spec = SpecWithEdgeData(graph.schema, seed_type);
    testing::TypedBuffer want(graph, spec), got(graph, spec);
    const std::vector<std::byte> unwritten = got.bytes;
    std::vector<int64_t> seeds(48);
    for (int64_t i = 0; i < 48; ++i) seeds[i] = (i * 11) % graph.schema.node_types[seed_type].num_nodes;
    CpuSampler sampler(graph, spec, 3);
    sampler.Sample(0, 2, seeds, want.view);
    got.bytes = want.bytes;
    AsSampledGraph(graph, got.view, got.layout, got.bytes.data(), unwritten);
    ASSERT_NE(got.bytes, want.bytes);
    for (int64_t chunk : {int64_t{7}, HostRowGather::kChunkRows}) {
      HostRowGather gather(graph, {}, chunk);
      std::vector<std::byte> copy = got.bytes;
      const BatchView view = BatchView::At(copy.data(), got.layout);
      std::atomic<bool> done = false;
      gather.Start(view, **pool, [&] { done = true; });
      while (!done) std::this_thread::yield();
      EXPECT_EQ(copy, want.bytes) << "chunks of " << chunk;
    }
  }
}

TEST(HostRowGather, LeavesTheTiersRowsAndRowsPastTheSlotUnwritten) {
  auto pool = ThreadPool::Create(3, "gather");
  ASSERT_TRUE(pool.ok());
  const testing::GeneratedGraph g(false, {.seed = 5, .threads = 2});
  const GraphData& graph = g.graph();
  SamplingSpec spec = SamplingSpec::OneRelation(32, {4, 2});
  testing::TypedBuffer want(graph, spec), got(graph, spec);
  const std::vector<std::byte> unwritten = got.bytes;
  std::vector<int64_t> seeds(32);
  for (int64_t i = 0; i < 32; ++i) seeds[i] = i * 3;
  CpuSampler sampler(graph, spec, 1);
  sampler.Sample(0, 0, seeds, want.view);
  got.bytes = want.bytes;
  AsSampledGraph(graph, got.view, got.layout, got.bytes.data(), unwritten);
  const int64_t num_nodes = graph.schema.node_types[0].num_nodes;
  auto held = std::make_shared<std::vector<bool>>(num_nodes);
  for (int64_t v = 0; v < num_nodes; v += 2) (*held)[v] = true;  // the even rows are the GPU tier's
  BatchView view = BatchView::At(got.bytes.data(), got.layout);
  const int64_t nodes = view.num_nodes(0), fitting = nodes / 2;
  ASSERT_GT(nodes, 8);
  view.types[0].feature_rows = fitting;  // a slot holding half the batch's rows
  {
    HostRowGather gather(graph, {held}, 5);
    std::atomic<bool> done = false;
    gather.Start(view, **pool, [&] { done = true; });
    while (!done) std::this_thread::yield();
  }
  const size_t row_bytes = graph.schema.node_types[0].feature_row_bytes();
  const auto* features = static_cast<const std::byte*>(view.types[0].features);
  const auto* expected = static_cast<const std::byte*>(want.view.types[0].features);
  int64_t written = 0, left = 0;
  for (int64_t i = 0; i < nodes; ++i) {
    const bool gathered = i < fitting && !(*held)[view.types[0].node_ids[i]];
    const std::byte* source = gathered ? expected : unwritten.data() + got.layout.types[0].features;
    EXPECT_EQ(std::memcmp(features + i * row_bytes, source + i * row_bytes, row_bytes), 0) << "row " << i;
    (gathered ? written : left) += 1;
  }
  EXPECT_GT(written, 0);
  EXPECT_GT(left, 0);
}

// Gathers started back to back, the gatherer destroyed at once: its destructor waits for them (under ASan a write
// after the buffers go would show), and every `done` sees its batch whole.
TEST(HostRowGather, DestroyedWithGathersInFlightItWaitsForThem) {
  auto pool = ThreadPool::Create(4, "gather");
  ASSERT_TRUE(pool.ok());
  const testing::GeneratedGraph g(true, {.seed = 4, .threads = 2, .edge_attrs = true});
  const GraphData& graph = g.graph();
  const SamplingSpec spec = SpecWithEdgeData(graph.schema, graph.schema.NodeTypeNamed("paper"));
  testing::TypedBuffer want(graph, spec), sampled(graph, spec);
  const std::vector<std::byte> unwritten = sampled.bytes;
  std::vector<int64_t> seeds(48);
  for (int64_t i = 0; i < 48; ++i) seeds[i] = i;
  CpuSampler sampler(graph, spec, 9);
  sampler.Sample(1, 0, seeds, want.view);
  sampled.bytes = want.bytes;
  AsSampledGraph(graph, sampled.view, sampled.layout, sampled.bytes.data(), unwritten);
  for (int round = 0; round < 20; ++round) {
    constexpr int kGathers = 6;
    std::vector<std::vector<std::byte>> batches(kGathers, sampled.bytes);
    std::atomic<int> whole = 0, finished = 0;
    {
      HostRowGather gather(graph, {}, 16);
      for (auto& batch : batches) {
        gather.Start(BatchView::At(batch.data(), sampled.layout), **pool, [&] {
          whole += batch == want.bytes;
          ++finished;
        });
      }
    }
    EXPECT_EQ(finished, kGathers);
    EXPECT_EQ(whole, kGathers);
  }
}

}  // namespace
}  // namespace gnnd
