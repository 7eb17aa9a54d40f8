// GPU benchmarks of the CUDA backend's stages; each prints one markdown table for bench/RESULTS.md.
//
//   gpu_bench sampling (--dataset DIR | --synthetic_nodes N) [--fanouts 15,10,5/20,15,10] [--batches 50]
//     [--sample_sms 8,0]
//     Per CSC placement (GPU memory, host zero-copy): median ms per batch of the sampling stage (hops,
//     dedup, relabel) and of the whole batch, nodes and edges per batch. --synthetic_nodes builds a
//     papers-sized graph in memory (in-degrees log-normal with mean --synthetic_degree, uniform sources,
//     one float feature per node: only the sampling stage means something there).
//   gpu_bench gather --dataset DIR [--row_bytes 256,512,1024,2052,4096] [--gather_sms 8,0] [--rows_per_warp 1,4]
//     The node ids of sampled batches, gathered from a pinned table of each row size: gnnd's gather, a
//     plain warp-per-row gather of the same ids sorted (the density ceiling), and a pinned cudaMemcpy of
//     the same bytes, in GB/s of rows delivered.
//   gpu_bench gather-ce --dataset DIR [--row_bytes 512]
//     The same kind of rows copied by the copy engines (cudaMemcpyBatchAsync, one copy a row): GB/s and the
//     call's host time, with and without the hint to overlap compute.
//   gpu_bench tier (--dataset DIR | --synthetic_nodes N --synthetic_skew 4) [--row_bytes 512]
//     The hot tier: hot rows by the expected-reads ranking (what `gnnctl hotness --write` stores), caches
//     of 0-50 % of the rows; per size, the share of row reads it serves (hit rate; also for a presample
//     ranking) and gnnd's gather in GB/s of rows delivered, against the same gather with no tier.
//     --tier_gpus 2: the tier split over two GPUs with peer access (each caches the share), both gathering at
//     once (each reads the other's share over NVLink), rates per GPU.
//   gpu_bench link (--dataset DIR | --synthetic_nodes N) [--batch_size 1024] [--fanouts 15,10,5]
//     Link batches (CudaLinkStage, CSC in GPU memory; positives: edges of the graph) with binary 1:1 and
//     triplet 1:5 negatives, exclusion off and reverse, against node batches whose seeds are the same link
//     batches' hop-0 nodes: median ms per whole batch of each, and their ratio (every kernel launched in both).
//   gpu_bench edges --synthetic_nodes N [--fanouts 15,10,5/20,15,10]
//     Edge data and the weighted rule on the synthetic graph with each edge's id, a float32 weight in (0, 1]
//     and a 16-byte feature (CSC and weights in GPU memory, the rest in pinned host memory): uniform and
//     weighted draws, without and with the edges' data in the batch; sampling and whole-batch ms, the
//     weighted / uniform ratio, and the edge data's bytes and the rate they are gathered at.
//   gpu_bench temporal --synthetic_nodes N [--fanouts 15,10,5/20,15,10]
//     The temporal rule on the synthetic graph with node and edge times (CSC and times in GPU memory): uniform,
//     disjoint uniform, temporal uniform and last over edge times and over node times; sampling and
//     whole-batch ms, nodes and edges per batch, and each one's ratio to the uniform rule.
//   gpu_bench labor --synthetic_nodes N | --dataset DIR [--fanouts 15,10,5/20,15,10] [--sample_sms 8,0]
//     LABOR-0 against the uniform rule on one graph (CSC in GPU memory, features in pinned host memory): uniform,
//     LABOR, LABOR with layer_dependency, LABOR with batch_dependency 32; sampling ms (whole GPU or a slice) and
//     its ratio to the uniform rule's, whole-batch ms, nodes, edges and feature bytes per batch, and the share of a
//     batch's nodes the batch before it held (what a cache of the last batch's rows would hit).
//   gpu_bench typed [--typed_presets mag240m:1,igbh:0.5] [--fanouts 15,10,5] [--labor]
//     Typed sampling on in-memory graphs of the presets' node and edge counts (reverse relations added, 16-byte
//     features), and the homogeneous sampler on a graph of the same size: sampled edges per second of each.
#include <cuda_runtime.h>
#include <sys/mman.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/base/parallel.h"
#include "common/base/philox.h"
#include "common/batch/seeds.h"
#include "common/dataset/npy.h"
#include "common/dataset/shm_store.h"
#include "common/dataset/time_order.h"
#include "kernels/cuda/cuda_sampler.h"
#include "kernels/cuda/green_context.h"
#include "kernels/cuda/host_registration.h"
#include "kernels/cuda/hot_tier.h"
#include "kernels/cuda/link_stage.h"
#include "tools/dataset/hotness.h"

ABSL_FLAG(std::string, dataset, "", "dataset directory");
ABSL_FLAG(bool, huge_pages, false, "synthetic graphs and row tables in transparent huge pages (madvise)");
ABSL_FLAG(int64_t, synthetic_nodes, 0, "sampling: build a synthetic graph of this many nodes instead");
ABSL_FLAG(double, synthetic_degree, 14.5, "mean in-degree of the synthetic graph");
ABSL_FLAG(double, synthetic_skew, 1, "synthetic sources: node floor(n * u^skew), scattered (1: uniform)");
ABSL_FLAG(std::string, csc, "gpu,host-indices,host",
          "sampling: CSC placements to time (gpu; host-indices: indptr in GPU memory; host)");
ABSL_FLAG(int, tier_gpus, 1, "tier: GPUs the hot tier is split over");
ABSL_FLAG(int64_t, batch_size, 1024, "seeds per batch");
ABSL_FLAG(std::string, fanouts, "15,10,5", "fanouts; sampling: several sets separated by '/' (15,10,5/20,15,10)");
ABSL_FLAG(int, batches, 50, "timed batches per configuration (after 5 warm-up batches)");
ABSL_FLAG(std::string, seeds_out, "",
          "temporal: write the seeds of every batch sampled, warm-up ones first (int64 .npy, batches x batch "
          "size), for bench/torch_temporal_reference.py --seeds");
ABSL_FLAG(std::vector<std::string>, typed_presets, std::vector<std::string>({"mag240m:1", "igbh:0.5"}),
          "typed: PRESET:SCALE graphs (mag240m, igbh)");
ABSL_FLAG(bool, fit_sorts, true,
          "sampling, typed and the modes like them: each hop's sort fitted to the batches (as gnnd's sessions sample), "
          "or over the hop's edge bound");
ABSL_FLAG(bool, labor, false, "typed: LABOR-0 instead of the uniform rule (the typed sampler's rows)");
ABSL_FLAG(std::vector<std::string>, sample_sms, std::vector<std::string>({"0"}),
          "sampling, labor: on a green context of each of these SM counts, as gnnd's producers (0: the whole GPU)");
ABSL_FLAG(std::vector<std::string>, gather_sms, std::vector<std::string>({"0"}),
          "gather: run on a green context of each of these SM counts (0: the whole GPU)");
ABSL_FLAG(
    std::vector<std::string>, rows_per_warp, std::vector<std::string>({"0"}),
    "gather: gnnd's gather with a warp reading each of these many rows at once (0: as gnnd chooses on the slice)");
ABSL_FLAG(std::vector<std::string>, row_bytes, std::vector<std::string>({"256", "512", "1024", "2052", "4096"}),
          "gather: feature row sizes");

namespace gnnd::cuda {
namespace {

#define CHECK_CUDA(call)                                                                          \
  do {                                                                                            \
    if (cudaError_t err = (call); err != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

template <typename T>
T OrDie(absl::StatusOr<T> value) {
  if (!value.ok()) {
    std::fprintf(stderr, "%s\n", value.status().ToString().c_str());
    std::exit(2);
  }
  return *std::move(value);
}
void OrDie(const absl::Status& status) {
  if (!status.ok()) (void)OrDie(absl::StatusOr<int>(status));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Page-aligned anonymous memory (registrable), freed with the object.
struct HostBuffer {
  void* data = nullptr;
  size_t bytes = 0;
  explicit HostBuffer(size_t n) : bytes(std::max<size_t>(n, 1)) {
    data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (data == MAP_FAILED) std::fprintf(stderr, "mmap %zu bytes failed\n", bytes), std::exit(2);
    if (absl::GetFlag(FLAGS_huge_pages)) ::madvise(data, bytes, MADV_HUGEPAGE);
  }
  HostBuffer(HostBuffer&& other) noexcept : data(std::exchange(other.data, nullptr)), bytes(other.bytes) {}
  HostBuffer(const HostBuffer&) = delete;
  ~HostBuffer() {
    if (data != nullptr) ::munmap(data, bytes);
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

// A graph to sample: a loaded dataset, or a synthetic one in anonymous memory.
struct BenchGraph {
  GraphData data;
  std::string name;
  std::vector<std::unique_ptr<HostBuffer>> buffers;
  std::unique_ptr<ShmDataset> shm;
  ~BenchGraph() {
    if (shm) (void)ShmDataset::Remove(shm_name);
  }
  std::string shm_name;
};

std::unique_ptr<BenchGraph> LoadDataset(const std::string& dir_path) {
  auto g = std::make_unique<BenchGraph>();
  DatasetDir dir = OrDie(DatasetDir::Open(dir_path));
  g->shm_name = absl::StrCat("bench-", ::getpid());
  g->shm = OrDie(ShmDataset::Load(g->shm_name, dir, {}));
  g->data = {g->shm->manifest(), g->shm->arrays(), g->shm->schema()};
  g->name = absl::StrCat(g->data.num_nodes(), " nodes, ", g->data.manifest.num_edges(), " edges");
  return g;
}

// A source node from 64 random bits: floor(n * u^skew) for uniform u (skew 1: uniform; 4: about a third of
// the edges leave 1 % of the nodes, as in papers100M), scattered over the ids by an odd multiplier.
int64_t SkewedSource(uint64_t bits, int64_t n, double skew) {
  if (skew == 1) return static_cast<int64_t>(Below64(bits, n));
  const double u = ((bits >> 11) + 0.5) * 0x1.0p-53;
  const auto k = std::min<int64_t>(static_cast<int64_t>(std::pow(u, skew) * static_cast<double>(n)), n - 1);
  return static_cast<int64_t>((static_cast<unsigned __int128>(k) * 0x9E3779B1u) % static_cast<uint64_t>(n));
}

// A CSC of `num_dst` destinations with log-normal in-degrees of mean `mean_degree`, sources among `num_src`
// (SkewedSource), in buffers of `g`; `salt` varies the draws between relations. Returns indptr, indices, edges.
struct SyntheticCsc {
  int64_t* indptr;
  int32_t* indices;
  int64_t edges;
};
SyntheticCsc BuildSyntheticCsc(BenchGraph& g, int64_t num_dst, int64_t num_src, double mean_degree, double skew,
                               uint64_t salt = 0) {
  auto buffer = [&](size_t bytes) { return g.buffers.emplace_back(std::make_unique<HostBuffer>(bytes))->data; };
  auto* indptr = static_cast<int64_t*>(buffer(8 * (num_dst + 1)));
  const double sigma = 1.2, mu = std::log(mean_degree) - sigma * sigma / 2;  // log-normal with that mean
  ParallelFor(num_dst, 1 << 20, DefaultThreads(), [&](int64_t begin, int64_t end) {
    for (int64_t v = begin; v < end; ++v) {
      const uint64_t r = Mix64(static_cast<uint64_t>(v) * 0x9e3779b97f4a7c15ull + 1 + salt);
      const double u1 = ((r >> 11) + 0.5) * 0x1.0p-53, u2 = ((Mix64(r) >> 11) + 0.5) * 0x1.0p-53;
      const double z = std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
      indptr[v + 1] = std::min<int64_t>(static_cast<int64_t>(std::exp(mu + sigma * z)), 100000);
    }
  });
  indptr[0] = 0;
  for (int64_t v = 0; v < num_dst; ++v) indptr[v + 1] += indptr[v];
  const int64_t edges = indptr[num_dst];
  auto* indices = static_cast<int32_t*>(buffer(4 * edges));
  ParallelFor(edges, 1 << 20, DefaultThreads(), [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e)
      indices[e] = static_cast<int32_t>(SkewedSource(Mix64(static_cast<uint64_t>(e) + 0x51ed27 + salt), num_src, skew));
  });
  return {indptr, indices, edges};
}

// With `edge_data`: each edge's id (its CSC position), a weight in (0, 1] and 4 float32 features. With
// `times` (instead): each edge's id and its time (an int64 attribute "time"), and node times, all uniform in
// [0, 2^20) and independent: a seed at time t keeps a share t / 2^20 of each list, half on average.
std::unique_ptr<BenchGraph> SyntheticGraph(int64_t n, double mean_degree, double skew, bool edge_data = false,
                                           bool times = false) {
  auto g = std::make_unique<BenchGraph>();
  auto buffer = [&](size_t bytes) { return g->buffers.emplace_back(std::make_unique<HostBuffer>(bytes))->data; };
  const auto [indptr, indices, edges] = BuildSyntheticCsc(*g, n, n, mean_degree, skew);
  const int64_t train = std::max<int64_t>(n / 92, 1);  // papers100M: 1.2 M of 111 M nodes
  auto* train_ids = static_cast<int64_t*>(buffer(8 * train));
  for (int64_t i = 0; i < train; ++i) train_ids[i] = static_cast<int64_t>(Below64(Mix64(i + 0xabcdef), n));
  v1::DatasetManifest& m = g->data.manifest;
  m.set_format_version(1);
  m.set_num_nodes(n);
  m.set_num_edges(edges);
  m.set_index_dtype(v1::INDEX_DTYPE_INT32);
  m.set_feature_dim(1);
  m.set_feature_dtype(v1::FEATURE_DTYPE_FLOAT32);
  m.set_num_classes(2);
  m.set_num_train(train);
  if (edge_data) {
    m.set_edge_ids(true);
    v1::EdgeAttribute* weight = m.add_edge_attrs();
    weight->set_name("edge_weight");
    weight->set_dtype(v1::FEATURE_DTYPE_FLOAT32);
    v1::EdgeAttribute* feat = m.add_edge_attrs();
    feat->set_name("edge_feat");
    feat->set_dim(4);
    feat->set_dtype(v1::FEATURE_DTYPE_FLOAT32);
  } else if (times) {
    m.set_edge_ids(true);
    v1::EdgeAttribute* time = m.add_edge_attrs();
    time->set_name("time");
    time->set_dtype(v1::FEATURE_DTYPE_INT64);
    m.set_node_time(true);
  }
  g->data.schema = OrDie(DatasetSchema::FromManifest(m));
  g->data.arrays = DatasetArrays(g->data.schema);
  DatasetArrays& a = g->data.arrays;
  a.data[static_cast<int>(ArrayId::kIndptr)] = indptr;
  a.data[static_cast<int>(ArrayId::kIndices)] = indices;
  a.data[static_cast<int>(ArrayId::kFeatures)] = buffer(4 * n);
  a.data[static_cast<int>(ArrayId::kLabels)] = buffer(8 * n);  // all zero: class 0
  a.data[static_cast<int>(ArrayId::kTrain)] = train_ids;
  if (edge_data) {
    const RelationSchema& r = g->data.schema.relations[0];
    auto* ids = static_cast<int64_t*>(buffer(8 * edges));
    auto* weights = static_cast<float*>(buffer(4 * edges));
    auto* feats = static_cast<float*>(buffer(16 * edges));
    ParallelFor(edges, 1 << 20, DefaultThreads(), [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        const uint64_t bits = Mix64(static_cast<uint64_t>(e) ^ 0x3779b97f4a7c15ull);
        ids[e] = e;
        weights[e] = static_cast<float>(((bits >> 40) + 1) * 0x1.0p-24);
        for (int d = 0; d < 4; ++d) feats[4 * e + d] = static_cast<float>((bits >> (8 * d)) & 0xff) / 128 - 1;
      }
    });
    a.data[r.edge_ids] = ids;
    a.data[r.edge_attrs[0].array] = weights;
    a.data[r.edge_attrs[1].array] = feats;
  } else if (times) {
    const RelationSchema& r = g->data.schema.relations[0];
    auto* ids = static_cast<int64_t*>(buffer(8 * edges));
    auto* edge_time = static_cast<int64_t*>(buffer(8 * edges));
    auto* node_time = static_cast<int64_t*>(buffer(8 * n));
    ParallelFor(n, 1 << 20, DefaultThreads(), [&](int64_t begin, int64_t end) {
      for (int64_t v = begin; v < end; ++v) node_time[v] = static_cast<int64_t>(Mix64(v ^ 0x7157) >> 44);
    });
    ParallelFor(edges, 1 << 20, DefaultThreads(), [&](int64_t begin, int64_t end) {
      for (int64_t e = begin; e < end; ++e) {
        ids[e] = e;
        edge_time[e] = static_cast<int64_t>(Mix64(e ^ 0x3779) >> 44);
      }
    });
    a.data[r.edge_ids] = ids;
    a.data[r.edge_attrs[0].array] = edge_time;
    a.data[g->data.schema.node_types[0].node_time] = node_time;
  }
  g->name = absl::StrCat("synthetic, ", n, " nodes, ", edges, " edges", edge_data ? ", with edge data" : "",
                         times ? ", with node and edge times" : "");
  return g;
}

// A typed graph with a preset's node and relation counts (times `scale`), every relation's reverse beside
// it (as PyG's ToUndirected), log-normal in-degrees and uniform sources per relation, 8 float16 features
// (16 bytes) on the types the real graph has features on, and 1 % of the papers as the train split.
std::unique_ptr<BenchGraph> TypedSyntheticGraph(const std::string& preset, double scale) {
  struct Type {
    const char* name;
    int64_t nodes;
    bool features;
  };
  struct Relation {
    const char *src, *name, *dst;
    int64_t edges;
  };
  std::vector<Type> types;
  std::vector<Relation> relations;
  if (preset == "mag240m") {  // MAG240M: features on papers only
    types = {{"author", 122383112, false}, {"institution", 25721, false}, {"paper", 121751666, true}};
    relations = {{"author", "writes", "paper", 386022720},
                 {"paper", "cites", "paper", 1297748926},
                 {"author", "affiliated_with", "institution", 44592586}};
  } else {  // IGBH-Full: features on papers and authors
    types = {
        {"author", 277220883, true}, {"fos", 712960, false}, {"institute", 26918, false}, {"paper", 269346174, true}};
    relations = {{"paper", "cites", "paper", 3996442004},
                 {"paper", "written_by", "author", 716761549},
                 {"paper", "topic", "fos", 1050280600},
                 {"author", "affiliated_to", "institute", 48521486}};
  }
  for (auto& t : types) t.nodes = std::max<int64_t>(static_cast<int64_t>(t.nodes * scale), 16);
  const size_t given = relations.size();
  for (size_t r = 0; r < given; ++r) {
    relations[r].edges = static_cast<int64_t>(relations[r].edges * scale);
    relations.push_back({relations[r].dst, nullptr, relations[r].src, relations[r].edges});
  }
  auto g = std::make_unique<BenchGraph>();
  auto buffer = [&](size_t bytes) { return g->buffers.emplace_back(std::make_unique<HostBuffer>(bytes))->data; };
  v1::DatasetManifest& m = g->data.manifest;
  m.set_format_version(2);
  auto nodes_of = [&](const char* name) {
    for (const Type& t : types) {
      if (std::string(t.name) == name) return t.nodes;
    }
    return int64_t{0};
  };
  for (const Type& t : types) {
    v1::NodeType& nt = *m.add_node_types();
    nt.set_name(t.name);
    nt.set_num_nodes(t.nodes);
    if (t.features) {
      nt.set_feature_dim(8);
      nt.set_feature_dtype(v1::FEATURE_DTYPE_FLOAT16);
    }
    if (std::string(t.name) == "paper") {
      nt.set_num_classes(2);
      nt.set_num_train(std::max<int64_t>(t.nodes / 100, 1));
    }
  }
  std::vector<SyntheticCsc> csc;
  for (size_t r = 0; r < relations.size(); ++r) {
    const Relation& rel = relations[r];
    const int64_t num_dst = nodes_of(rel.dst), num_src = nodes_of(rel.src);
    csc.push_back(BuildSyntheticCsc(*g, num_dst, num_src, static_cast<double>(rel.edges) / num_dst, 1, r * 7919));
    v1::Relation& out = *m.add_relations();
    out.set_src_type(rel.src);
    out.set_name(rel.name != nullptr ? rel.name : absl::StrCat("rev_", relations[r - given].name));
    out.set_dst_type(rel.dst);
    out.set_num_edges(csc.back().edges);
    out.set_index_dtype(v1::INDEX_DTYPE_INT32);
  }
  g->data.schema = OrDie(DatasetSchema::FromManifest(m));
  g->data.arrays = DatasetArrays(g->data.schema);
  const DatasetSchema& schema = g->data.schema;
  int64_t total_edges = 0;
  for (size_t r = 0; r < schema.relations.size(); ++r) {
    g->data.arrays.data[schema.relations[r].indptr] = csc[r].indptr;
    g->data.arrays.data[schema.relations[r].indices] = csc[r].indices;
    total_edges += csc[r].edges;
  }
  for (const NodeTypeSchema& t : schema.node_types) {
    if (t.features >= 0) g->data.arrays.data[t.features] = buffer(t.feature_row_bytes() * t.num_nodes);
    if (t.labels >= 0) g->data.arrays.data[t.labels] = buffer(8 * t.num_nodes);  // all zero: class 0
    for (int s = 0; s < 3; ++s) {
      if (t.splits[s] < 0) continue;
      auto* ids = static_cast<int64_t*>(buffer(8 * std::max<int64_t>(t.split_sizes[s], 1)));
      for (int64_t i = 0; i < t.split_sizes[s]; ++i)
        ids[i] = static_cast<int64_t>(Below64(Mix64(i + 0xabcdef + s), t.num_nodes));
      g->data.arrays.data[t.splits[s]] = ids;
    }
  }
  g->name = absl::StrCat(preset, "-shaped x ", scale, ": ", schema.num_nodes, " nodes of ", types.size(), " types, ",
                         total_edges, " edges in ", relations.size(), " relations (reverses included)");
  return g;
}

// --synthetic_nodes's graph, else --dataset's.
std::unique_ptr<BenchGraph> GraphFromFlags(bool edge_data = false, bool times = false) {
  const int64_t synthetic = absl::GetFlag(FLAGS_synthetic_nodes);
  if (synthetic > 0) {
    return SyntheticGraph(synthetic, absl::GetFlag(FLAGS_synthetic_degree), absl::GetFlag(FLAGS_synthetic_skew),
                          edge_data, times);
  }
  return LoadDataset(absl::GetFlag(FLAGS_dataset));
}

// A pinnable table of `bytes` of distinct words (the rows the gathers read).
HostBuffer RowTable(size_t bytes) {
  HostBuffer table(bytes);
  ParallelFor(static_cast<int64_t>(table.bytes / 8), 1 << 20, DefaultThreads(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) table.as<uint64_t>()[i] = Mix64(i);
  });
  return table;
}

std::vector<int32_t> ParseFanouts(absl::string_view text) {
  std::vector<int32_t> fanouts;
  for (absl::string_view f : absl::StrSplit(text, ',')) fanouts.push_back(std::stoi(std::string(f)));
  return fanouts;
}

// Samples --batches batches after a warm-up; calls on_batch(out, layout) after each timed one.
struct SampleRun {
  double sampling_ms = 0, whole_ms = 0, nodes = 0, edges = 0;
  uint64_t slot_bytes = 0;  // the layout's, at the spec's bound
  int redone = 0;           // batches sampled again: they outgrew a fitted sort or a LABOR bound (timed with both)
};

// One batch into `out` between events `start` and `stop` (`sampled` between the phases), complete on return; a
// batch that outgrew a fitted sort or a LABOR bound is sampled again, as a session does, within the same events.
void SampleOne(CudaSampler& sampler, uint64_t batch_index, std::span<const int64_t> device_seeds, void* out,
               cudaStream_t stream, cudaEvent_t start, cudaEvent_t sampled, cudaEvent_t stop, int* redone) {
  CHECK_CUDA(cudaEventRecord(start, stream));
  for (;;) {
    OrDie(sampler.Sample(0, batch_index, device_seeds, out, stream, sampled));
    CHECK_CUDA(cudaEventRecord(stop, stream));
    CHECK_CUDA(cudaEventSynchronize(stop));
    if (!OrDie(sampler.Outgrown(out))) return;
    ++*redone;
  }
}

// A hot tier to sample through: the first num_hot nodes of `order` (none by default).
struct HotSpec {
  std::span<const int64_t> order;
  int64_t num_hot = 0;
};
// What else the batches carry and how they draw: the edges' ids and every edge attribute; the weighted rule
// over the first attribute; disjoint subgraphs, and the temporal rule over node times or the first attribute
// (the seeds at their own node times).
struct EdgeSpec {
  bool data = false;
  bool weighted = false;
  bool disjoint = false;
  std::string time_attr;  // "", "node_time" or "time"
  TemporalStrategy strategy = TemporalStrategy::kUniform;
  LaborSpec labor;
};
// The seeds of every homogeneous bench: the train split shuffled, epoch 0, in batches of --batch_size.
EpochSeeds BenchSeeds(const GraphData& graph) {
  const auto* train = static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]);
  return EpochSeeds(std::span<const int64_t>(train, graph.manifest.num_train()),
                    {.seed = 1, .batch_size = absl::GetFlag(FLAGS_batch_size)}, 0);
}

// Writes the seeds Sample() draws its batches from, in its order (5 warm-up batches, then the timed ones), so
// that a reference can sample the very same batches.
void WriteBenchSeeds(const GraphData& graph, const std::string& path) {
  const EpochSeeds seeds = BenchSeeds(graph);
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size), batches = absl::GetFlag(FLAGS_batches) + 5;
  std::string bytes = OrDie(FormatNpyHeader(DType::kInt64, {batches, batch_size}));
  for (int64_t i = 0; i < batches; ++i) {
    const auto batch = seeds.batch(i % seeds.num_steps());
    if (static_cast<int64_t>(batch.size()) != batch_size) {
      std::fprintf(stderr, "--seeds_out: the train split has no %lld full batches\n", static_cast<long long>(batches));
      std::exit(2);
    }
    bytes.append(reinterpret_cast<const char*>(batch.data()), batch.size_bytes());
  }
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() || std::fclose(file) != 0) {
    std::fprintf(stderr, "--seeds_out: cannot write %s\n", path.c_str());
    std::exit(2);
  }
}

// The CUDA sampler on `g` as a homogeneous session runs it: the one type and one relation, into the
// homogeneous layout.
template <typename OnBatch>
SampleRun Sample(const BenchGraph& g, const std::vector<int32_t>& fanouts, CscPlacement placement, bool graphs,
                 OnBatch on_batch, const HotSpec& hot = {}, const EdgeSpec& edges = {},
                 cudaStream_t slice_stream = nullptr) {
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  const GraphData& graph = g.data;
  SamplingSpec spec = SamplingSpec::OneRelation(batch_size, fanouts);
  if (edges.data) {
    spec.edge_ids = true;
    spec.edge_attrs.emplace_back();
    for (size_t a = 0; a < graph.schema.relations[0].edge_attrs.size(); ++a) {
      spec.edge_attrs[0].push_back(static_cast<int>(a));
    }
  }
  if (edges.weighted) spec.edge_weights = {0};
  spec.disjoint = edges.disjoint || !edges.time_attr.empty();
  spec.time.node_level = edges.time_attr == "node_time";
  if (edges.time_attr == "time") spec.time.edge_times = {0};
  spec.time.rule.strategy = edges.strategy;
  spec.labor = edges.labor;
  OrDie(CheckSamplingSpec(spec, graph.schema));
  EpochSeeds seeds = BenchSeeds(graph);
  auto device = OrDie(DeviceDataset::Create(graph, placement));
  DeviceGraph device_graph = device->graph();
  std::unique_ptr<HotTier> tier;
  if (hot.num_hot > 0) {  // with the CSC in host memory, the hot nodes' lists too (as gnnd does)
    tier = OrDie(HotTier::Create(device_graph, hot.order, hot.num_hot, {0}, placement != CscPlacement::kDevice));
    device_graph.types[0].hot = tier->view(0);
  }
  // As a homogeneous session lays out its slot: the API 1.0 arrays, then any edge data.
  BatchCapacity capacity = OrDie(ComputeBatchCapacity(spec, graph.schema, graph.MaxInDegrees()));
  const BatchLayout layout = BatchLayout::Make(capacity, spec, graph.schema);
  auto sampler = OrDie(CudaSampler::Create(device_graph, spec, 1, layout,
                                           {.use_graphs = graphs, .fit_sorts = absl::GetFlag(FLAGS_fit_sorts)}));
  const BatchLayout::TypeArrays& nodes_at = layout.types[0];
  const BatchLayout::RelationArrays& edges_at = layout.relations[0];
  int64_t* device_seeds = nullptr;
  void* out = nullptr;
  CHECK_CUDA(cudaMalloc(&device_seeds, sizeof(int64_t) * batch_size));
  CHECK_CUDA(cudaMalloc(&out, layout.total_bytes));
  cudaStream_t stream = slice_stream;  // a green context's, else one of the whole GPU
  if (slice_stream == nullptr) CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t start, sampled, stop;
  for (cudaEvent_t* e : {&start, &sampled, &stop}) CHECK_CUDA(cudaEventCreate(e));
  std::vector<double> sampling, whole;
  SampleRun run;
  run.slot_bytes = layout.total_bytes;
  const int timed = absl::GetFlag(FLAGS_batches);
  for (int i = 0; i < timed + 5; ++i) {
    const int64_t step = i % seeds.num_steps();
    const auto batch = seeds.batch(step);
    CHECK_CUDA(cudaMemcpy(device_seeds, batch.data(), batch.size_bytes(), cudaMemcpyHostToDevice));
    SampleOne(*sampler, seeds.batch_index(step), {device_seeds, batch.size()}, out, stream, start, sampled, stop,
              &run.redone);
    if (i < 5) continue;
    float a = 0, b = 0;
    CHECK_CUDA(cudaEventElapsedTime(&a, start, sampled));
    CHECK_CUDA(cudaEventElapsedTime(&b, start, stop));
    sampling.push_back(a);
    whole.push_back(b);
    int32_t counts[2 * kMaxHops + 1];
    const size_t hops = fanouts.size();
    CHECK_CUDA(cudaMemcpy(counts, static_cast<char*>(out) + nodes_at.num_nodes_per_hop, 4 * (hops + 1),
                          cudaMemcpyDeviceToHost));
    int64_t nodes = 0;
    for (size_t h = 0; h <= hops; ++h) nodes += counts[h];
    run.nodes += nodes;
    CHECK_CUDA(
        cudaMemcpy(counts, static_cast<char*>(out) + edges_at.num_edges_per_hop, 4 * hops, cudaMemcpyDeviceToHost));
    for (size_t h = 0; h < hops; ++h) run.edges += counts[h];
    on_batch(static_cast<const int64_t*>(static_cast<const void*>(static_cast<char*>(out) + nodes_at.node_ids)), nodes);
  }
  run.sampling_ms = Median(sampling);
  run.whole_ms = Median(whole);
  if (run.redone > 0)
    std::fprintf(stderr, "%d batches outgrew a fitted sort or a LABOR bound: sampled again\n", run.redone);
  run.nodes /= timed;
  run.edges /= timed;
  for (cudaEvent_t e : {start, sampled, stop}) cudaEventDestroy(e);
  sampler.reset();  // its graphs, captured on `stream`, before the stream may go
  if (slice_stream == nullptr) cudaStreamDestroy(stream);
  cudaFree(out);
  cudaFree(device_seeds);
  return run;
}

// Uniform and weighted draws without and with the edges' data, CSC in GPU memory, captured graphs.
int RunEdges() {
  auto g = GraphFromFlags(/*edge_data=*/true);
  if (g->data.schema.relations[0].edge_attrs.size() != 2) {
    std::fprintf(stderr, "edges: needs --synthetic_nodes (a graph with a weight and a 16-byte feature per edge)\n");
    return 2;
  }
  std::printf(
      "Graph: %s; batch %lld; CSC and weights in GPU memory, the edge data in pinned host memory; CUDA graphs; "
      "median of %d batches.\n\n",
      g->name.c_str(), static_cast<long long>(absl::GetFlag(FLAGS_batch_size)), absl::GetFlag(FLAGS_batches));
  std::printf(
      "| fanouts | draws | edge data | sampling ms | whole batch ms | edges/batch | weighted / uniform (sampling) | "
      "edge data MB/batch | edge data GB/s |\n|---|---|---|---|---|---|---|---|---|\n");
  constexpr double kEdgeBytes = 8 + 4 + 16;  // e_id, edge_weight, edge_feat
  for (absl::string_view set : absl::StrSplit(absl::GetFlag(FLAGS_fanouts), '/')) {
    const std::vector<int32_t> fanouts = ParseFanouts(set);
    double uniform_sampling = 0;
    for (bool weighted : {false, true}) {
      double without_ms = 0;
      for (bool data : {false, true}) {
        const SampleRun run = Sample(*g, fanouts, CscPlacement::kDevice, true, [](const int64_t*, int64_t) {}, {},
                                     {.data = data, .weighted = weighted});
        if (!weighted && !data) uniform_sampling = run.sampling_ms;
        const double bytes = data ? run.edges * kEdgeBytes : 0;
        const double extra_ms = run.whole_ms - without_ms;
        if (!data) without_ms = run.whole_ms;
        std::printf("| [%s] | %s | %s | %.3f | %.3f | %.0f | %s | %s | %s |\n", std::string(set).c_str(),
                    weighted ? "weighted" : "uniform", data ? "e_id + weight + 16 B feature" : "none", run.sampling_ms,
                    run.whole_ms, run.edges,
                    weighted ? absl::StrFormat("%.2f", run.sampling_ms / uniform_sampling).c_str() : "",
                    data ? absl::StrFormat("%.1f", bytes / 1e6).c_str() : "",
                    data && extra_ms > 0 ? absl::StrFormat("%.1f", bytes / 1e6 / extra_ms).c_str() : "");
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

// The temporal rule against the uniform one on one graph with times, CSC and times in GPU memory, captured
// graphs: sampling and whole-batch ms, nodes and edges a batch (a disjoint batch holds a node once per
// subgraph that reaches it), the ratio to the uniform rule's sampling time.
int RunTemporal() {
  auto g = GraphFromFlags(/*edge_data=*/false, /*times=*/true);
  if (g->data.schema.relations[0].edge_attrs.size() != 1) {
    std::fprintf(stderr, "temporal: needs --synthetic_nodes (a graph with node and edge times)\n");
    return 2;
  }
  if (!absl::GetFlag(FLAGS_seeds_out).empty()) WriteBenchSeeds(g->data, absl::GetFlag(FLAGS_seeds_out));
  // The time orders the temporal rows sample through, built here (as a session's first use builds them) so their
  // cost is reported apart from the batches'.
  const GraphData& graph = g->data;
  for (const int times : {graph.schema.node_types[0].node_time, graph.schema.relations[0].edge_attrs[0].array}) {
    const auto start = std::chrono::steady_clock::now();
    OrDie(graph.time_orders->Get(graph, 0, times));
    std::printf("Time order by %s: built in %.1f s on %d threads, %.2f GB in all so far.\n",
                graph.schema.arrays[times].name.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), DefaultThreads(),
                static_cast<double>(graph.time_orders->bytes()) / 1e9);
  }
  std::printf(
      "Graph: %s; batch %lld (seeds at their own node times); CSC and times in GPU memory; CUDA graphs; median of "
      "%d batches.\n\n",
      g->name.c_str(), static_cast<long long>(absl::GetFlag(FLAGS_batch_size)), absl::GetFlag(FLAGS_batches));
  std::printf(
      "| fanouts | rule | sampling ms | whole batch ms | nodes/batch | edges/batch | sampling / uniform |\n"
      "|---|---|---|---|---|---|---|\n");
  struct Mode {
    const char* name;
    EdgeSpec spec;
  };
  const Mode modes[] = {
      {"uniform", {}},
      {"uniform, disjoint", {.disjoint = true}},
      {"temporal uniform (edge times)", {.time_attr = "time"}},
      {"temporal last (edge times)", {.time_attr = "time", .strategy = TemporalStrategy::kLast}},
      {"temporal uniform (node times)", {.time_attr = "node_time"}},
      {"temporal last (node times)", {.time_attr = "node_time", .strategy = TemporalStrategy::kLast}},
  };
  for (absl::string_view set : absl::StrSplit(absl::GetFlag(FLAGS_fanouts), '/')) {
    const std::vector<int32_t> fanouts = ParseFanouts(set);
    double uniform_sampling = 0;
    for (const Mode& mode : modes) {
      const SampleRun run = Sample(
          *g, fanouts, CscPlacement::kDevice, true, [](const int64_t*, int64_t) {}, {}, mode.spec);
      if (uniform_sampling == 0) uniform_sampling = run.sampling_ms;
      std::printf("| [%s] | %s | %.3f | %.3f | %.0f | %.0f | %.2f |\n", std::string(set).c_str(), mode.name,
                  run.sampling_ms, run.whole_ms, run.nodes, run.edges, run.sampling_ms / uniform_sampling);
      std::fflush(stdout);
    }
  }
  return 0;
}

// LABOR-0 against the uniform rule on one graph: how many nodes (feature rows) a batch holds, how many of
// them the batch before held, and the sampling's time on the whole GPU and on each --sample_sms slice.
int RunLabor() {
  auto g = GraphFromFlags();
  const GraphData& graph = g->data;
  const uint64_t row_bytes =
      graph.schema.node_types[0].features >= 0 ? graph.schema.node_types[0].feature_row_bytes() : 0;
  std::printf(
      "Graph: %s; batch %lld; CSC in GPU memory, features (%llu B rows; 0: none) in host memory; CUDA graphs; median "
      "of %d batches.\n\n",
      g->name.c_str(), static_cast<long long>(absl::GetFlag(FLAGS_batch_size)),
      static_cast<unsigned long long>(row_bytes), absl::GetFlag(FLAGS_batches));
  std::printf(
      "| fanouts | rule | SMs | sampling ms | sampling / uniform | whole batch ms | nodes/batch | edges/batch | "
      "feature "
      "MB/batch | nodes / uniform's | held by the batch before | slot MB (bound) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  struct Mode {
    const char* name;
    LaborSpec labor;
  };
  const Mode modes[] = {
      {"uniform", {}},
      {"LABOR-0", {.active = true}},
      {"LABOR-0, layer_dependency", {.active = true, .dependency = {.layer = true}}},
      {"LABOR-0, batch_dependency 32", {.active = true, .dependency = {.batches = 32}}},
  };
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  for (absl::string_view set : absl::StrSplit(absl::GetFlag(FLAGS_fanouts), '/')) {
    const std::vector<int32_t> fanouts = ParseFanouts(set);
    for (const std::string& sms_text : absl::GetFlag(FLAGS_sample_sms)) {
      std::unique_ptr<GreenContext> slice;  // a producer's slice (0: the whole GPU)
      if (std::stoi(sms_text) > 0) slice = OrDie(GreenContext::Create(device, std::stoi(sms_text)));
      const std::string sms = slice != nullptr ? std::to_string(slice->sms()) : "all";
      double uniform_nodes = 0, uniform_ms = 0;
      for (const Mode& mode : modes) {
        std::vector<int64_t> previous, current;
        double held = 0;
        int compared = 0;
        const SampleRun run = Sample(
            *g, fanouts, CscPlacement::kDevice, true,
            [&](const int64_t* device_ids, int64_t n) {
              current.resize(static_cast<size_t>(n));
              CHECK_CUDA(cudaMemcpy(current.data(), device_ids, sizeof(int64_t) * n, cudaMemcpyDeviceToHost));
              std::sort(current.begin(), current.end());
              if (!previous.empty()) {
                std::vector<int64_t> common;
                std::set_intersection(current.begin(), current.end(), previous.begin(), previous.end(),
                                      std::back_inserter(common));
                held += static_cast<double>(common.size()) / static_cast<double>(n);
                ++compared;
              }
              previous.swap(current);
            },
            {}, {.labor = mode.labor}, slice != nullptr ? slice->stream() : nullptr);
        if (uniform_nodes == 0) {  // the first mode is the uniform rule
          uniform_nodes = run.nodes;
          uniform_ms = run.sampling_ms;
        }
        std::printf(
            "| [%s] | %s | %s | %.3f | %.2f | %.3f | %.0f | %.0f | %s | %.3f | %.3f | %.0f |\n",
            std::string(set).c_str(), mode.name, sms.c_str(), run.sampling_ms, run.sampling_ms / uniform_ms,
            run.whole_ms, run.nodes, run.edges,
            row_bytes == 0 ? "–" : absl::StrFormat("%.1f", run.nodes * static_cast<double>(row_bytes) / 1e6).c_str(),
            run.nodes / uniform_nodes, compared > 0 ? held / compared : 0.0, static_cast<double>(run.slot_bytes) / 1e6);
        std::fflush(stdout);
      }
    }
  }
  return 0;
}

const char* PlacementName(CscPlacement placement) {
  switch (placement) {
    case CscPlacement::kDevice:
      return "GPU memory";
    case CscPlacement::kHostIndices:
      return "host, indptr in GPU memory";
    case CscPlacement::kHost:
      break;
  }
  return "host (zero-copy)";
}

int RunSampling() {
  const int64_t synthetic = absl::GetFlag(FLAGS_synthetic_nodes);
  auto g = GraphFromFlags();
  std::printf("Graph: %s; batch %lld; median of %d batches.\n\n", g->name.c_str(),
              static_cast<long long>(absl::GetFlag(FLAGS_batch_size)), absl::GetFlag(FLAGS_batches));
  std::printf(
      "| fanouts | CSC in | SMs | launches | sampling ms | whole batch ms | nodes/batch | edges/batch |\n"
      "|---|---|---|---|---|---|---|---|\n");
  const std::vector<std::string> placements = absl::StrSplit(absl::GetFlag(FLAGS_csc), ',');
  const std::pair<CscPlacement, const char*> kinds[] = {
      {CscPlacement::kDevice, "gpu"}, {CscPlacement::kHostIndices, "host-indices"}, {CscPlacement::kHost, "host"}};
  for (const auto& [placement, name] : kinds) {
    if (!absl::c_linear_search(placements, name)) continue;
    for (absl::string_view set : absl::StrSplit(absl::GetFlag(FLAGS_fanouts), '/')) {
      for (const std::string& sms_text : absl::GetFlag(FLAGS_sample_sms)) {
        int device = 0;
        CHECK_CUDA(cudaGetDevice(&device));
        std::unique_ptr<GreenContext> slice;  // a producer's slice, as gnnd's sessions sample on (0: the whole GPU)
        if (std::stoi(sms_text) > 0) slice = OrDie(GreenContext::Create(device, std::stoi(sms_text)));
        const std::string sms = slice != nullptr ? std::to_string(slice->sms()) : "all";
        for (bool graphs : {false, true}) {
          const SampleRun run = Sample(
              *g, ParseFanouts(set), placement, graphs, [](const int64_t*, int64_t) {}, {}, {},
              slice != nullptr ? slice->stream() : nullptr);
          std::printf("| [%s] | %s | %s | %s | %.3f | %s | %.0f | %.0f |\n", std::string(set).c_str(),
                      PlacementName(placement), sms.c_str(), graphs ? "CUDA graphs" : "each kernel", run.sampling_ms,
                      synthetic > 0 ? "–" : absl::StrCat(absl::SixDigits(run.whole_ms)).c_str(), run.nodes, run.edges);
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

// Typed sampling (CudaSampler, CSC in GPU memory, captured graphs) on a preset-shaped typed graph, then
// the homogeneous sampler on a graph of the same node and edge counts: sampled edges per second of each.
int RunTyped() {
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  const std::vector<int32_t> fanouts = ParseFanouts(absl::GetFlag(FLAGS_fanouts));
  std::printf(
      "Batch %lld, fanouts [%s] for every relation (%s), CSC in GPU memory, CUDA graphs; median of %d batches.\n\n",
      static_cast<long long>(batch_size), absl::GetFlag(FLAGS_fanouts).c_str(),
      absl::GetFlag(FLAGS_labor) ? "typed: LABOR-0" : "uniform", absl::GetFlag(FLAGS_batches));
  std::printf(
      "| graph | sampler | sampling ms | whole batch ms | edges/batch | sampled edges/s (sampling) | typed / "
      "homogeneous | nodes/batch | feature MB/batch |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& preset : absl::GetFlag(FLAGS_typed_presets)) {
    const std::vector<std::string> parts = absl::StrSplit(preset, ':');
    const double scale = parts.size() > 1 ? std::stod(parts[1]) : 1.0;
    int64_t num_nodes = 0, num_edges = 0;
    double typed_rate = 0;
    {
      auto g = TypedSyntheticGraph(parts[0], scale);
      const GraphData& graph = g->data;
      const DatasetSchema& schema = graph.schema;
      num_nodes = schema.num_nodes;
      for (const RelationSchema& r : schema.relations) num_edges += r.num_edges;
      const int seed_type = schema.NodeTypeNamed("paper");
      SamplingSpec spec{batch_size, seed_type, std::vector<std::vector<int32_t>>(schema.relations.size(), fanouts)};
      spec.labor.active = absl::GetFlag(FLAGS_labor);
      const BatchCapacity capacity = OrDie(ComputeBatchCapacity(spec, schema, graph.MaxInDegrees()));
      auto device = OrDie(DeviceDataset::Create(graph, CscPlacement::kDevice));
      auto sampler = OrDie(CudaSampler::Create(device->graph(), spec, 1, BatchLayout::Make(capacity, spec, schema),
                                               {.fit_sorts = absl::GetFlag(FLAGS_fit_sorts)}));
      const BatchLayout& layout = sampler->layout();
      const NodeTypeSchema& papers = schema.node_types[seed_type];
      EpochSeeds seeds(std::span<const int64_t>(static_cast<const int64_t*>(graph.arrays.data[papers.splits[0]]),
                                                papers.split_sizes[0]),
                       {.seed = 1, .batch_size = batch_size}, 0);
      int64_t* device_seeds = nullptr;
      void* out = nullptr;
      CHECK_CUDA(cudaMalloc(&device_seeds, sizeof(int64_t) * batch_size));
      CHECK_CUDA(cudaMalloc(&out, layout.total_bytes));
      cudaStream_t stream;
      CHECK_CUDA(cudaStreamCreate(&stream));
      cudaEvent_t start, sampled, stop;
      for (cudaEvent_t* e : {&start, &sampled, &stop}) CHECK_CUDA(cudaEventCreate(e));
      std::vector<double> sampling, whole;
      double edges = 0, nodes = 0, feature_bytes = 0;
      int redone = 0;
      const int timed = absl::GetFlag(FLAGS_batches);
      for (int i = 0; i < timed + 5; ++i) {
        const int64_t step = i % seeds.num_steps();
        const auto batch = seeds.batch(step);
        CHECK_CUDA(cudaMemcpy(device_seeds, batch.data(), batch.size_bytes(), cudaMemcpyHostToDevice));
        SampleOne(*sampler, seeds.batch_index(step), {device_seeds, batch.size()}, out, stream, start, sampled, stop,
                  &redone);
        if (i < 5) continue;
        float a = 0, b = 0;
        CHECK_CUDA(cudaEventElapsedTime(&a, start, sampled));
        CHECK_CUDA(cudaEventElapsedTime(&b, start, stop));
        sampling.push_back(a);
        whole.push_back(b);
        for (const auto& r : layout.relations) {
          std::vector<int32_t> hops(layout.num_hops);
          CHECK_CUDA(cudaMemcpy(hops.data(), static_cast<char*>(out) + r.num_edges_per_hop, 4 * hops.size(),
                                cudaMemcpyDeviceToHost));
          for (int32_t e : hops) edges += e;
        }
        for (size_t t = 0; t < layout.types.size(); ++t) {
          std::vector<int32_t> hops(layout.num_hops + 1);
          CHECK_CUDA(cudaMemcpy(hops.data(), static_cast<char*>(out) + layout.types[t].num_nodes_per_hop,
                                4 * hops.size(), cudaMemcpyDeviceToHost));
          for (int32_t n : hops) {
            nodes += n;
            feature_bytes += static_cast<double>(n) * static_cast<double>(layout.types[t].feature_row_bytes);
          }
        }
      }
      edges /= timed;
      if (redone > 0)
        std::fprintf(stderr, "%d batches outgrew a fitted sort or a LABOR bound: sampled again\n", redone);
      typed_rate = edges / (Median(sampling) / 1e3);
      std::printf("| %s | typed | %.3f | %.3f | %.0f | %.3g | | %.0f | %.1f |\n", g->name.c_str(), Median(sampling),
                  Median(whole), edges, typed_rate, nodes / timed, feature_bytes / timed / 1e6);
      std::fflush(stdout);
      for (cudaEvent_t e : {start, sampled, stop}) cudaEventDestroy(e);
      cudaStreamDestroy(stream);
      cudaFree(out);
      cudaFree(device_seeds);
    }
    auto same_size = SyntheticGraph(num_nodes, static_cast<double>(num_edges) / num_nodes, 1);
    const SampleRun run = Sample(*same_size, fanouts, CscPlacement::kDevice, true, [](const int64_t*, int64_t) {});
    const double rate = run.edges / (run.sampling_ms / 1e3);
    std::printf("| %s | homogeneous (uniform) | %.3f | – | %.0f | %.3g | %.2f | %.0f | – |\n", same_size->name.c_str(),
                run.sampling_ms, run.edges, rate, typed_rate / rate, run.nodes);
    std::fflush(stdout);
  }
  return 0;
}

// The ceiling: one warp per row of the sorted ids, the widest loads the row size allows.
template <typename Word>
__global__ void SortedGatherKernel(const int64_t* ids, int64_t count, const char* table, size_t row_bytes, char* out) {
  const int64_t i = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  if (i >= count) return;
  const Word* src = reinterpret_cast<const Word*>(table + ids[i] * row_bytes);
  Word* dst = reinterpret_cast<Word*>(out + i * row_bytes);
  for (size_t w = threadIdx.x % 32; w < row_bytes / sizeof(Word); w += 32) dst[w] = src[w];
}

void LaunchSortedGather(const int64_t* ids, int64_t count, const char* table, size_t row, char* out, cudaStream_t s) {
  const int blocks = static_cast<int>((count * 32 + 255) / 256);
  if (row % 16 == 0)
    SortedGatherKernel<uint4><<<blocks, 256, 0, s>>>(ids, count, table, row, out);
  else if (row % 8 == 0)
    SortedGatherKernel<uint2><<<blocks, 256, 0, s>>>(ids, count, table, row, out);
  else if (row % 4 == 0)
    SortedGatherKernel<uint32_t><<<blocks, 256, 0, s>>>(ids, count, table, row, out);
  else
    SortedGatherKernel<uint16_t><<<blocks, 256, 0, s>>>(ids, count, table, row, out);
}

// The node ids of the first `count` batches sampled with --fanouts (gnnd's order), kept on the host.
std::vector<std::vector<int64_t>> SampledIds(const BenchGraph& g, size_t count) {
  std::vector<std::vector<int64_t>> batches;
  Sample(g, ParseFanouts(absl::GetFlag(FLAGS_fanouts)), CscPlacement::kDevice, /*graphs=*/true,
         [&](const int64_t* ids, int64_t n) {
           if (batches.size() < count) {
             batches.emplace_back(n);
             CHECK_CUDA(cudaMemcpy(batches.back().data(), ids, 8 * n, cudaMemcpyDeviceToHost));
           }
         });
  return batches;
}

int RunGather() {
  auto g = LoadDataset(absl::GetFlag(FLAGS_dataset));
  const std::string fanouts = absl::GetFlag(FLAGS_fanouts);
  const std::vector<std::vector<int64_t>> batches = SampledIds(*g, 8);
  const int64_t n = g->data.num_nodes();
  int64_t max_count = 0;
  double mean_count = 0;
  for (const auto& b : batches) max_count = std::max<int64_t>(max_count, b.size()), mean_count += b.size();
  mean_count /= batches.size();
  std::printf(
      "Graph: %s; %zu sampled batches of %.0f nodes on average (density 1/%.1f); fanouts [%s]; GB/s of rows "
      "delivered, median of 20 runs per batch.\n\n",
      g->name.c_str(), batches.size(), mean_count, n / mean_count, fanouts.c_str());
  std::printf(
      "| SMs | rows a warp | row bytes | gnnd gather | sorted warp-per-row (ceiling) | pinned memcpy | "
      "gnnd / ceiling | gnnd / memcpy |\n|---|---|---|---|---|---|---|---|\n");
  int64_t *ids = nullptr, *sorted = nullptr;
  CHECK_CUDA(cudaMalloc(&ids, 8 * max_count));
  CHECK_CUDA(cudaMalloc(&sorted, 8 * max_count));
  cudaStream_t whole;
  CHECK_CUDA(cudaStreamCreate(&whole));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  int device = 0, shared = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlock, device));
  for (const std::string& sms_text : absl::GetFlag(FLAGS_gather_sms)) {
    const int sms = std::stoi(sms_text);
    std::unique_ptr<GreenContext> slice;
    if (sms > 0) slice = OrDie(GreenContext::Create(device, sms));
    const cudaStream_t stream = slice != nullptr ? slice->stream() : whole;
    const std::string slice_label = slice != nullptr ? std::to_string(slice->sms()) : "all";
    for (const std::string& r : absl::GetFlag(FLAGS_row_bytes)) {
      const size_t row = std::stoul(r);
      const HostBuffer table = RowTable(row * n);
      auto registration = OrDie(HostRegistration::Register(table.data, table.bytes));
      const char* device_table = static_cast<const char*>(registration->device_pointer());
      char* out = nullptr;
      CHECK_CUDA(cudaMalloc(&out, row * max_count));
      const RowSource source{device_table, n, row};
      std::vector<int> rows_per_warp;
      for (const std::string& w : absl::GetFlag(FLAGS_rows_per_warp)) {
        rows_per_warp.push_back(std::stoi(w) > 0 ? std::stoi(w) : RowsPerWarpOn(stream));
      }
      std::vector<std::vector<double>> gnnd_rate(rows_per_warp.size());
      std::vector<double> ceiling_rate, memcpy_rate;
      auto time = [&](auto&& launch) {
        CHECK_CUDA(cudaEventRecord(start, stream));
        launch();
        CHECK_CUDA(cudaEventRecord(stop, stream));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
        return ms;
      };
      for (const auto& b : batches) {
        const int64_t count = static_cast<int64_t>(b.size());
        std::vector<int64_t> in_order = b;
        std::sort(in_order.begin(), in_order.end());
        CHECK_CUDA(cudaMemcpy(ids, b.data(), 8 * count, cudaMemcpyHostToDevice));
        CHECK_CUDA(cudaMemcpy(sorted, in_order.data(), 8 * count, cudaMemcpyHostToDevice));
        const double gb = static_cast<double>(row) * count / 1e6;  // per ms -> GB/s
        for (int rep = 0; rep < 20; ++rep) {
          for (size_t c = 0; c < rows_per_warp.size(); ++c) {
            const GatherOptions options{.shared_bytes_limit = size_t(shared), .rows_per_warp = rows_per_warp[c]};
            gnnd_rate[c].push_back(gb /
                                   time([&] { OrDie(GatherRows(ids, nullptr, count, source, options, out, stream)); }));
          }
          ceiling_rate.push_back(gb / time([&] { LaunchSortedGather(sorted, count, device_table, row, out, stream); }));
          memcpy_rate.push_back(
              gb /
              time([&] { CHECK_CUDA(cudaMemcpyAsync(out, table.data, row * count, cudaMemcpyHostToDevice, stream)); }));
        }
      }
      const double c = Median(ceiling_rate), p = Median(memcpy_rate);
      for (size_t k = 0; k < rows_per_warp.size(); ++k) {
        const double a = Median(gnnd_rate[k]);
        std::printf("| %s | %d | %zu | %.1f | %.1f | %.1f | %.3f | %.3f |\n", slice_label.c_str(), rows_per_warp[k],
                    row, a, c, p, a / c, a / p);
      }
      std::fflush(stdout);
      cudaFree(out);
    }
  }
  return 0;
}

// The same rows copied by the copy engines instead of SMs (cudaMemcpyBatchAsync: one copy per row, from a list the
// host builds): whether a gather could leave the trainer's SMs alone. Timed on the GPU (events around the call, so
// the API's host time counts where the GPU waits for it) and on the host (the call alone).
int RunGatherCopyEngines() {
  auto g = LoadDataset(absl::GetFlag(FLAGS_dataset));
  const std::vector<std::vector<int64_t>> batches = SampledIds(*g, 4);
  const int64_t n = g->data.num_nodes();
  int64_t max_count = 0;
  for (const auto& b : batches) max_count = std::max<int64_t>(max_count, b.size());
  std::printf(
      "Graph: %s; rows of %zu sampled batches (%lld at most) copied by cudaMemcpyBatchAsync, one copy a row; "
      "medians of 5 runs per batch.\n\n| row bytes | flags | GB/s (GPU) | API call ms (host) |\n|---|---|---|---|\n",
      g->name.c_str(), batches.size(), static_cast<long long>(max_count));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (const std::string& r : absl::GetFlag(FLAGS_row_bytes)) {
    const size_t row = std::stoul(r);
    const HostBuffer table = RowTable(row * n);
    auto registration = OrDie(HostRegistration::Register(table.data, table.bytes));
    char* out = nullptr;
    CHECK_CUDA(cudaMalloc(&out, row * max_count));
    for (unsigned flags : {0u, unsigned(cudaMemcpyFlagPreferOverlapWithCompute)}) {
      std::vector<double> rate, api_ms;
      for (const auto& b : batches) {
        std::vector<void*> dsts(b.size());
        std::vector<const void*> srcs(b.size());
        std::vector<size_t> sizes(b.size(), row);
        for (size_t i = 0; i < b.size(); ++i) {
          dsts[i] = out + i * row;
          srcs[i] = static_cast<const char*>(table.data) + b[i] * row;
        }
        cudaMemcpyAttributes attrs{};
        attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        attrs.srcLocHint.type = cudaMemLocationTypeHost;
        attrs.dstLocHint.type = cudaMemLocationTypeDevice;
        attrs.flags = flags;
        size_t attrs_index = 0;
        for (int rep = 0; rep < 5; ++rep) {
          CHECK_CUDA(cudaEventRecord(start, stream));
          const auto host_start = std::chrono::steady_clock::now();
          CHECK_CUDA(
              cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), b.size(), &attrs, &attrs_index, 1, stream));
          api_ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start).count());
          CHECK_CUDA(cudaEventRecord(stop, stream));
          CHECK_CUDA(cudaEventSynchronize(stop));
          float ms = 0;
          CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
          rate.push_back(static_cast<double>(row) * b.size() / 1e6 / ms);
        }
      }
      std::printf("| %zu | %s | %.1f | %.2f |\n", row, flags ? "prefer overlap with compute" : "default", Median(rate),
                  Median(api_ms));
      std::fflush(stdout);
    }
    cudaFree(out);
  }
  return 0;
}

// Row reads per node over `batches`.
std::vector<int64_t> CountReads(const std::vector<std::vector<int64_t>>& batches, int64_t n) {
  std::vector<int64_t> reads(n);
  for (const auto& b : batches)
    for (int64_t id : b) ++reads[id];
  return reads;
}

// Median GB/s of rows delivered on each device, all devices gathering `batches` through their own row
// source at once (threads started together), 20 runs per batch.
std::vector<double> ConcurrentGatherRates(const std::vector<std::vector<int64_t>>& batches,
                                          const std::vector<int>& devices, const std::vector<RowSource>& rows) {
  std::vector<double> medians(devices.size());
  std::barrier start_together(static_cast<std::ptrdiff_t>(devices.size()));
  std::vector<std::thread> threads;
  for (size_t d = 0; d < devices.size(); ++d) {
    threads.emplace_back([&, d] {
      CHECK_CUDA(cudaSetDevice(devices[d]));
      std::vector<int64_t*> ids(batches.size());
      size_t max_count = 0;
      for (size_t b = 0; b < batches.size(); ++b) {
        CHECK_CUDA(cudaMalloc(&ids[b], 8 * batches[b].size()));
        CHECK_CUDA(cudaMemcpy(ids[b], batches[b].data(), 8 * batches[b].size(), cudaMemcpyHostToDevice));
        max_count = std::max(max_count, batches[b].size());
      }
      char* out = nullptr;
      CHECK_CUDA(cudaMalloc(&out, rows[d].row_bytes * max_count));
      cudaStream_t stream;
      CHECK_CUDA(cudaStreamCreate(&stream));
      cudaEvent_t start, stop;
      CHECK_CUDA(cudaEventCreate(&start));
      CHECK_CUDA(cudaEventCreate(&stop));
      std::vector<double> rate;
      start_together.arrive_and_wait();
      for (size_t b = 0; b < batches.size(); ++b) {
        const auto count = static_cast<int64_t>(batches[b].size());
        const double gb = static_cast<double>(rows[d].row_bytes) * count / 1e6;  // per ms -> GB/s
        for (int rep = 0; rep < 20; ++rep) {
          CHECK_CUDA(cudaEventRecord(start, stream));
          OrDie(GatherRows(ids[b], nullptr, count, rows[d], {}, out, stream));
          CHECK_CUDA(cudaEventRecord(stop, stream));
          CHECK_CUDA(cudaEventSynchronize(stop));
          float ms = 0;
          CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
          rate.push_back(gb / ms);
        }
      }
      medians[d] = Median(rate);
      for (int64_t* p : ids) cudaFree(p);
      cudaFree(out);
      cudaStreamDestroy(stream);
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
    });
  }
  for (std::thread& t : threads) t.join();
  return medians;
}

int RunTier() {
  auto g = GraphFromFlags();
  const GraphData& graph = g->data;
  const int64_t n = graph.num_nodes();
  const std::vector<int32_t> fanouts = ParseFanouts(absl::GetFlag(FLAGS_fanouts));
  // Batches of one epoch; the first half presamples a ranking, the second half is measured.
  std::vector<std::vector<int64_t>> batches;
  Sample(*g, fanouts, CscPlacement::kDevice, /*graphs=*/true, [&](const int64_t* ids, int64_t count) {
    batches.emplace_back(count);
    CHECK_CUDA(cudaMemcpy(batches.back().data(), ids, 8 * count, cudaMemcpyDeviceToHost));
  });
  const size_t half = batches.size() / 2;
  const std::vector<std::vector<int64_t>> presampled(batches.begin(), batches.begin() + half),
      measured(batches.begin() + half, batches.end());
  const auto* train = static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]);
  const std::vector<double> expected_reads = dataset::ExpectedReads(
      graph, {train, static_cast<size_t>(graph.manifest.num_train())}, fanouts, DefaultThreads());
  const std::vector<int64_t> expected = dataset::RankByScore<double>(expected_reads);
  const std::vector<int64_t> presample_counts = CountReads(presampled, n);
  const std::vector<int64_t> presample = dataset::RankByScore<int64_t>(presample_counts);
  const std::vector<int64_t> truth = CountReads(measured, n);
  const int gpus = absl::GetFlag(FLAGS_tier_gpus);
  if (gpus == 1) {  // sampling through the tier runs on one GPU: the split tier adds nothing to it
    std::printf(
        "Graph: %s; whole batches through a hot tier of 25 %% of the nodes by expected reads (their rows and labels; "
        "with the CSC in host memory also their in-neighbor lists), median of %zu batches.\n\n"
        "| fanouts | CSC in | hot tier | sampling ms | whole batch ms |\n|---|---|---|---|---|\n",
        g->name.c_str(), batches.size());
    for (CscPlacement placement : {CscPlacement::kDevice, CscPlacement::kHostIndices, CscPlacement::kHost}) {
      for (int64_t num_hot : {int64_t{0}, n / 4}) {
        const SampleRun run = Sample(
            *g, fanouts, placement, /*graphs=*/true, [](const int64_t*, int64_t) {}, HotSpec{expected, num_hot});
        std::printf("| [%s] | %s | %s | %.3f | %.3f |\n", absl::GetFlag(FLAGS_fanouts).c_str(),
                    PlacementName(placement), num_hot ? "25 %" : "none", run.sampling_ms, run.whole_ms);
        std::fflush(stdout);
      }
    }
    std::printf("\n");
  }
  std::vector<int> devices(gpus);
  std::iota(devices.begin(), devices.end(), 0);
  if (gpus > 1 && !EnablePeerAccess(devices)) std::fprintf(stderr, "no peer access between the GPUs\n"), std::exit(2);
  std::printf(
      "Graph: %s; %zu measured batches of fanouts [%s] (%zu more rank the presample); hot rows by expected reads%s; "
      "GB/s of rows delivered, median of 20 runs per batch; with several GPUs all gather at once (cuda:0 / "
      "cuda:1 ...).\n\n",
      g->name.c_str(), measured.size(), absl::GetFlag(FLAGS_fanouts).c_str(), half,
      gpus > 1 ? absl::StrCat(", split over ", gpus, " GPUs (each caches the share shown)").c_str() : "");
  std::printf(
      "| row bytes | cached rows | hit rate (expected) | hit rate (presample) | GPU memory per GPU | gather GB/s | "
      "vs no tier |\n|---|---|---|---|---|---|---|\n");
  auto labels_registration = OrDie(HostRegistration::Register(graph.arrays[ArrayId::kLabels], 8 * n));
  const auto* labels = static_cast<const int64_t*>(labels_registration->device_pointer());
  for (const std::string& r : absl::GetFlag(FLAGS_row_bytes)) {
    const size_t row = std::stoul(r);
    const HostBuffer table = RowTable(row * n);
    auto registration = OrDie(HostRegistration::Register(table.data, table.bytes));
    v1::DatasetManifest m = graph.manifest;
    m.set_feature_dtype(row % 4 == 0 ? v1::FEATURE_DTYPE_FLOAT32 : v1::FEATURE_DTYPE_FLOAT16);
    m.set_feature_dim(row / (row % 4 == 0 ? 4 : 2));
    DeviceGraph source;
    source.manifest = m;
    source.features = registration->device_pointer();
    source.labels = labels;
    std::vector<double> base_rates;
    for (double percent : {0.0, 10.0, 20.0, 25.0, 50.0}) {
      const auto per_gpu = static_cast<int64_t>(percent / 100 * static_cast<double>(n));
      const int64_t num_hot = std::min<int64_t>(per_gpu * gpus, n);
      std::unique_ptr<HotTier> tier;
      if (percent > 0) tier = OrDie(HotTier::Create(source, expected, num_hot, devices, /*adjacency=*/false));
      std::vector<RowSource> rows(gpus, RowSource{static_cast<const char*>(source.features), n, row});
      for (int d = 0; d < gpus && tier; ++d) rows[d].hot = tier->view(devices[d]);
      const std::vector<double> rates = ConcurrentGatherRates(measured, devices, rows);
      if (percent == 0) base_rates = rates;
      std::string rate_cells, ratio_cells;
      for (int d = 0; d < gpus; ++d) {
        absl::StrAppend(&rate_cells, d ? " / " : "", absl::StrFormat("%.1f", rates[d]));
        absl::StrAppend(&ratio_cells, d ? " / " : "", absl::StrFormat("%.2f", rates[d] / base_rates[d]));
      }
      std::printf(
          "| %zu | %g %% (%lld) | %.3f | %.3f | %.2f GB | %s | %s |\n", row, percent, static_cast<long long>(num_hot),
          dataset::HitRate(expected, num_hot, truth), dataset::HitRate(presample, num_hot, truth),
          tier ? static_cast<double>(tier->bytes_per_device()) / 1e9 : 0.0, rate_cells.c_str(), ratio_cells.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

int RunLink() {
  auto g = GraphFromFlags();
  const GraphData& graph = g->data;
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  const std::vector<int32_t> fanouts = ParseFanouts(absl::GetFlag(FLAGS_fanouts));
  const int timed = absl::GetFlag(FLAGS_batches);
  std::printf("Graph: %s; %lld positives a batch, fanouts [%s], CSC in GPU memory; median of %d batches.\n\n",
              g->name.c_str(), static_cast<long long>(batch_size), absl::GetFlag(FLAGS_fanouts).c_str(), timed);
  std::printf(
      "| negatives | exclusion | hop-0 nodes | link batch ms | node batch ms, same hop-0 seeds | link / node |\n"
      "|---|---|---|---|---|---|\n");
  // Positives: edges of the graph, drawn uniformly over destinations.
  const int64_t* indptr = graph.arrays.indptr();
  const auto* indices = static_cast<const int32_t*>(graph.arrays[ArrayId::kIndices]);
  const int64_t n = graph.num_nodes(), count = batch_size * (timed + 5);
  auto pairs = std::make_shared<std::vector<int64_t>>(2 * count);
  for (int64_t i = 0, draw = 0; i < count; ++draw) {
    const auto v = static_cast<int64_t>(Below64(Mix64(draw + 17), n));
    const int64_t degree = indptr[v + 1] - indptr[v];
    if (degree == 0) continue;
    (*pairs)[i] = indices[indptr[v] + static_cast<int64_t>(Below64(Mix64(draw + 91), degree))];
    (*pairs)[count + i++] = v;
  }
  auto device = OrDie(DeviceDataset::Create(graph, CscPlacement::kDevice));
  std::vector<int64_t> positions(count);
  std::iota(positions.begin(), positions.end(), 0);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t start, stop;
  for (cudaEvent_t* e : {&start, &stop}) CHECK_CUDA(cudaEventCreate(e));
  struct Case {
    const char* negatives;
    NegativeSpec spec;
  };
  for (const Case& c : {Case{"binary 1:1", {NegativeMode::kBinary, 1, false}},
                        Case{"triplet 1:5", {NegativeMode::kTriplet, 5, false}}}) {
    for (const ExcludeMode exclude : {ExcludeMode::kNone, ExcludeMode::kReverse}) {
      LinkSeedSpec spec;
      spec.seed_edges = pairs;
      spec.negatives = c.spec;
      spec.exclude = exclude;
      const SamplingSpec sampling = LinkSampling(spec, {fanouts}, graph.schema, batch_size);
      BatchLayout link_layout = BatchLayout::Make(
          OrDie(ComputeBatchCapacity(sampling, graph.schema, graph.MaxInDegrees())), sampling, graph.schema);
      AddPairArrays(link_layout, 0, batch_size, spec.negatives, false);
      auto link_sampler = OrDie(CudaSampler::Create(device->graph(), sampling, 1, link_layout, {.use_graphs = false}));
      auto link = OrDie(CudaLinkStage::Create(graph, device->graph(), *link_sampler, spec, 1));
      const HomogeneousLayout layout = HomogeneousLayoutOf(link_layout);  // the graph arrays, as node batches
      auto node =
          OrDie(CudaSampler::Create(device->graph(), SamplingSpec::OneRelation(layout.capacity.max_seeds, fanouts), 1,
                                    AsBatchLayout(layout), {.use_graphs = false}));
      void *link_out = nullptr, *node_out = nullptr;
      int64_t* seeds = nullptr;
      CHECK_CUDA(cudaMalloc(&link_out, link_layout.total_bytes));
      CHECK_CUDA(cudaMalloc(&node_out, layout.total_bytes));
      CHECK_CUDA(cudaMalloc(&seeds, sizeof(int64_t) * layout.capacity.max_seeds));
      std::vector<double> link_ms, node_ms, hop0;
      for (int i = 0; i < timed + 5; ++i) {
        const std::span<const int64_t> input_id(positions.data() + i * batch_size, batch_size);
        CHECK_CUDA(cudaEventRecord(start, stream));
        OrDie(link->Sample(0, i, input_id, link_out, stream));
        CHECK_CUDA(cudaEventRecord(stop, stream));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float a = 0;
        CHECK_CUDA(cudaEventElapsedTime(&a, start, stop));
        int32_t seeds_count = 0;
        CHECK_CUDA(cudaMemcpy(&seeds_count, static_cast<char*>(link_out) + layout.num_nodes_per_hop, 4,
                              cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(seeds, static_cast<char*>(link_out) + layout.node_ids, 8 * seeds_count,
                              cudaMemcpyDeviceToDevice));
        CHECK_CUDA(cudaEventRecord(start, stream));
        OrDie(node->Sample(0, i, {seeds, static_cast<size_t>(seeds_count)}, node_out, stream));
        CHECK_CUDA(cudaEventRecord(stop, stream));
        CHECK_CUDA(cudaEventSynchronize(stop));
        float b = 0;
        CHECK_CUDA(cudaEventElapsedTime(&b, start, stop));
        if (i < 5) continue;
        link_ms.push_back(a);
        node_ms.push_back(b);
        hop0.push_back(seeds_count);
      }
      const double l = Median(link_ms), m = Median(node_ms);
      std::printf("| %s | %s | %.0f | %.3f | %.3f | %.2f |\n", c.negatives,
                  exclude == ExcludeMode::kNone ? "none" : "reverse", Median(hop0), l, m, l / m);
      std::fflush(stdout);
      cudaFree(link_out);
      cudaFree(node_out);
      cudaFree(seeds);
    }
  }
  for (cudaEvent_t e : {start, stop}) cudaEventDestroy(e);
  cudaStreamDestroy(stream);
  return 0;
}

}  // namespace
}  // namespace gnnd::cuda

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  const std::string mode = args.size() > 1 ? args[1] : "";
  if (mode == "sampling") return gnnd::cuda::RunSampling();
  if (mode == "gather") return gnnd::cuda::RunGather();
  if (mode == "gather-ce") return gnnd::cuda::RunGatherCopyEngines();
  if (mode == "tier") return gnnd::cuda::RunTier();
  if (mode == "typed") return gnnd::cuda::RunTyped();
  if (mode == "link") return gnnd::cuda::RunLink();
  if (mode == "edges") return gnnd::cuda::RunEdges();
  if (mode == "temporal") return gnnd::cuda::RunTemporal();
  if (mode == "labor") return gnnd::cuda::RunLabor();
  std::fprintf(
      stderr,
      "usage: gpu_bench sampling|gather|tier|typed|link|edges|temporal|labor [flags] (see the file's header)\n");
  return 2;
}
