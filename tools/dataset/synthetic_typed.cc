#include "tools/dataset/synthetic_typed.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/parallel.h"
#include "common/base/philox.h"
#include "common/base/status.h"
#include "tools/dataset/normals.h"
#include "tools/dataset/progress.h"
#include "tools/dataset/times.h"
#include "tools/dataset/typed_import.h"

namespace gnnd::dataset {
namespace {

// Philox streams of the typed generator (the homogeneous one uses others).
enum TypedStream : uint32_t {
  kTypedEdges = 101,
  kTypedLabels = 102,
  kTypedSplits = 103,
  kTypedFeatures = 104,
  kTypedCenters = 105,
  kTypedEdgeAttrs = 106
};

// With GenerateOptions::edge_attrs: each relation's edge_weight (float32 in (0, 1]) and edge_feat (4 x float32 in
// [-1, 1)), a function of the edge's relation and endpoints; with temporal, its time (int64: the later endpoint's,
// node v of any type at time v). Written a row per AddEdge.
class EdgeAttributeRows {
 public:
  static absl::StatusOr<EdgeAttributeRows> Create(TypedImportBuilder& builder, int relations, uint64_t seed,
                                                  bool values, bool times) {
    EdgeAttributeRows rows;
    rows.seed_ = seed;
    for (int r = 0; r < relations && times; ++r) {
      const EdgeAttributeInput t{"time", builder.ScratchPath(absl::StrCat("r", r, ".time.input.npy"))};
      GNND_ASSIGN_OR_RETURN(NpyWriter time, NpyWriter::CreateAppendable(t.path, DType::kInt64, {}));
      rows.time_.push_back(std::move(time));
      builder.AddEdgeAttribute(r, t);
    }
    for (int r = 0; r < relations && values; ++r) {
      const EdgeAttributeInput w{"edge_weight", builder.ScratchPath(absl::StrCat("r", r, ".edge_weight.input.npy"))};
      const EdgeAttributeInput f{"edge_feat", builder.ScratchPath(absl::StrCat("r", r, ".edge_feat.input.npy"))};
      GNND_ASSIGN_OR_RETURN(NpyWriter weight, NpyWriter::CreateAppendable(w.path, DType::kFloat32, {}));
      GNND_ASSIGN_OR_RETURN(NpyWriter feat, NpyWriter::CreateAppendable(f.path, DType::kFloat32, {kFeatDim}));
      rows.weight_.push_back(std::move(weight));
      rows.feat_.push_back(std::move(feat));
      builder.AddEdgeAttribute(r, w);
      builder.AddEdgeAttribute(r, f);
    }
    return rows;
  }
  absl::Status Add(int relation, int64_t from, int64_t to) {
    if (!time_.empty()) {
      const int64_t time = std::max(from, to);
      GNND_RETURN_IF_ERROR(time_[relation].Append(&time, 1));
    }
    if (weight_.empty()) return absl::OkStatus();
    const uint64_t pair = Mix64(static_cast<uint64_t>(from)) ^ static_cast<uint64_t>(to);
    const Philox4x32 w = RandomWords(seed_, kTypedEdgeAttrs, pair, static_cast<uint32_t>(relation));
    const float weight = 1.0f - UniformFloat(w.v[0]);
    float feat[kFeatDim];
    for (int j = 0; j < kFeatDim; ++j) feat[j] = UniformFloat(j < 3 ? w.v[j + 1] : w.v[0] * 2654435761u) * 2 - 1;
    GNND_RETURN_IF_ERROR(weight_[relation].Append(&weight, 1));
    return feat_[relation].Append(feat, 1);
  }
  absl::Status Finish() {
    for (NpyWriter& w : weight_) GNND_RETURN_IF_ERROR(w.Finish());
    for (NpyWriter& f : feat_) GNND_RETURN_IF_ERROR(f.Finish());
    for (NpyWriter& t : time_) GNND_RETURN_IF_ERROR(t.Finish());
    return absl::OkStatus();
  }

 private:
  static constexpr int64_t kFeatDim = 4;
  uint64_t seed_ = 0;
  std::vector<NpyWriter> weight_, feat_, time_;
};

// A node id in [0, n) skewed toward small ids (a power law: P(id < x) = (x / n)^(1/3)), then spread over the
// range by a fixed odd multiplier, so hubs are not all at the start.
int64_t SkewedNode(uint64_t random, int64_t n) {
  const double u = static_cast<double>(random >> 11) * (1.0 / 9007199254740992.0);
  const int64_t rank = std::min<int64_t>(static_cast<int64_t>(std::pow(u, 3.0) * static_cast<double>(n)), n - 1);
  return static_cast<int64_t>((static_cast<unsigned __int128>(rank) * 0x9e3779b97f4a7c15ull) %
                              static_cast<uint64_t>(n));
}

// Work shared among threads: edges and feature rows per chunk. A round (a chunk per thread) starts threads and
// ends with one writer, so rounds are large: 512 rows of 1024 values per thread, 4 MiB of doubles each.
constexpr int64_t kTypedEdgeChunk = 1 << 16;
constexpr int64_t kTypedRowChunk = 512;

int64_t Scaled(int64_t count, double scale, int64_t at_least) {
  return std::max<int64_t>(at_least, static_cast<int64_t>(std::llround(static_cast<double>(count) * scale)));
}

}  // namespace

bool IsTypedPreset(const std::string& preset) { return preset == "mag" || preset == "igbh"; }

absl::StatusOr<TypedSyntheticSpec> TypedPresetSpec(const std::string& preset, double scale) {
  if (!(scale > 0) || scale > 1)
    return absl::InvalidArgumentError(absl::StrCat("scale = ", scale, " (must be in (0, 1])"));
  TypedSyntheticSpec s;
  s.preset = preset;
  if (preset == "mag") {  // ogbn-mag: features on papers only, 349 venues as classes
    s.types = {{"author", 1134649},
               {"field_of_study", 59965},
               {"institution", 8740},
               {"paper", 736389, 128, 349, 1.0, 0.855, 0.088}};
    s.relations = {{"author", "affiliated_with", "institution", 1043998},
                   {"author", "writes", "paper", 7145660},
                   {"paper", "cites", "paper", 5416271},
                   {"paper", "has_topic", "field_of_study", 7505078}};
  } else if (preset == "igbh") {  // IGBH-Full: 1024-d features on papers and authors, 19 classes
    s.types = {{"paper", 269346174, 1024, 19, 0.843, 0.6, 0.2},
               {"author", 277220883, 1024},
               {"institute", 26918},
               {"fos", 712960}};
    s.relations = {{"paper", "cites", "paper", 3996442004},
                   {"paper", "written_by", "author", 716761549},
                   {"paper", "topic", "fos", 1050280600},
                   {"author", "affiliated_to", "institute", 48521486}};
  } else {
    return absl::InvalidArgumentError(absl::StrCat("preset = '", preset, "' (mag or igbh)"));
  }
  for (auto& t : s.types) t.num_nodes = Scaled(t.num_nodes, scale, std::max<int64_t>(t.num_classes, 8));
  for (auto& r : s.relations) r.num_edges = Scaled(r.num_edges, scale, 1);
  return s;
}

namespace {

// The link relation's drawn edges as the graph keeps them (each once, no self-loop within one type), split
// by a hash of the pair: 5 % valid, 5 % test, both held out of the graph, the rest train (in the graph). So
// no held-out pair is an edge of the relation, and every split is distinct pairs. `timed`: each pair's time is
// its edges' (the later endpoint's id).
absl::Status SplitLinkEdges(std::vector<std::pair<int64_t, int64_t>> pairs, bool same_type, uint64_t seed, int relation,
                            bool timed, TypedImportBuilder& builder, EdgeAttributeRows* attrs) {
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  for (const auto& [from, to] : pairs) {
    if (same_type && from == to) continue;
    const uint64_t bucket = Mix64(Mix64(static_cast<uint64_t>(from)) ^ static_cast<uint64_t>(to) ^ (seed << 20)) % 20;
    const int split = bucket == 0 ? 1 : bucket == 1 ? 2 : 0;
    GNND_RETURN_IF_ERROR(builder.AddSeedEdge(relation, split, from, to, "synthetic",
                                             timed ? std::optional<int64_t>(std::max(from, to)) : std::nullopt));
    if (split == 0) {
      GNND_RETURN_IF_ERROR(builder.AddEdge(relation, from, to, "synthetic"));
      if (attrs != nullptr) GNND_RETURN_IF_ERROR(attrs->Add(relation, from, to));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status GenerateTyped(const TypedSyntheticSpec& spec, const GenerateOptions& options, const std::string& out_dir) {
  TypedSource source;
  for (const auto& t : spec.types) source.node_types.emplace_back(t.name, t.num_nodes);
  for (const auto& r : spec.relations) source.relations.push_back({r.src, r.name, r.dst});
  ImportOptions import;
  import.feature_dtype = options.feature_dtype;
  import.dedup = true;
  import.threads = options.threads;
  import.add_reverse = options.add_reverse;
  GNND_ASSIGN_OR_RETURN(TypedImportBuilder builder, TypedImportBuilder::Create(out_dir, source, import));
  const uint64_t seed = options.seed;
  int link_relation = -1;
  for (size_t r = 0; r < spec.relations.size() && !options.link_relation.empty(); ++r) {
    const auto& rel = spec.relations[r];
    if (absl::StrCat(rel.src, "___", rel.name, "___", rel.dst) == options.link_relation)
      link_relation = static_cast<int>(r);
  }
  if (!options.link_relation.empty() && link_relation < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--link-relation = '", options.link_relation,
                                                   "' is not a relation of preset ", spec.preset,
                                                   " (keys are src___rel___dst)"));
  }
  auto class_of = [](int64_t node, int32_t classes) { return static_cast<int32_t>(Mix64(node) % classes); };
  std::optional<EdgeAttributeRows> attrs;
  if (options.edge_attrs || options.temporal) {
    GNND_ASSIGN_OR_RETURN(attrs, EdgeAttributeRows::Create(builder, static_cast<int>(spec.relations.size()),
                                                           options.seed, options.edge_attrs, options.temporal));
  }

  for (size_t r = 0; r < spec.relations.size(); ++r) {
    const auto& rel = spec.relations[r];
    const int src = builder.NodeTypeNamed(rel.src), dst = builder.NodeTypeNamed(rel.dst);
    const int64_t num_src = builder.num_nodes(src), num_dst = builder.num_nodes(dst);
    const int32_t classes = spec.types[src].num_classes;
    const bool homophilous = src == dst && classes > 0;
    Progress progress(absl::StrCat("edges ", rel.name), rel.num_edges, "edges");
    std::vector<std::pair<int64_t, int64_t>> link_pairs;  // the link relation's edges, split once all are drawn
    const auto edge = [&](int64_t e) {
      const Philox4x32 w = RandomWords(seed, kTypedEdges + static_cast<uint32_t>(r) * 16, static_cast<uint64_t>(e));
      const int64_t to = SkewedNode((uint64_t{w.v[0]} << 32) | w.v[1], num_dst);
      int64_t from = SkewedNode((uint64_t{w.v[2]} << 32) | w.v[3], num_src);
      if (homophilous && static_cast<double>(w.v[0] & 0xffff) / 65536.0 < spec.homophily) {
        // A node of the destination's class near `from` (class_of is a hash: probe a few ids).
        for (int64_t probe = 0; probe < 4 * classes && class_of(from, classes) != class_of(to, classes); ++probe) {
          from = (from + 1) % num_src;
        }
      }
      return std::make_pair(from, to);
    };
    // Each edge is its own Philox counter's: drawn a round of chunks at a time on every thread, added in order.
    std::vector<std::pair<int64_t, int64_t>> edges(
        std::min(kTypedEdgeChunk * std::max(1, options.threads), rel.num_edges));
    GNND_RETURN_IF_ERROR(ParallelRounds(
        rel.num_edges, kTypedEdgeChunk, options.threads,
        [&](int64_t first, int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) edges[i] = edge(first + i);
        },
        [&](int64_t first, int64_t count) -> absl::Status {
          if (static_cast<int>(r) == link_relation) {
            link_pairs.insert(link_pairs.end(), edges.begin(), edges.begin() + count);
          } else {
            for (int64_t i = 0; i < count; ++i) {
              GNND_RETURN_IF_ERROR(builder.AddEdge(static_cast<int>(r), edges[i].first, edges[i].second, "synthetic"));
              if (attrs) GNND_RETURN_IF_ERROR(attrs->Add(static_cast<int>(r), edges[i].first, edges[i].second));
            }
          }
          progress.Set(first + count);
          return absl::OkStatus();
        }));
    if (static_cast<int>(r) == link_relation) {
      GNND_RETURN_IF_ERROR(SplitLinkEdges(std::move(link_pairs), src == dst, seed, static_cast<int>(r),
                                          options.temporal, builder, attrs ? &*attrs : nullptr));
    }
    progress.Set(rel.num_edges);
  }
  for (size_t t = 0; t < spec.types.size(); ++t) {
    const auto& type = spec.types[t];
    const int index = builder.NodeTypeNamed(type.name);
    if (type.num_classes > 0) {
      for (int64_t v = 0; v < type.num_nodes; ++v) {
        const Philox4x32 w = RandomWords(seed, kTypedLabels, static_cast<uint64_t>(v), static_cast<uint32_t>(t));
        const double u = static_cast<double>(w.v[0]) / 4294967296.0, s = static_cast<double>(w.v[1]) / 4294967296.0;
        if (u >= type.labeled_fraction) continue;
        GNND_RETURN_IF_ERROR(builder.SetLabel(index, v, class_of(v, type.num_classes), "synthetic"));
        const int split = s < type.train_fraction ? 0 : s < type.train_fraction + type.valid_fraction ? 1 : 2;
        GNND_RETURN_IF_ERROR(builder.AddSplitId(index, split, v, "synthetic"));
      }
    }
    if (options.temporal) {
      const std::string path = builder.ScratchPath(absl::StrCat(type.name, ".node_time.input.npy"));
      GNND_RETURN_IF_ERROR(WriteIdTimes(path, type.num_nodes));
      builder.SetNodeTimes(type.name, path);
    }
    if (options.node_attrs) {
      GNND_ASSIGN_OR_RETURN(
          std::vector<NodeAttributeInput> attrs,
          WriteSyntheticNodeAttributes([&](absl::string_view file) { return builder.ScratchPath(file); }, type.name,
                                       type.num_nodes));
      for (NodeAttributeInput& a : attrs) builder.AddNodeAttribute(std::move(a));
    }
    if (type.feature_dim == 0) continue;
    const float* normals = NormalQuantiles();
    // Class centers (a type without classes has one), then each row its center plus noise.
    const int32_t centers_count = std::max(type.num_classes, 1);
    std::vector<double> centers(static_cast<size_t>(centers_count * type.feature_dim));
    const double separation = 2.5 / std::sqrt(2.0 * static_cast<double>(type.feature_dim));
    for (size_t i = 0; i < centers.size(); i += 2) {
      const Philox4x32 w = RandomWords(seed, kTypedCenters, i, static_cast<uint32_t>(t));
      float g[2];
      TwoNormals(normals, w.v[0], g);
      centers[i] = g[0] * separation;
      if (i + 1 < centers.size()) centers[i + 1] = g[1] * separation;
    }
    const auto make_row = [&](int64_t v, double* row) {
      const double* center =
          centers.data() + (type.num_classes > 0 ? class_of(v, type.num_classes) : 0) * type.feature_dim;
      for (int64_t j = 0; j < type.feature_dim; j += 8) {  // 8 values from one block of 4 words
        const Philox4x32 w = RandomWords(seed, kTypedFeatures + static_cast<uint32_t>(t) * 16, static_cast<uint64_t>(v),
                                         static_cast<uint32_t>(j / 8));
        float noise[8];
        for (int q = 0; q < 4; ++q) TwoNormals(normals, w.v[q], noise + 2 * q);
        for (int64_t k = j; k < std::min(j + 8, type.feature_dim); ++k) row[k] = center[k] + noise[k - j] * 0.25;
      }
    };
    // Rows are independent (their own Philox counters): made a round of chunks at a time on every thread,
    // encoded on every thread too, written in order.
    Progress progress(absl::StrCat("features ", type.name), type.num_nodes, "rows");
    std::vector<double> rows(static_cast<size_t>(
        std::min(kTypedRowChunk * std::max(1, options.threads), type.num_nodes) * type.feature_dim));
    GNND_RETURN_IF_ERROR(ParallelRounds(
        type.num_nodes, kTypedRowChunk, options.threads,
        [&](int64_t first, int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) make_row(first + i, rows.data() + i * type.feature_dim);
        },
        [&](int64_t first, int64_t count) -> absl::Status {
          GNND_RETURN_IF_ERROR(builder.AppendFeatureRows(
              index, std::span<const double>(rows.data(), static_cast<size_t>(count * type.feature_dim)), count,
              "synthetic", -1, options.threads));
          progress.Set(first + count);
          return absl::OkStatus();
        }));
  }
  if (attrs) GNND_RETURN_IF_ERROR(attrs->Finish());
  return builder.Finish(absl::StrCat("synthetic generator=2 preset=", spec.preset, " seed=", seed,
                                     options.edge_attrs ? " edge_attrs" : "", options.temporal ? " temporal" : "",
                                     options.node_attrs ? " node_attrs" : ""));
}

}  // namespace gnnd::dataset
