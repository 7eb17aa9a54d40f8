// Link batches on the GPU (kernels/cuda/link_stage.h with the CUDA sampler) against the CPU's (LinkStage with
// CpuSampler): the same hop-0 nodes,
// graph arrays (drawn around the excluded seed edges), features and pairs, byte for byte, for every
// negative mode and exclusion, fanouts with -1, the CSC in GPU or host memory, and a short last batch.
// Skips without a GPU.
#include "kernels/cuda/link_stage.h"

#include <cuda_runtime.h>

#include <cstring>
#include <numeric>
#include <random>

#include "common/batch/seeds.h"
#include "common/dataset/shm_store.h"
#include "gtest/gtest.h"
#include "kernels/cpu/link_stage.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"
#include "tools/dataset/synthetic_typed.h"

namespace gnnd::cuda {
namespace {

using test_util::Download;

template <typename T>
std::vector<T> Host(const T* host, int64_t count) {
  return std::vector<T>(host, host + count);
}

// A link session's spec and slot layout (as gnnd's open request makes them) for batches of `batch` pairs.
struct LinkSetup {
  SamplingSpec sampling;
  BatchLayout layout;
};
// Weighted negatives over `relation`'s endpoint types: every third node never drawn, the rest in proportion to
// 1 + its id % 7.
void WeighNegatives(const DatasetSchema& schema, int relation, NegativeSpec& negatives) {
  const RelationSchema& r = schema.relations[relation];
  for (auto [type, out] :
       {std::pair{r.src_type, &negatives.src_weights}, std::pair{r.dst_type, &negatives.dst_weights}}) {
    std::vector<float> weights(schema.node_types[type].num_nodes);
    for (size_t v = 0; v < weights.size(); ++v) weights[v] = v % 3 == 0 ? 0.f : 1.f + static_cast<float>(v % 7);
    auto cumulative = CumulativeWeights(weights, "weights");
    ASSERT_TRUE(cumulative.ok()) << cumulative.status();
    *out = std::make_shared<const std::vector<uint64_t>>(*std::move(cumulative));
  }
}

// Time: none, the node times, or each relation's edge attribute "time" (the pairs' times given with them).
enum class Time { kNone, kNodes, kEdges };
LinkSetup MakeLinkSetup(const GraphData& graph, const LinkSeedSpec& spec, const std::vector<int32_t>& fanouts,
                        int64_t batch, bool weighted = false, bool disjoint = false, Time time = Time::kNone,
                        TemporalStrategy strategy = TemporalStrategy::kUniform, LaborSpec labor = {},
                        bool induced = false, int64_t time_window = -1, bool replace = false) {
  LinkSetup s;
  s.sampling = LinkSampling(spec, std::vector<std::vector<int32_t>>(graph.schema.relations.size(), fanouts),
                            graph.schema, batch);
  s.sampling.edge_ids = true;  // and every edge attribute, as a session asks by default
  for (const RelationSchema& r : graph.schema.relations) {
    std::vector<int>& attrs = s.sampling.edge_attrs.emplace_back();
    for (size_t a = 0; a < r.edge_attrs.size(); ++a) attrs.push_back(static_cast<int>(a));
    if (weighted) {
      int at = 0;
      while (r.edge_attrs[at].name != "edge_weight") ++at;
      s.sampling.edge_weights.push_back(at);
    }
    if (time == Time::kEdges) {
      int at = 0;
      while (r.edge_attrs[at].name != "time") ++at;
      s.sampling.time.edge_times.push_back(at);
    }
  }
  s.sampling.disjoint = disjoint || time != Time::kNone;
  s.sampling.time.node_level = time == Time::kNodes;
  s.sampling.time.rule = {.strategy = strategy, .window = time_window};
  s.sampling.neighbors.replace = replace;
  s.sampling.time.seed_times_given = time != Time::kNone;
  s.sampling.labor = labor;
  s.sampling.induced = induced;
  EXPECT_TRUE(CheckSamplingSpec(s.sampling, graph.schema).ok()) << CheckSamplingSpec(s.sampling, graph.schema);
  absl::StatusOr<BatchCapacity> capacity = ComputeBatchCapacity(s.sampling, graph.schema, graph.MaxInDegrees());
  EXPECT_TRUE(capacity.ok()) << capacity.status();
  s.layout = BatchLayout::Make(*capacity, s.sampling, graph.schema);
  AddPairArrays(s.layout, spec.relation, batch, spec.negatives, /*labeled=*/false, time != Time::kNone);
  return s;
}

TEST(CudaLinkStage, BatchesEqualTheCpusForEveryModeAndExclusion) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  gnnd::testing::ScratchDir dir;
  auto preset = dataset::PresetSpec("tiny", 0.5);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(
      dataset::Generate(*preset, {.seed = 6, .threads = 2, .edge_attrs = true, .node_attrs = true}, dir / "g").ok());
  auto source = DatasetDir::Open(dir / "g");
  ASSERT_TRUE(source.ok());
  const std::string name = absl::StrCat("linkgpu-", ::getpid());
  auto shm = ShmDataset::Load(name, *source, {});
  ASSERT_TRUE(shm.ok()) << shm.status();
  const GraphData graph{(*shm)->manifest(), (*shm)->arrays(), (*shm)->schema()};
  const int64_t num_nodes = graph.num_nodes();
  const int64_t* indptr = graph.arrays.indptr();
  const auto* indices = static_cast<const int32_t*>(graph.arrays[ArrayId::kIndices]);

  // Seed pairs: edges of the graph (a few twice, and a few of them reversed so reverse exclusion matters).
  std::mt19937_64 rng(2);
  std::vector<int64_t> src, dst;
  while (src.size() < 700) {
    const int64_t v = static_cast<int64_t>(rng() % num_nodes);
    if (indptr[v + 1] == indptr[v]) continue;
    src.push_back(indices[indptr[v] + static_cast<int64_t>(rng() % (indptr[v + 1] - indptr[v]))]);
    dst.push_back(v);
    if (src.size() % 40 == 0) src.push_back(dst.back()), dst.push_back(src[src.size() - 2]);
  }
  auto pairs = std::make_shared<std::vector<int64_t>>(src);
  pairs->insert(pairs->end(), dst.begin(), dst.end());
  const int64_t num_pairs = static_cast<int64_t>(src.size());

  for (const CscPlacement placement : {CscPlacement::kDevice, CscPlacement::kHost}) {
    auto device = DeviceDataset::Create(graph, placement);
    ASSERT_TRUE(device.ok()) << device.status();
    struct Case {
      NegativeSpec negatives;
      ExcludeMode exclude;
      std::vector<int32_t> fanouts;
      bool weighted = false;
      bool weighted_negatives = false;  // negatives' endpoints drawn in proportion to per-node weights
    };
    for (const Case& c : {Case{{NegativeMode::kBinary, 2, true}, ExcludeMode::kReverse, {4, 3}},
                          Case{{NegativeMode::kBinary, 2, true, 1.5}, ExcludeMode::kSelf, {3, 2}, false, true},
                          Case{{NegativeMode::kTriplet, 2, false}, ExcludeMode::kNone, {3}, false, true},
                          Case{{NegativeMode::kTriplet, 3, false}, ExcludeMode::kSelf, {-1, 2}},
                          Case{{NegativeMode::kNone, 1, false}, ExcludeMode::kNone, {5}},
                          Case{{NegativeMode::kBinary, 1, false}, ExcludeMode::kSelf, {-1}},
                          Case{{NegativeMode::kBinary, 2, false}, ExcludeMode::kReverse, {3, 2}, true},
                          Case{{NegativeMode::kNone, 1, false}, ExcludeMode::kSelf, {-1, 2}, true}}) {
      LinkSeedSpec spec;
      spec.seed_edges = pairs;
      spec.negatives = c.negatives;
      if (c.weighted_negatives) WeighNegatives(graph.schema, 0, spec.negatives);
      spec.exclude = c.exclude;
      constexpr int64_t kBatch = 128;
      const LinkSetup setup = MakeLinkSetup(graph, spec, c.fanouts, kBatch, c.weighted);
      auto cpu = LinkStage::Create(graph, setup.sampling, spec, 7);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      CpuSampler cpu_sampler(graph, setup.sampling, 7);
      auto gpu_sampler =
          CudaSampler::Create((*device)->graph(), setup.sampling, 7, setup.layout, {.use_graphs = false});
      ASSERT_TRUE(gpu_sampler.ok()) << gpu_sampler.status();
      auto gpu = CudaLinkStage::Create(graph, (*device)->graph(), **gpu_sampler, spec, 7);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      // The one layout read as API 1.0 clients read a homogeneous slot.
      const HomogeneousLayout layout = HomogeneousLayoutOf(setup.layout);
      std::vector<std::byte> expected_slot(setup.layout.total_bytes);
      LinkBatch expected;
      void* device_batch = nullptr;
      ASSERT_EQ(cudaMalloc(&device_batch, setup.layout.total_bytes), cudaSuccess);
      const HomogeneousView out = HomogeneousView::At(device_batch, layout);
      std::vector<int64_t> positions(num_pairs);
      std::iota(positions.begin(), positions.end(), 0);
      EpochSeeds seeds(positions, {.seed = 7, .batch_size = kBatch}, 1);
      for (int64_t step = 0; step < seeds.num_steps(); ++step) {
        const std::string what =
            absl::StrCat("placement ", static_cast<int>(placement), ", mode ", static_cast<int>(c.negatives.mode),
                         ", exclude ", static_cast<int>(c.exclude), ", ratio ", c.negatives.ratio,
                         ", weighted negatives ", c.weighted_negatives, ", step ", step);
        expected.graph = BatchView::At(expected_slot.data(), setup.layout);
        ASSERT_TRUE(cpu->Sample(cpu_sampler, 1, seeds.batch_index(step), seeds.batch(step), expected).ok());
        ASSERT_EQ(cudaMemset(device_batch, 0xab, setup.layout.total_bytes), cudaSuccess);
        const absl::Status sampled =
            (*gpu)->Sample(1, seeds.batch_index(step), seeds.batch(step), device_batch, nullptr);
        ASSERT_TRUE(sampled.ok()) << sampled << " " << what;
        ASSERT_TRUE((*gpu)->CheckStrict(seeds.batch_index(step), nullptr).ok()) << what;
        const HomogeneousView e = HomogeneousView::At(expected_slot.data(), layout);
        const int hops = layout.num_hops;
        ASSERT_EQ(Download(out.num_nodes_per_hop, hops + 1), Host(e.num_nodes_per_hop, hops + 1)) << what;
        ASSERT_EQ(Download(out.num_edges_per_hop, hops), Host(e.num_edges_per_hop, hops)) << what;
        EXPECT_EQ(Download(out.node_ids, e.num_nodes()), Host(e.node_ids, e.num_nodes())) << what;
        EXPECT_EQ(Download(out.edge_src, e.num_edges()), Host(e.edge_src, e.num_edges())) << what;
        EXPECT_EQ(Download(out.edge_dst, e.num_edges()), Host(e.edge_dst, e.num_edges())) << what;
        const BatchView::Relation& edges = expected.graph.relations[0];
        const BatchView::Relation device_edges = BatchView::At(device_batch, setup.layout).relations[0];
        ASSERT_NE(edges.e_id, nullptr);
        EXPECT_EQ(Download(device_edges.e_id, e.num_edges()), Host(edges.e_id, e.num_edges())) << what;
        for (size_t a = 0; a < edges.attrs.size(); ++a) {
          const size_t bytes = edges.attrs[a].row_bytes * static_cast<size_t>(e.num_edges());
          EXPECT_EQ(Download(static_cast<const std::byte*>(device_edges.attrs[a].data), static_cast<int64_t>(bytes)),
                    Host(static_cast<const std::byte*>(edges.attrs[a].data), static_cast<int64_t>(bytes)))
              << what << ", edge attribute " << a;
        }
        const auto* rows = static_cast<const std::byte*>(e.features);
        EXPECT_EQ(Download(static_cast<const std::byte*>(out.features), e.num_nodes() * layout.feature_row_bytes),
                  Host(rows, e.num_nodes() * layout.feature_row_bytes))
            << what;
        const LinkSeeds& s = expected.seeds;
        const auto positives = static_cast<int64_t>(seeds.batch(step).size());
        if (c.negatives.mode == NegativeMode::kTriplet) {
          EXPECT_EQ(Download((*gpu)->seeds().src_index(), positives), s.src_index) << what;
          EXPECT_EQ(Download((*gpu)->seeds().dst_pos_index(), positives), s.dst_pos_index) << what;
          EXPECT_EQ(Download((*gpu)->seeds().dst_neg_index(positives), positives * c.negatives.amount), s.dst_neg_index)
              << what;
        } else {
          EXPECT_EQ(Download((*gpu)->seeds().pair_src(), s.pair_src.size()), s.pair_src) << what;
          EXPECT_EQ(Download((*gpu)->seeds().pair_dst(), s.pair_dst.size()), s.pair_dst) << what;
        }
      }
      cudaFree(device_batch);
    }
  }
  shm->reset();
  EXPECT_TRUE(ShmDataset::Remove(name).ok());
}

// Typed link batches: the mag preset with author-writes-paper edge splits, rev_ relations and times, every array
// of the slot (each type's nodes and features, each relation's edges, the pairs) equal to the CPU's, byte for
// byte, with the CSC in GPU and host memory; disjoint and temporal batches (node and edge times, uniform and
// last, temporal negatives) over given pairs with their times.
TEST(CudaLinkStage, TypedBatchesEqualTheCpus) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  gnnd::testing::ScratchDir dir;
  auto preset = dataset::TypedPresetSpec("mag", 0.003);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(dataset::GenerateTyped(*preset,
                                     {.seed = 4,
                                      .threads = 2,
                                      .add_reverse = true,
                                      .link_relation = "author___writes___paper",
                                      .edge_attrs = true,
                                      .temporal = true,
                                      .node_attrs = true},
                                     dir / "mag")
                  .ok());
  auto source = DatasetDir::Open(dir / "mag");
  ASSERT_TRUE(source.ok());
  const std::string name = absl::StrCat("typedlinkgpu-", ::getpid());
  auto shm = ShmDataset::Load(name, *source, {});
  ASSERT_TRUE(shm.ok()) << shm.status();
  const GraphData graph{(*shm)->manifest(), (*shm)->arrays(), (*shm)->schema()};
  const DatasetSchema& schema = graph.schema;
  int writes = 0;
  while (schema.relations[writes].key() != "author___writes___paper") ++writes;
  constexpr int64_t kBatch = 96;
  uint64_t* strict = nullptr;
  ASSERT_EQ(cudaMallocHost(&strict, sizeof(uint64_t)), cudaSuccess);

  for (const CscPlacement placement : {CscPlacement::kDevice, CscPlacement::kHost}) {
    auto device = DeviceDataset::Create(graph, placement);
    ASSERT_TRUE(device.ok()) << device.status();
    struct Case {
      NegativeSpec negatives;
      ExcludeMode exclude;
      std::vector<int32_t> fanouts;
      bool weighted = false;
      bool disjoint = false;
      Time time = Time::kNone;
      TemporalStrategy strategy = TemporalStrategy::kUniform;
      LaborSpec labor = {};
      bool induced = false;
      bool weighted_negatives = false;  // negatives' endpoints drawn in proportion to per-node weights
      int64_t time_window = -1;         // the temporal rule's window (none)
      bool replace = false;             // uniform or weighted draws with replacement
    };
    using enum NegativeMode;
    using enum TemporalStrategy;
    const LaborSpec labor{.active = true}, dependent{.active = true, .dependency = {.layer = true, .batches = 3}};
    for (const Case& c :
         {Case{{kBinary, 2, true},
               ExcludeMode::kReverse,
               {4, 3},
               false,
               false,
               Time::kNone,
               kUniform,
               {},
               false,
               false,
               -1,
               true},
          Case{{kTriplet, 2, false},
               ExcludeMode::kSelf,
               {3, 2},
               true,
               true,
               Time::kNone,
               kUniform,
               {},
               false,
               false,
               -1,
               true},
          Case{{kBinary, 2, true}, ExcludeMode::kReverse, {4, 3}},
          Case{{kTriplet, 3, false}, ExcludeMode::kSelf, {-1, 2}}, Case{{kNone, 1, false}, ExcludeMode::kNone, {3}},
          Case{{kBinary, 1, false}, ExcludeMode::kReverse, {3, 2}, true},
          Case{{kBinary, 2, false}, ExcludeMode::kSelf, {4, 3}, false, true},
          Case{{kBinary, 2, true}, ExcludeMode::kReverse, {4, 3}, false, true, Time::kNodes},
          Case{{kTriplet, 2, false}, ExcludeMode::kNone, {-1, 2}, false, true, Time::kNodes, kLast},
          Case{{kNone, 1, false}, ExcludeMode::kSelf, {5, 3}, false, true, Time::kEdges},
          Case{{kBinary, 1, false}, ExcludeMode::kNone, {3, 2}, false, true, Time::kEdges, kLast},
          // Time windows (the pairs' times spread over the papers', node ids): node-level uniform, edge-level last.
          Case{{kBinary, 2, true},
               ExcludeMode::kReverse,
               {4, 3},
               false,
               true,
               Time::kNodes,
               kUniform,
               {},
               false,
               false,
               300},
          Case{
              {kBinary, 1, false}, ExcludeMode::kSelf, {3, 2}, false, true, Time::kEdges, kLast, {}, false, false, 200},
          Case{{kBinary, 2, true}, ExcludeMode::kReverse, {4, 3}, false, false, Time::kNone, kUniform, labor},
          Case{{kTriplet, 2, false}, ExcludeMode::kSelf, {-1, 2}, false, false, Time::kNone, kUniform, dependent},
          Case{{kBinary, 2, false}, ExcludeMode::kNone, {3, 2}, false, false, Time::kNone, kUniform, {}, true},
          Case{{kTriplet, 2, true}, ExcludeMode::kNone, {-1, 2}, true, false, Time::kNone, kUniform, {}, true},
          // A fraction of the positives (by round), weighted endpoints: on the device, and on the host (disjoint).
          Case{{kBinary, 2, true, 1.5}, ExcludeMode::kSelf, {3, 2}},
          Case{{kBinary, 1, false, 0.5}, ExcludeMode::kNone, {3, 2}, false, true},
          Case{{kBinary, 2, true}, ExcludeMode::kNone, {3, 2}, false, false, Time::kNone, kUniform, {}, false, true},
          Case{{kTriplet, 3, false}, ExcludeMode::kSelf, {3}, false, false, Time::kNone, kUniform, {}, false, true},
          Case{{kBinary, 2, false, 1.5},
               ExcludeMode::kNone,
               {3},
               false,
               true,
               Time::kNone,
               kUniform,
               {},
               false,
               true}}) {
      LinkSeedSpec spec;
      spec.relation = writes;
      spec.negatives = c.negatives;
      if (c.weighted_negatives) WeighNegatives(schema, writes, spec.negatives);
      spec.exclude = c.exclude;
      if (c.disjoint) {  // the train split's pairs, given with times spread over the papers' (node ids' times)
        const EdgeSplitSchema& train = schema.relations[writes].edge_splits[0];
        const auto* edges = static_cast<const int64_t*>(graph.arrays.data[train.edges]);
        spec.seed_edges = std::make_shared<const std::vector<int64_t>>(edges, edges + 2 * train.num_edges);
        std::vector<int64_t> times(train.num_edges);
        std::mt19937_64 rng(9);
        for (int64_t& t : times)
          t = static_cast<int64_t>(rng() % schema.node_types[schema.relations[writes].dst_type].num_nodes);
        spec.seed_edge_times = std::make_shared<const std::vector<int64_t>>(std::move(times));
      }
      const LinkSetup setup = MakeLinkSetup(graph, spec, c.fanouts, kBatch, c.weighted, c.disjoint, c.time, c.strategy,
                                            c.labor, c.induced, c.time_window, c.replace);
      auto cpu = LinkStage::Create(graph, setup.sampling, spec, 7);
      ASSERT_TRUE(cpu.ok()) << cpu.status();
      CpuSampler cpu_sampler(graph, setup.sampling, 7);
      auto gpu_sampler =
          CudaSampler::Create((*device)->graph(), setup.sampling, 7, setup.layout, {.use_graphs = false});
      ASSERT_TRUE(gpu_sampler.ok()) << gpu_sampler.status();
      auto gpu = CudaLinkStage::Create(graph, (*device)->graph(), **gpu_sampler, spec, 7);
      ASSERT_TRUE(gpu.ok()) << gpu.status();
      const BatchLayout& layout = setup.layout;
      const BatchSchema batch_schema = BatchSchemaOf(layout, schema);
      std::vector<std::byte> expected(layout.total_bytes), got(layout.total_bytes);
      void* device_slot = nullptr;
      ASSERT_EQ(cudaMalloc(&device_slot, layout.total_bytes), cudaSuccess);
      LinkBatch batch;
      batch.graph = BatchView::At(expected.data(), layout);
      std::vector<int64_t> positions(cpu->split_size());
      std::iota(positions.begin(), positions.end(), 0);
      EpochSeeds seeds(positions, {.seed = 7, .batch_size = kBatch}, 1);
      for (int64_t step : {int64_t{0}, int64_t{1}, seeds.num_steps() - 1}) {
        const std::string what = absl::StrCat(
            "placement ", static_cast<int>(placement), ", mode ", static_cast<int>(c.negatives.mode), ", disjoint ",
            c.disjoint, ", time ", static_cast<int>(c.time), ", labor ", c.labor.active, ", induced ", c.induced,
            ", ratio ", c.negatives.ratio, ", weighted negatives ", c.weighted_negatives, ", step ", step);
        ASSERT_TRUE(cpu->Sample(cpu_sampler, 1, seeds.batch_index(step), seeds.batch(step), batch).ok()) << what;
        const auto [pairs, positives] = WriteLinkArrays(batch, *layout.pairs, expected.data());
        const std::vector<int64_t> counts = BatchCountsOf(batch.graph, layout, pairs, positives);
        ASSERT_EQ(cudaMemset(device_slot, 0xab, layout.total_bytes), cudaSuccess);
        ASSERT_TRUE((*gpu)
                        ->SampleInto(1, seeds.batch_index(step), seeds.batch(step),
                                     static_cast<std::byte*>(device_slot), strict, 0, nullptr)
                        .ok())
            << what;
        ASSERT_EQ(cudaMemcpy(got.data(), device_slot, layout.total_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(*strict, UINT64_MAX) << what;
        for (const BatchArraySchema& a : batch_schema.arrays) {
          size_t row = DTypeSize(a.dtype);
          for (int64_t d : a.row_shape) row *= static_cast<size_t>(d);
          const size_t bytes = row * static_cast<size_t>(counts[a.count]);
          EXPECT_EQ(std::memcmp(got.data() + a.offset, expected.data() + a.offset, bytes), 0) << a.name << " " << what;
        }
      }
      cudaFree(device_slot);
    }
  }
  cudaFreeHost(strict);
  shm->reset();
  EXPECT_TRUE(ShmDataset::Remove(name).ok());
}

}  // namespace
}  // namespace gnnd::cuda
