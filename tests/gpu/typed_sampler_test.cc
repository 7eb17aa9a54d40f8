// The typed CUDA backend against CpuSampler: byte-identical typed batches (every array of the batch
// schema, up to its count, and every count) over the mag and igbh presets, fanouts for every relation and
// per relation (with -1 and 0), float8 rows of an odd width, the CSC in GPU or host memory, captured graphs
// or not, int64 neighbor ids, the dedup's 64-bit id path (forced), seeds given with repeats, and each featured
// type's rows partly or wholly in a hot tier (by the typed expected-reads ranking).
// Skips without a GPU.
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/batch/seeds.h"
#include "common/dataset/npy.h"
#include "common/dataset/shm_store.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "kernels/cuda/cuda_sampler.h"
#include "kernels/cuda/hot_tier.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/hotness.h"
#include "tools/dataset/synthetic_typed.h"

namespace gnnd::cuda {
namespace {

using gnnd::testing::ScratchDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Rewrites every relation's int32 indices as int64 (the manifest says so too): the int64 path of the kernels.
void WidenIndices(const std::string& dir, const DatasetSchema& schema) {
  for (const RelationSchema& r : schema.relations) {
    if (r.index_dtype != DType::kInt32) continue;
    const std::string path = dir + "/" + r.key() + ".indices.npy";
    const std::string bytes = ReadFile(path);
    auto header = ParseNpyHeader(bytes, path);
    ASSERT_TRUE(header.ok()) << header.status();
    std::vector<int64_t> wide(r.num_edges);
    for (int64_t e = 0; e < r.num_edges; ++e) {
      int32_t v;
      std::memcpy(&v, bytes.data() + header->data_offset + 4 * e, 4);
      wide[e] = v;
    }
    auto out = FormatNpyHeader(DType::kInt64, {r.num_edges});
    ASSERT_TRUE(out.ok());
    WriteFile(path, *out + std::string(reinterpret_cast<const char*>(wide.data()), wide.size() * 8));
  }
  const std::string manifest = dir + "/manifest.textproto";
  WriteFile(manifest, absl::StrReplaceAll(ReadFile(manifest), {{"INDEX_DTYPE_INT32", "INDEX_DTYPE_INT64"}}));
}

// A typed preset in shared memory, removed at the end.
class ShmTyped {
 public:
  ShmTyped(const std::string& name, const std::string& preset, double scale, v1::FeatureDType dtype,
           int64_t feature_dim, bool wide_indices)
      : name_(absl::StrCat(name, "-", ::getpid())) {
    auto spec = dataset::TypedPresetSpec(preset, scale);
    EXPECT_TRUE(spec.ok());
    if (feature_dim > 0) {
      for (auto& t : spec->types) t.feature_dim = t.feature_dim > 0 ? feature_dim : 0;
    }
    const std::string out = dir_ / "g";
    EXPECT_TRUE(
        dataset::GenerateTyped(
            *spec,
            {.seed = 5, .feature_dtype = dtype, .threads = 4, .edge_attrs = true, .temporal = true, .node_attrs = true},
            out)
            .ok());
    if (wide_indices) {
      auto source = DatasetDir::Open(out);
      EXPECT_TRUE(source.ok());
      WidenIndices(out, source->schema());
    }
    auto source = DatasetDir::Open(out);
    EXPECT_TRUE(source.ok()) << source.status();
    auto shm = ShmDataset::Load(name_, *source, {});
    EXPECT_TRUE(shm.ok()) << shm.status();
    shm_ = *std::move(shm);
    graph_ = {shm_->manifest(), shm_->arrays(), shm_->schema()};
  }
  ~ShmTyped() {
    shm_.reset();
    EXPECT_TRUE(ShmDataset::Remove(name_).ok());
  }
  const GraphData& graph() const { return graph_; }

 private:
  ScratchDir dir_;
  std::string name_;
  std::unique_ptr<ShmDataset> shm_;
  GraphData graph_;
};

struct TypedCase {
  std::string name;
  std::string preset;
  double scale;
  v1::FeatureDType dtype;
  int64_t feature_dim;                             // 0: the preset's
  std::vector<int32_t> fanouts;                    // for every relation, unless...
  std::vector<std::vector<int32_t>> per_relation;  // ...one list per relation
  CscPlacement placement;
  bool wide_indices = false;
  bool wide_ids = false;
  bool repeated_seeds = false;
  double hot_share = 0;   // of each featured type's rows in a hot tier (by the stored typed ranking)
  bool weighted = false;  // the weighted rule over every relation's edge_weight
  bool replace = false;   // uniform or weighted draws with replacement
  // Disjoint batches; with time_attr the temporal rule ("node_time" or the edge attribute "time"), by
  // `strategy`, the seeds' times given (random) or their own.
  bool disjoint = false;
  std::string time_attr;
  TemporalStrategy strategy = TemporalStrategy::kUniform;
  bool given_times = false;
  int64_t time_window = -1;  // the temporal rule's window (none)
  LaborSpec labor = {};      // LABOR-0 instead of the uniform rule
  double labor_bound = 1;    // each hop's edge bound scaled by this: below 1, batches drawn again (some failing)
  // Sorts fitted from the first batch on to the furthest keys seen (the first batch outgrows every hop's, later
  // ones often some): outgrown batches sampled again by the test, as a session does (a LABOR batch that outgrew a
  // bound too, then under its next attempt), and counted.
  bool tight_sorts = false;
  bool induced = false;  // every edge between the batch's nodes (SamplingSpec::induced)
  friend void PrintTo(const TypedCase& c, std::ostream* os) { *os << c.name; }
};

class TypedCudaVsCpu : public ::testing::TestWithParam<TypedCase> {};

TEST_P(TypedCudaVsCpu, BatchesAreByteIdentical) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device: GPU test skipped";
  const TypedCase& c = GetParam();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ShmTyped shm(absl::StrCat("typed-gpu-", c.name), c.preset, c.scale, c.dtype, c.feature_dim, c.wide_indices);
  const GraphData& graph = shm.graph();
  const DatasetSchema& schema = graph.schema;
  const int seed_type = schema.NodeTypeNamed("paper");
  ASSERT_GE(seed_type, 0);
  const int64_t batch_size = 128;
  SamplingSpec spec{
      batch_size, seed_type,
      c.per_relation.empty() ? std::vector<std::vector<int32_t>>(schema.relations.size(), c.fanouts) : c.per_relation,
      c.repeated_seeds};
  spec.edge_ids = true;  // and every relation's edge attributes: their rows gathered on both devices
  auto attribute = [](const RelationSchema& r, const std::string& name) {
    for (size_t a = 0; a < r.edge_attrs.size(); ++a) {
      if (r.edge_attrs[a].name == name) return static_cast<int>(a);
    }
    ADD_FAILURE() << r.key() << " has no " << name;
    return 0;
  };
  for (const RelationSchema& r : schema.relations) {
    std::vector<int>& attrs = spec.edge_attrs.emplace_back();
    for (size_t a = 0; a < r.edge_attrs.size(); ++a) attrs.push_back(static_cast<int>(a));
    if (c.weighted) spec.edge_weights.push_back(attribute(r, "edge_weight"));
    if (!c.time_attr.empty() && c.time_attr != "node_time") spec.time.edge_times.push_back(attribute(r, "time"));
  }
  spec.disjoint = c.disjoint || !c.time_attr.empty();
  spec.time.node_level = c.time_attr == "node_time";
  spec.time.rule = {.strategy = c.strategy, .window = c.time_window};
  spec.time.seed_times_given = c.given_times;
  spec.labor = c.labor;
  spec.induced = c.induced;
  spec.neighbors.replace = c.replace;
  ASSERT_TRUE(CheckSamplingSpec(spec, schema).ok()) << CheckSamplingSpec(spec, schema);
  auto capacity = ComputeBatchCapacity(spec, schema, graph.MaxInDegrees());
  ASSERT_TRUE(capacity.ok()) << capacity.status();
  for (BatchCapacity::Hop& hop : capacity->hops) {
    for (int64_t& edges : hop.edges) edges = static_cast<int64_t>(static_cast<double>(edges) * c.labor_bound);
  }
  auto placed = DeviceDataset::Create(graph, c.placement);
  ASSERT_TRUE(placed.ok()) << placed.status();
  std::vector<std::unique_ptr<HotTier>> tiers;
  if (c.hot_share > 0) {  // each featured type's hottest rows by the typed expected-reads ranking
    const NodeTypeSchema& seeds_type = schema.node_types[seed_type];
    const std::span<const int64_t> train(static_cast<const int64_t*>(graph.arrays.data[seeds_type.splits[0]]),
                                         seeds_type.split_sizes[0]);
    const std::vector<double> reads = dataset::TypedExpectedReads(graph, seed_type, train, c.fanouts, 4);
    const std::vector<int64_t> order = dataset::RankByScore<double>(reads);
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      const NodeTypeSchema& type = schema.node_types[t];
      if (type.features < 0) continue;
      std::vector<int64_t> ids;
      for (int64_t id : order) {
        if (id >= type.offset && id < type.offset + type.num_nodes) ids.push_back(id - type.offset);
      }
      DeviceGraph source;
      source.manifest.set_num_nodes(type.num_nodes);
      source.manifest.set_feature_dim(type.feature_dim);
      source.manifest.set_feature_dtype(graph.manifest.node_types(static_cast<int>(t)).feature_dtype());
      source.features = (*placed)->graph().types[t].features;
      source.labels = (*placed)->graph().types[t].labels;
      const auto num_hot = static_cast<int64_t>(c.hot_share * static_cast<double>(ids.size()));
      auto tier = HotTier::Create(source, ids, num_hot, {0}, false);
      ASSERT_TRUE(tier.ok()) << tier.status();
      (*placed)->set_hot(static_cast<int>(t), (*tier)->view(0));
      tiers.push_back(*std::move(tier));
    }
  }
  const NodeTypeSchema& papers = schema.node_types[seed_type];
  std::vector<int64_t> ids(static_cast<const int64_t*>(graph.arrays.data[papers.splits[0]]),
                           static_cast<const int64_t*>(graph.arrays.data[papers.splits[0]]) + papers.split_sizes[0]);
  if (c.repeated_seeds) ids.insert(ids.end(), ids.begin(), ids.begin() + ids.size() / 2);
  std::vector<int64_t> times;  // given seed times: spread over the papers' times (their ids)
  if (c.given_times) {
    for (size_t i = 0; i < ids.size(); ++i) times.push_back(static_cast<int64_t>((i * 7919) % papers.num_nodes));
  }
  for (uint64_t seed : {0, 77}) {
    const bool graphs = seed == 0;  // captured graphs (the production path), then every kernel launched
    CudaSamplerOptions options{.use_graphs = graphs, .wide_ids = c.wide_ids};
    if (c.tight_sorts) {
      options.fit_sorts = true;
      options.fit_sorts_after = 0;
      options.fit_sorts_margin = 1;
      options.fit_sorts_slack = 0;
    }
    auto gpu = CudaSampler::Create((*placed)->graph(), spec, seed, BatchLayout::Make(*capacity, spec, schema), options);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    const BatchLayout& layout = (*gpu)->layout();
    const BatchSchema batch_schema = BatchSchemaOf(layout, schema);
    CpuSampler cpu(graph, spec, seed);
    std::vector<std::byte> expected(layout.total_bytes), got(layout.total_bytes);
    void* device_batch = nullptr;
    int64_t *device_seeds = nullptr, *device_times = nullptr;
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&device_batch, layout.total_bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&device_seeds, batch_size * sizeof(int64_t)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&device_times, batch_size * sizeof(int64_t)), cudaSuccess);
    EpochSeeds seeds(ids, {.seed = seed, .batch_size = batch_size}, 2, times);
    int redone = 0, failed = 0;
    for (int64_t step = 0; step < std::min<int64_t>(seeds.num_steps(), 8); ++step) {
      const auto batch = seeds.batch(step);
      const auto batch_times = seeds.times(step);
      const BatchView want = BatchView::At(expected.data(), layout);
      cpu.Sample(2, seeds.batch_index(step), batch, want, nullptr, batch_times);
      const absl::Status cpu_status = cpu.status();  // a LABOR batch that outgrew its bounds in every attempt fails
      ASSERT_EQ(cudaMemset(device_batch, 0xab, layout.total_bytes), cudaSuccess);  // every byte read must be written
      ASSERT_EQ(cudaMemcpy(device_seeds, batch.data(), batch.size_bytes(), cudaMemcpyHostToDevice), cudaSuccess);
      if (!batch_times.empty()) {
        ASSERT_EQ(cudaMemcpy(device_times, batch_times.data(), batch_times.size_bytes(), cudaMemcpyHostToDevice),
                  cudaSuccess);
      }
      absl::Status gpu_status;
      for (uint32_t round = 0;; ++round) {
        gpu_status = (*gpu)->Sample(2, seeds.batch_index(step), {device_seeds, batch.size()}, device_batch, stream,
                                    nullptr, {device_times, batch_times.size()});
        if (!gpu_status.ok()) break;
        ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << cudaGetErrorString(cudaGetLastError());
        auto outgrown = (*gpu)->Outgrown(device_batch);
        gpu_status = outgrown.status();
        if (!outgrown.ok() || !*outgrown) break;
        // Each round refits the sorts or draws the next LABOR attempt (the last one fails).
        ASSERT_LT(round, 2 * labor::kMaxAttempts) << c.name << " step " << step << ": sampled again without end";
        ASSERT_TRUE(c.tight_sorts) << c.name << ": sampled again without fitted sorts";
        ++redone;
      }
      ASSERT_EQ(gpu_status.code(), cpu_status.code())
          << c.name << " seed " << seed << " step " << step << ": CUDA " << gpu_status << ", CPU " << cpu_status;
      if (!cpu_status.ok()) {
        ASSERT_EQ(cpu_status.code(), absl::StatusCode::kResourceExhausted) << cpu_status;
        ++failed;
        continue;
      }
      ASSERT_EQ(cudaMemcpy(got.data(), device_batch, layout.total_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
      const BatchView have = BatchView::At(got.data(), layout);
      const std::vector<int64_t> want_counts = BatchCountsOf(want, layout);
      ASSERT_EQ(BatchCountsOf(have, layout), want_counts) << c.name << " seed " << seed << " step " << step;
      ASSERT_EQ(gnnd::testing::SchemaContents(batch_schema, want_counts, got.data()),
                gnnd::testing::SchemaContents(batch_schema, want_counts, expected.data()))
          << c.name << " seed " << seed << " step " << step;
    }
    if (c.tight_sorts) EXPECT_GT(redone, 0) << "the first batch outgrows sorts fitted to none";
    if (c.labor_bound == 1) EXPECT_EQ(failed, 0) << c.name;
    if (c.labor_bound <= 0.01) EXPECT_GT(failed, 0) << c.name << ": bounds no attempt fits";
    cudaFree(device_batch);
    cudaFree(device_seeds);
    cudaFree(device_times);
    cudaStreamDestroy(stream);
  }
}

// Induced batches (SamplingSpec::induced): every edge between the batch's nodes, with the CSC in GPU and host
// memory, int32 and int64 indices and ids, repeated seeds and weighted draws, sorts fitted from the first batch.
INSTANTIATE_TEST_SUITE_P(Induced, TypedCudaVsCpu,
                         ::testing::Values(TypedCase{.name = "mag_induced_device",
                                                     .preset = "mag",
                                                     .scale = 0.005,
                                                     .dtype = v1::FEATURE_DTYPE_FLOAT32,
                                                     .fanouts = {4, 3},
                                                     .placement = CscPlacement::kDevice,
                                                     .induced = true},
                                           TypedCase{.name = "mag_induced_host_indices_per_relation",
                                                     .preset = "mag",
                                                     .scale = 0.005,
                                                     .dtype = v1::FEATURE_DTYPE_FLOAT32,
                                                     .feature_dim = 16,
                                                     .per_relation = {{2, 0, 1}, {5, -1, 2}, {-1, 3, 3}, {0, 2, 0}},
                                                     .placement = CscPlacement::kHostIndices,
                                                     .induced = true},
                                           TypedCase{.name = "mag_induced_int64_host_wide_ids",
                                                     .preset = "mag",
                                                     .scale = 0.005,
                                                     .dtype = v1::FEATURE_DTYPE_FLOAT32,
                                                     .feature_dim = 16,
                                                     .fanouts = {3, 3},
                                                     .placement = CscPlacement::kHost,
                                                     .wide_indices = true,
                                                     .wide_ids = true,
                                                     .induced = true},
                                           TypedCase{.name = "mag_induced_repeated_seeds_weighted_tight_sorts",
                                                     .preset = "mag",
                                                     .scale = 0.005,
                                                     .dtype = v1::FEATURE_DTYPE_FLOAT32,
                                                     .feature_dim = 16,
                                                     .fanouts = {4, 3},
                                                     .placement = CscPlacement::kDevice,
                                                     .repeated_seeds = true,
                                                     .weighted = true,
                                                     .tight_sorts = true,
                                                     .induced = true}),
                         [](const auto& info) { return info.param.name; });

INSTANTIATE_TEST_SUITE_P(
    Typed, TypedCudaVsCpu,
    ::testing::Values(
        TypedCase{"mag_device", "mag", 0.005, v1::FEATURE_DTYPE_FLOAT32, 0, {4, 3}, {}, CscPlacement::kDevice},
        TypedCase{"mag_host_per_relation",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT16,
                  40,
                  {},
                  {{2, 0, 1}, {5, -1, 2}, {-1, 3, 3}, {0, 2, 0}},
                  CscPlacement::kHost},
        TypedCase{"mag_host_indices_3hops",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT32,
                  0,
                  {6, 4, 2},
                  {},
                  CscPlacement::kHostIndices},
        TypedCase{"igbh_fp8_odd_rows",
                  "igbh",
                  0.00001,
                  v1::FEATURE_DTYPE_FLOAT8_E4M3FN,
                  33,
                  {5, 4},
                  {},
                  CscPlacement::kDevice},
        TypedCase{"mag_int64_indices",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_BFLOAT16,
                  24,
                  {4, 3},
                  {},
                  CscPlacement::kDevice,
                  /*wide_indices=*/true},
        TypedCase{"mag_int64_indices_host",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT32,
                  16,
                  {3, 3},
                  {},
                  CscPlacement::kHost,
                  /*wide_indices=*/true},
        TypedCase{"mag_wide_ids",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT32,
                  16,
                  {4, 3},
                  {},
                  CscPlacement::kDevice,
                  /*wide_indices=*/false,
                  /*wide_ids=*/true},
        TypedCase{"mag_repeated_seeds",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT32,
                  16,
                  {4, 3},
                  {},
                  CscPlacement::kDevice,
                  /*wide_indices=*/false,
                  /*wide_ids=*/false,
                  /*repeated_seeds=*/true},
        TypedCase{"mag_hot_tier",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT16,
                  40,
                  {4, 3},
                  {},
                  CscPlacement::kDevice,
                  /*wide_indices=*/false,
                  /*wide_ids=*/false,
                  /*repeated_seeds=*/false,
                  /*hot_share=*/0.4},
        TypedCase{"igbh_fp8_hot_tier_host",
                  "igbh",
                  0.00001,
                  v1::FEATURE_DTYPE_FLOAT8_E4M3FN,
                  33,
                  {5, 4},
                  {},
                  CscPlacement::kHost,
                  /*wide_indices=*/false,
                  /*wide_ids=*/false,
                  /*repeated_seeds=*/false,
                  /*hot_share=*/1.0},
        TypedCase{"mag_weighted_device",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT32,
                  16,
                  {4, 3},
                  {},
                  CscPlacement::kDevice,
                  false,
                  false,
                  false,
                  0,
                  /*weighted=*/true},
        TypedCase{"mag_weighted_host_per_relation",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT16,
                  8,
                  {},
                  {{2, 0, 1}, {40, -1, 2}, {-1, 3, 3}, {0, 2, 0}},
                  CscPlacement::kHost,
                  false,
                  false,
                  false,
                  0,
                  /*weighted=*/true},
        TypedCase{"mag_weighted_host_indices_wide",
                  "mag",
                  0.005,
                  v1::FEATURE_DTYPE_FLOAT32,
                  8,
                  {6, 4},
                  {},
                  CscPlacement::kHostIndices,
                  /*wide_indices=*/true,
                  /*wide_ids=*/true,
                  false,
                  0,
                  /*weighted=*/true},
        // Disjoint and temporal batches: one subgraph per seed, every mode on the device and on the host.
        TypedCase{.name = "mag_disjoint_device",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {4, 3},
                  .placement = CscPlacement::kDevice,
                  .disjoint = true},
        TypedCase{.name = "mag_node_time_uniform_device",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {4, 3},
                  .placement = CscPlacement::kDevice,
                  .time_attr = "node_time"},
        TypedCase{.name = "mag_node_time_last_host_given",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT16,
                  .feature_dim = 8,
                  .per_relation = {{2, 0, 1}, {40, -1, 2}, {-1, 3, 3}, {0, 2, 0}},
                  .placement = CscPlacement::kHost,
                  .time_attr = "node_time",
                  .strategy = TemporalStrategy::kLast,
                  .given_times = true},
        TypedCase{.name = "mag_edge_time_uniform_host_indices_given",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {5, 3},
                  .placement = CscPlacement::kHostIndices,
                  .wide_indices = true,
                  .time_attr = "time",
                  .given_times = true},
        TypedCase{.name = "mag_replace_uniform_device",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .per_relation = {{2, 0, 1}, {40, -1, 2}, {-1, 3, 3}, {0, 2, 0}},
                  .placement = CscPlacement::kDevice,
                  .replace = true},
        TypedCase{.name = "mag_replace_uniform_host_repeated",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT16,
                  .feature_dim = 8,
                  .fanouts = {10, 5},
                  .placement = CscPlacement::kHost,
                  .repeated_seeds = true,
                  .replace = true},
        TypedCase{.name = "mag_replace_weighted_device",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {40, 4},
                  .placement = CscPlacement::kDevice,
                  .weighted = true,
                  .replace = true},
        TypedCase{.name = "mag_replace_weighted_host_disjoint",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {5, 3},
                  .placement = CscPlacement::kHostIndices,
                  .weighted = true,
                  .replace = true,
                  .disjoint = true},
        TypedCase{.name = "mag_edge_time_window_uniform_host_given",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {5, 3},
                  .placement = CscPlacement::kHost,
                  .time_attr = "time",
                  .given_times = true,
                  .time_window = 400},
        TypedCase{.name = "mag_node_time_window_last_device",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {4, 3},
                  .placement = CscPlacement::kDevice,
                  .time_attr = "node_time",
                  .strategy = TemporalStrategy::kLast,
                  .time_window = 150},
        TypedCase{.name = "mag_edge_time_window_zero_device_given",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT16,
                  .feature_dim = 8,
                  .per_relation = {{2, 0, 1}, {40, -1, 2}, {-1, 3, 3}, {0, 2, 0}},
                  .placement = CscPlacement::kDevice,
                  .time_attr = "time",
                  .given_times = true,
                  .time_window = 0},
        TypedCase{.name = "mag_edge_time_last_device_repeated",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {40, 3},
                  .placement = CscPlacement::kDevice,
                  .repeated_seeds = true,
                  .time_attr = "time",
                  .strategy = TemporalStrategy::kLast},
        TypedCase{.name = "mag_edge_time_uniform_hot_wide_ids",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT16,
                  .feature_dim = 40,
                  .fanouts = {40, 4},
                  .placement = CscPlacement::kDevice,
                  .wide_ids = true,
                  .hot_share = 0.4,
                  .time_attr = "time",
                  .given_times = true},
        // LABOR-0: every in-edge of a frontier node considered, r_t shared; the dependencies' variants.
        TypedCase{.name = "mag_labor_device",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {4, 3},
                  .placement = CscPlacement::kDevice,
                  .labor = {.active = true}},
        TypedCase{.name = "mag_labor_host_per_relation_layer",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT16,
                  .feature_dim = 8,
                  .per_relation = {{2, 0, 1}, {40, -1, 2}, {-1, 3, 3}, {0, 2, 0}},
                  .placement = CscPlacement::kHost,
                  .repeated_seeds = true,
                  .labor = {.active = true, .dependency = {.layer = true}}},
        TypedCase{.name = "mag_labor_hot_wide_batch_dependency",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 16,
                  .fanouts = {6, 4},
                  .placement = CscPlacement::kHostIndices,
                  .wide_indices = true,
                  .wide_ids = true,
                  .hot_share = 0.4,
                  .labor = {.active = true, .dependency = {.batches = 3}}},
        // Fanouts near the 64 positions the count kernel hands on: some nodes hand theirs on, some keep more
        // and are drawn again by the sample kernel, the rest keep every in-edge.
        TypedCase{.name = "mag_labor_large_fanouts",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {60, 60},
                  .placement = CscPlacement::kDevice,
                  .labor = {.active = true}},
        TypedCase{.name = "mag_labor_tight_bounds_drawn_again",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {6, 4},
                  .placement = CscPlacement::kDevice,
                  .labor = {.active = true},
                  .labor_bound = 0.4},
        // Bounds no attempt fits: every batch fails on both backends, none is handed out without a hop's edges.
        TypedCase{.name = "mag_labor_bounds_never_fit_fail",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {6, 4},
                  .placement = CscPlacement::kDevice,
                  .labor = {.active = true},
                  .labor_bound = 0.01},
        // Sorts fitted tight: outgrown batches, their nodes past the sort placed by type, sampled again.
        TypedCase{.name = "mag_tight_sorts_per_relation",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .per_relation = {{2, 0, 1}, {5, -1, 2}, {-1, 3, 3}, {0, 2, 0}},
                  .placement = CscPlacement::kDevice,
                  .tight_sorts = true},
        TypedCase{.name = "mag_tight_sorts_disjoint_host",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {4, 3},
                  .placement = CscPlacement::kHost,
                  .disjoint = true,
                  .tight_sorts = true},
        TypedCase{.name = "mag_labor_tight_sorts_and_bounds",
                  .preset = "mag",
                  .scale = 0.005,
                  .dtype = v1::FEATURE_DTYPE_FLOAT32,
                  .feature_dim = 8,
                  .fanouts = {6, 4},
                  .placement = CscPlacement::kDevice,
                  .labor = {.active = true},
                  .labor_bound = 0.4,
                  .tight_sorts = true}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace gnnd::cuda
