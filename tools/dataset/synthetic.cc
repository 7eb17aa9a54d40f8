#include "tools/dataset/synthetic.h"

#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/base/parallel.h"
#include "common/base/philox.h"
#include "common/base/status.h"
#include "common/dataset/npy.h"
#include "tools/dataset/import_builder.h"
#include "tools/dataset/normals.h"
#include "tools/dataset/progress.h"
#include "tools/dataset/times.h"

namespace gnnd::dataset {
namespace {

// Philox streams, one per purpose, so no two draws share a counter.
enum Stream : uint32_t { kEdges = 1, kClassCenters = 2, kFeatures = 3, kSplits = 4, kEdgeAttrs = 5 };
constexpr int64_t kEdgeFeatDim = 4;  // edge_feat: 16 bytes an edge

// R-MAT quadrant probabilities (Chakrabarti et al.; the Graph500 values).
constexpr double kA = 0.57, kB = 0.19, kC = 0.19;
// Share of edges whose endpoint ranks are uniform instead: a degree floor. Pure R-MAT at these edge
// factors leaves 30-50% of nodes without edges, unlike the OGB graphs.
constexpr float kUniformShare = 0.25f;

constexpr int64_t kEdgeChunk = 1 << 20;
constexpr int64_t kNodeChunk = 1 << 16;

struct Feistel {
  int half_bits;
  uint64_t mask, seed;
  Feistel(uint64_t n, uint64_t s) : seed(Mix64(s ^ 0x5ca1ab1eull)) {
    int bits = 2;
    while ((uint64_t{1} << bits) < n) ++bits;
    half_bits = (bits + 1) / 2;
    mask = (uint64_t{1} << half_bits) - 1;
  }
  uint64_t Round(uint64_t r, int i) const { return Mix64(seed + r * 0x9e3779b97f4a7c15ull + i) & mask; }
  uint64_t Forward(uint64_t x) const {
    uint64_t l = x >> half_bits, r = x & mask;
    for (int i = 0; i < 4; ++i) {
      const uint64_t next = l ^ Round(r, i);
      l = r;
      r = next;
    }
    return (l << half_bits) | r;
  }
  uint64_t Backward(uint64_t y) const {
    uint64_t l = y >> half_bits, r = y & mask;
    for (int i = 3; i >= 0; --i) {
      const uint64_t prev = r ^ Round(l, i);
      r = l;
      l = prev;
    }
    return (l << half_bits) | r;
  }
};

// Successive random words of one (stream, index): Philox blocks with sub-counters 0, 1, 2, ...
class Words {
 public:
  Words(uint64_t seed, uint32_t stream, uint64_t index) : seed_(seed), stream_(stream), index_(index) {}
  uint32_t Next() {
    if (pos_ == 4) {
      block_ = RandomWords(seed_, stream_, index_, sub_++);
      pos_ = 0;
    }
    return block_.v[pos_++];
  }
  uint64_t Next64() {
    const uint64_t high = Next();  // two statements: the order of the draws is fixed
    return high << 32 | Next();
  }

 private:
  uint64_t seed_;
  uint32_t stream_;
  uint64_t index_;
  uint32_t sub_ = 0;
  Philox4x32 block_{};
  int pos_ = 4;
};

uint32_t Below(uint32_t word, uint32_t n) { return static_cast<uint32_t>((uint64_t{word} * n) >> 32); }

class Generator {
 public:
  Generator(const SyntheticSpec& spec, uint64_t seed)
      : spec_(spec),
        seed_(seed),
        feistel_(spec.num_nodes, seed),
        ranks_((spec.num_nodes + spec.num_classes - 1) / spec.num_classes) {
    while ((int64_t{1} << levels_) < ranks_) ++levels_;
  }

  int64_t Scramble(uint64_t x) const {
    do x = feistel_.Forward(x);
    while (x >= static_cast<uint64_t>(spec_.num_nodes));
    return static_cast<int64_t>(x);
  }
  int64_t Unscramble(uint64_t y) const {
    do y = feistel_.Backward(y);
    while (y >= static_cast<uint64_t>(spec_.num_nodes));
    return static_cast<int64_t>(y);
  }
  int32_t ClassOf(int64_t node) const { return static_cast<int32_t>(Unscramble(node) % spec_.num_classes); }

  // Edge e: ranks by R-MAT, classes planted, endpoints as ids.
  std::pair<int64_t, int64_t> Edge(int64_t e) const {
    Words words(seed_, kEdges, static_cast<uint64_t>(e));
    const uint32_t classes = static_cast<uint32_t>(spec_.num_classes);
    for (;;) {
      int64_t src_rank = 0, dst_rank = 0;
      uint32_t word = 0;
      if (UniformFloat(words.Next()) < kUniformShare) {
        src_rank = static_cast<int64_t>(words.Next64() % static_cast<uint64_t>(ranks_));
        dst_rank = static_cast<int64_t>(words.Next64() % static_cast<uint64_t>(ranks_));
      } else {
        for (int level = 0; level < levels_; ++level) {
          if (level % 2 == 0) word = words.Next();
          const double u = ((level % 2 == 0 ? word : word >> 16) & 0xffff) / 65536.0;
          const int src_bit = u >= kA + kB;
          const int dst_bit = (u >= kA && u < kA + kB) || u >= kA + kB + kC;
          src_rank = (src_rank << 1) | src_bit;
          dst_rank = (dst_rank << 1) | dst_bit;
        }
      }
      const uint32_t dst_class = Below(words.Next(), classes);
      const uint32_t src_class =
          UniformFloat(words.Next()) < spec_.homophily ? dst_class : Below(words.Next(), classes);
      const int64_t src = src_rank * classes + src_class, dst = dst_rank * classes + dst_class;
      if (src_rank < ranks_ && dst_rank < ranks_ && src < spec_.num_nodes && dst < spec_.num_nodes) {
        return {Scramble(src), Scramble(dst)};
      }
    }
  }

  // Features of `count` rows from `first`, into out[count * dim].
  void Features(int64_t first, int64_t count, const std::vector<float>& centers, float* out) const {
    const int64_t dim = spec_.feature_dim;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t node = first + i;
      const float* center = centers.data() + static_cast<size_t>(ClassOf(node)) * dim;
      float* row = out + i * dim;
      for (int64_t j = 0; j < dim; j += 8) {  // 8 values from one block of 4 words
        const Philox4x32 w = RandomWords(seed_, kFeatures, node, static_cast<uint32_t>(j / 8));
        float noise[8];
        for (int q = 0; q < 4; ++q) TwoNormals(normals_, w.v[q], noise + 2 * q);
        for (int64_t k = j; k < std::min(j + 8, dim); ++k) row[k] = center[k] + noise[k - j];
      }
    }
  }

  std::vector<float> ClassCenters() const {
    const int64_t dim = spec_.feature_dim;
    const double scale = spec_.class_separation / std::sqrt(2.0 * dim);
    std::vector<float> centers(static_cast<size_t>(spec_.num_classes * dim));
    for (size_t i = 0; i < centers.size(); i += 2) {
      const Philox4x32 w = RandomWords(seed_, kClassCenters, i);
      float g[2];
      TwoNormals(normals_, w.v[0], g);
      centers[i] = static_cast<float>(g[0] * scale);
      if (i + 1 < centers.size()) centers[i + 1] = static_cast<float>(g[1] * scale);
    }
    return centers;
  }

  // -1 unlabeled, else 0 train, 1 valid, 2 test.
  int SplitOf(int64_t node) const {
    const Philox4x32 w = RandomWords(seed_, kSplits, static_cast<uint64_t>(node));
    if (UniformDouble(w.v[0], w.v[1]) >= spec_.labeled_fraction) return -1;
    const double u = UniformDouble(w.v[2], w.v[3]);
    return u < spec_.train_fraction ? 0 : u < spec_.train_fraction + spec_.valid_fraction ? 1 : 2;
  }

 private:
  SyntheticSpec spec_;
  uint64_t seed_;
  Feistel feistel_;
  int64_t ranks_;
  int levels_ = 0;
  const float* normals_ = NormalQuantiles();
};

}  // namespace

absl::StatusOr<std::vector<NodeAttributeInput>> WriteSyntheticNodeAttributes(
    const std::function<std::string(absl::string_view)>& scratch, const std::string& type, int64_t num_nodes) {
  const std::string prefix = type.empty() ? "" : type + ".";
  const std::string flag_path = scratch(prefix + "flag.input.npy"), rank_path = scratch(prefix + "rank.input.npy");
  GNND_ASSIGN_OR_RETURN(NpyWriter flag, NpyWriter::CreateMapped(flag_path, DType::kBool, {num_nodes}));
  GNND_ASSIGN_OR_RETURN(NpyWriter rank, NpyWriter::CreateMapped(rank_path, DType::kInt64, {num_nodes, 2}));
  auto* flags = static_cast<uint8_t*>(flag.mutable_data());
  auto* ranks = rank.mutable_as<int64_t>();
  for (int64_t v = 0; v < num_nodes; ++v) {
    flags[v] = v % 3 == 0;
    ranks[2 * v] = (v * 7919) % num_nodes;
    ranks[2 * v + 1] = -v;
  }
  GNND_RETURN_IF_ERROR(flag.Finish());
  GNND_RETURN_IF_ERROR(rank.Finish());
  return std::vector<NodeAttributeInput>{{type, {"flag", flag_path}}, {type, {"rank", rank_path}}};
}

uint64_t ScrambleId(uint64_t x, uint64_t n, uint64_t seed) {
  Feistel f(n, seed);
  do x = f.Forward(x);
  while (x >= n);
  return x;
}

uint64_t UnscrambleId(uint64_t y, uint64_t n, uint64_t seed) {
  Feistel f(n, seed);
  do y = f.Backward(y);
  while (y >= n);
  return y;
}

absl::StatusOr<SyntheticSpec> PresetSpec(const std::string& preset, double scale) {
  if (!(scale > 0) || scale > 1000)
    return absl::InvalidArgumentError(absl::StrCat("--scale ", scale, ": must be in (0, 1000]"));
  SyntheticSpec s;
  s.preset = preset;
  if (preset == "tiny") {
    s.num_nodes = 10000, s.num_edges = 100000, s.feature_dim = 32, s.num_classes = 8;
    s.train_fraction = 0.6, s.valid_fraction = 0.2;
  } else if (preset == "products") {  // ogbn-products: 2,449,029 nodes, 61,859,140 edges, 100-dim, 47 classes
    s.num_nodes = 2449029, s.num_edges = 61859140, s.feature_dim = 100, s.num_classes = 47;
    s.train_fraction = 0.0803, s.valid_fraction = 0.0161;
  } else if (preset == "papers") {  // ogbn-papers100M: 111 M nodes, 1.6 B edges, 128-dim, 172 classes, 1.4% labeled
    s.num_nodes = 111059956, s.num_edges = 1615685872, s.feature_dim = 128, s.num_classes = 172;
    s.labeled_fraction = 0.01393, s.train_fraction = 0.7804, s.valid_fraction = 0.081, s.homophily = 0.6;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--preset ", preset, ": unknown (tiny, products or papers)"));
  }
  s.num_nodes = std::max<int64_t>(s.num_classes, std::llround(s.num_nodes * scale));
  s.num_edges = std::max<int64_t>(1, std::llround(s.num_edges * scale));
  return s;
}

absl::Status Generate(const SyntheticSpec& spec, const GenerateOptions& options, const std::string& out_dir) {
  if (spec.num_nodes <= 0 || spec.num_edges < 0 || spec.feature_dim <= 0 || spec.num_classes <= 0) {
    return absl::InvalidArgumentError("synthetic spec: counts must be positive");
  }
  const Generator gen(spec, options.seed);
  ImportOptions import;
  import.dedup = true;
  import.feature_dtype = options.feature_dtype;
  import.threads = options.threads;
  GNND_ASSIGN_OR_RETURN(ImportBuilder builder, ImportBuilder::Create(out_dir, spec.num_nodes, import));

  {  // Edges (and their attributes): chunks generated in parallel, spooled in chunk order.
    Progress progress("edges", spec.num_edges, "edges");
    const int64_t round = std::min(kEdgeChunk * std::max(1, options.threads), spec.num_edges);
    std::vector<std::pair<int64_t, int64_t>> edges(round);
    std::optional<NpyWriter> weights, feats;
    std::vector<float> weight(options.edge_attrs ? round : 0), feat(options.edge_attrs ? round * kEdgeFeatDim : 0);
    if (options.edge_attrs) {
      const EdgeAttributeInput w{"edge_weight", builder.ScratchPath("edge_weight.input.npy")};
      const EdgeAttributeInput f{"edge_feat", builder.ScratchPath("edge_feat.input.npy")};
      GNND_ASSIGN_OR_RETURN(weights, NpyWriter::CreateAppendable(w.path, DType::kFloat32, {}));
      GNND_ASSIGN_OR_RETURN(feats, NpyWriter::CreateAppendable(f.path, DType::kFloat32, {kEdgeFeatDim}));
      builder.AddEdgeAttribute(w);
      builder.AddEdgeAttribute(f);
    }
    std::optional<NpyWriter> times;  // with temporal: each edge's time, its later endpoint's
    std::vector<int64_t> time(options.temporal ? round : 0);
    if (options.temporal) {
      const EdgeAttributeInput t{"time", builder.ScratchPath("time.input.npy")};
      GNND_ASSIGN_OR_RETURN(times, NpyWriter::CreateAppendable(t.path, DType::kInt64, {}));
      builder.AddEdgeAttribute(t);
    }
    GNND_RETURN_IF_ERROR(ParallelRounds(
        spec.num_edges, kEdgeChunk, options.threads,
        [&](int64_t first, int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            edges[i] = gen.Edge(first + i);
            if (options.temporal) time[i] = std::max(edges[i].first, edges[i].second);
            if (!options.edge_attrs) continue;
            const Philox4x32 w = RandomWords(options.seed, kEdgeAttrs, static_cast<uint64_t>(first + i));
            weight[i] = 1.0f - UniformFloat(w.v[0]);  // (0, 1]: every edge may be drawn
            for (int j = 0; j < kEdgeFeatDim; ++j) {
              const uint32_t word = j < 3 ? w.v[j + 1] : w.v[0] * 2654435761u;
              feat[i * kEdgeFeatDim + j] = UniformFloat(word) * 2 - 1;
            }
          }
        },
        [&](int64_t first, int64_t count) -> absl::Status {
          for (int64_t i = 0; i < count; ++i) {
            GNND_RETURN_IF_ERROR(builder.edges().Add(edges[i].first, edges[i].second, "synthetic edge"));
          }
          if (options.edge_attrs) {
            GNND_RETURN_IF_ERROR(weights->Append(weight.data(), count));
            GNND_RETURN_IF_ERROR(feats->Append(feat.data(), count));
          }
          if (times.has_value()) GNND_RETURN_IF_ERROR(times->Append(time.data(), count));
          progress.Set(first + count);
          return absl::OkStatus();
        }));
    if (options.edge_attrs) {
      GNND_RETURN_IF_ERROR(weights->Finish());
      GNND_RETURN_IF_ERROR(feats->Finish());
    }
    if (times.has_value()) GNND_RETURN_IF_ERROR(times->Finish());
  }
  if (options.temporal) {
    const std::string path = builder.ScratchPath("node_time.input.npy");
    GNND_RETURN_IF_ERROR(WriteIdTimes(path, spec.num_nodes));
    builder.SetNodeTimes(path);
  }
  if (options.node_attrs) {
    GNND_ASSIGN_OR_RETURN(std::vector<NodeAttributeInput> attrs,
                          WriteSyntheticNodeAttributes(
                              [&](absl::string_view file) { return builder.ScratchPath(file); }, "", spec.num_nodes));
    for (NodeAttributeInput& a : attrs) builder.AddNodeAttribute(std::move(a));
  }
  {  // Features, labels and splits, in blocks of rows.
    Progress progress("nodes", spec.num_nodes, "nodes");
    const std::vector<float> centers = gen.ClassCenters();
    const int64_t round = std::min(kNodeChunk * std::max(1, options.threads), spec.num_nodes);
    std::vector<float> rows(static_cast<size_t>(round * spec.feature_dim));
    std::vector<int> splits(round);
    std::vector<int32_t> classes(round);
    GNND_RETURN_IF_ERROR(ParallelRounds(
        spec.num_nodes, kNodeChunk, options.threads,
        [&](int64_t first, int64_t begin, int64_t end) {
          gen.Features(first + begin, end - begin, centers, rows.data() + begin * spec.feature_dim);
          for (int64_t i = begin; i < end; ++i) {
            splits[i] = gen.SplitOf(first + i);
            classes[i] = gen.ClassOf(first + i);
          }
        },
        [&](int64_t first, int64_t count) -> absl::Status {
          GNND_RETURN_IF_ERROR(builder.AppendFeatureRows(rows.data(), count, spec.feature_dim));
          for (int64_t i = 0; i < count; ++i) {
            if (splits[i] < 0) continue;
            GNND_RETURN_IF_ERROR(builder.SetLabel(first + i, classes[i], "synthetic label"));
            GNND_RETURN_IF_ERROR(builder.AddSplitId(gnnd::kSplits[splits[i]], first + i, "synthetic split"));
          }
          progress.Set(first + count);
          return absl::OkStatus();
        }));
  }
  return builder.Finish(
      absl::StrFormat("synthetic generator=2 preset=%s nodes=%d edges_drawn=%d seed=%d%s%s%s", spec.preset,
                      spec.num_nodes, spec.num_edges, options.seed, options.edge_attrs ? " edge_attrs" : "",
                      options.temporal ? " temporal" : "", options.node_attrs ? " node_attrs" : ""),
      spec.num_classes);
}

}  // namespace gnnd::dataset
