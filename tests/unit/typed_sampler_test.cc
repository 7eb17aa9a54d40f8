// The typed sampling rule on the CPU: on a one-type, one-relation dataset it is the homogeneous sampler;
// on a random typed graph every batch keeps every rule (edges of their relation, exactly min(fanout,
// degree) in-edges per expanded node and relation, unique nodes per type, seeds first, hop prefixes sorted,
// features and labels of the right rows); the draws are uniform per relation and keyed by the relation.
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "common/batch/batch.h"
#include "common/batch/seeds.h"
#include "common/dataset/row_cache.h"
#include "common/wire/batch_proto.h"
#include "gtest/gtest.h"
#include "kernels/cpu/sampler.h"
#include "server/sessions/producer.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"
#include "tools/dataset/synthetic_typed.h"

namespace gnnd {
namespace {

using testing::ScratchDir;
using testing::TypedBuffer;

TEST(TypedSampler, OneTypeAndOneRelationIsTheHomogeneousBatch) {
  ScratchDir dir;
  auto preset = dataset::PresetSpec("tiny", 0.3);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(dataset::Generate(*preset, {.seed = 5, .threads = 2}, dir / "g").ok());
  auto d = DatasetDir::Open(dir / "g");
  ASSERT_TRUE(d.ok()) << d.status();
  const GraphData graph{d->manifest(), d->arrays(), d->schema()};
  const auto* train = static_cast<const int64_t*>(graph.arrays[ArrayId::kTrain]);
  const std::span<const int64_t> seeds(train, 64);
  for (const std::vector<int32_t>& fanouts : {std::vector<int32_t>{5, 3}, {-1, 2, 2}}) {
    const SamplingSpec spec = SamplingSpec::OneRelation(64, fanouts);
    auto capacity =
        ComputeHomogeneousCapacity(spec, graph.num_nodes(), graph.manifest.num_edges(), graph.MaxInDegree());
    ASSERT_TRUE(capacity.ok());
    HomogeneousBuffer homogeneous(
        HomogeneousLayout::Make(*capacity, static_cast<int>(fanouts.size()), FeatureRowBytes(d->manifest())));
    CpuSampler(graph, spec, 9).Sample(2, 7, seeds, homogeneous.view());
    TypedBuffer typed(graph, {.batch_size = 64, .seed_type = 0, .fanouts = {fanouts}});
    CpuSampler(graph, {.batch_size = 64, .seed_type = 0, .fanouts = {fanouts}}, 9).Sample(2, 7, seeds, typed.view);
    const HomogeneousView& h = homogeneous.view();
    const BatchView::Type& t = typed.view.types[0];
    const BatchView::Relation& r = typed.view.relations[0];
    const int hops = static_cast<int>(fanouts.size());
    ASSERT_EQ(std::vector<int32_t>(t.num_nodes_per_hop, t.num_nodes_per_hop + hops + 1),
              std::vector<int32_t>(h.num_nodes_per_hop, h.num_nodes_per_hop + hops + 1));
    ASSERT_EQ(std::vector<int32_t>(r.num_edges_per_hop, r.num_edges_per_hop + hops),
              std::vector<int32_t>(h.num_edges_per_hop, h.num_edges_per_hop + hops));
    const int64_t n = h.num_nodes(), e = h.num_edges();
    EXPECT_EQ(std::vector<int64_t>(t.node_ids, t.node_ids + n), std::vector<int64_t>(h.node_ids, h.node_ids + n));
    EXPECT_EQ(std::vector<int32_t>(r.edge_src, r.edge_src + e), std::vector<int32_t>(h.edge_src, h.edge_src + e));
    EXPECT_EQ(std::vector<int32_t>(r.edge_dst, r.edge_dst + e), std::vector<int32_t>(h.edge_dst, h.edge_dst + e));
    const size_t row = FeatureRowBytes(d->manifest());
    EXPECT_EQ(std::memcmp(t.features, h.features, n * row), 0);
    EXPECT_EQ(std::vector<int64_t>(t.labels, t.labels + 64), std::vector<int64_t>(h.labels, h.labels + 64));
  }
}

// A random typed graph held in memory: papers (features, labels), authors, fields; relations
// author-writes-paper, paper-cites-paper, paper-cites2-paper (the same edges as cites), paper-has-field,
// field-of-author (into authors).
class RandomTypedGraph {
 public:
  RandomTypedGraph() {
    manifest_.set_format_version(2);
    auto type = [&](const char* name, int64_t n, int64_t dim, int classes) {
      v1::NodeType* t = manifest_.add_node_types();
      t->set_name(name), t->set_num_nodes(n), t->set_feature_dim(dim), t->set_num_classes(classes);
      if (dim > 0) t->set_feature_dtype(v1::FEATURE_DTYPE_FLOAT32);
    };
    type("paper", 400, 3, 4);
    type("author", 250, 0, 0);
    type("field", 30, 2, 0);
    std::mt19937_64 rng(11);
    AddRelation("author", "writes", "paper", 250, 400, 0, 12, rng);
    AddRelation("paper", "cites", "paper", 400, 400, 0, 20, rng);
    relations_.push_back(relations_.back());  // cites2: the same CSC
    manifest_.add_relations()->CopyFrom(manifest_.relations(1));
    manifest_.mutable_relations(2)->set_name("cites2");
    AddRelation("paper", "has", "field", 400, 30, 5, 40, rng);
    AddRelation("field", "of", "author", 30, 250, 0, 3, rng);
    paper_features_.resize(400 * 3);
    for (size_t i = 0; i < paper_features_.size(); ++i) paper_features_[i] = static_cast<float>(i) * 0.5f;
    field_features_.resize(30 * 2);
    for (size_t i = 0; i < field_features_.size(); ++i) field_features_[i] = -static_cast<float>(i);
    labels_.resize(400);
    for (int64_t v = 0; v < 400; ++v) labels_[v] = v % 7 == 0 ? -1 : v % 4;
    for (int64_t v = 0; v < 400; ++v) {
      if (labels_[v] >= 0) train_.push_back(v);
    }
    v1::NodeType* paper = manifest_.mutable_node_types(0);
    paper->set_num_train(static_cast<int64_t>(train_.size()));
    auto schema = DatasetSchema::FromManifest(manifest_);
    EXPECT_TRUE(schema.ok()) << schema.status();
    graph_.manifest = manifest_;
    graph_.schema = *schema;
    graph_.arrays = DatasetArrays(graph_.schema);
    for (size_t r = 0; r < relations_.size(); ++r) {
      graph_.arrays.data[graph_.schema.relations[r].indptr] = relations_[r].indptr.data();
      graph_.arrays.data[graph_.schema.relations[r].indices] = relations_[r].indices.data();
    }
    const NodeTypeSchema& p = graph_.schema.node_types[0];
    graph_.arrays.data[p.features] = paper_features_.data();
    graph_.arrays.data[p.labels] = labels_.data();
    graph_.arrays.data[p.splits[0]] = train_.data();
    graph_.arrays.data[p.splits[1]] = train_.data();
    graph_.arrays.data[p.splits[2]] = train_.data();
    graph_.arrays.data[graph_.schema.node_types[2].features] = field_features_.data();
  }

  const GraphData& graph() const { return graph_; }
  const std::vector<int64_t>& train() const { return train_; }
  std::span<const int32_t> InNeighbors(int relation, int64_t v) const {
    const Csc& c = relations_[relation];
    return {c.indices.data() + c.indptr[v], static_cast<size_t>(c.indptr[v + 1] - c.indptr[v])};
  }

 private:
  struct Csc {
    std::vector<int64_t> indptr;
    std::vector<int32_t> indices;
  };
  void AddRelation(const char* src, const char* name, const char* dst, int64_t num_src, int64_t num_dst, int min_degree,
                   int max_degree, std::mt19937_64& rng) {
    Csc c;
    c.indptr.push_back(0);
    for (int64_t v = 0; v < num_dst; ++v) {
      const int degree = std::uniform_int_distribution<int>(min_degree, max_degree)(rng);
      std::set<int32_t> sources;
      while (static_cast<int>(sources.size()) < std::min<int64_t>(degree, num_src)) {
        sources.insert(static_cast<int32_t>(std::uniform_int_distribution<int64_t>(0, num_src - 1)(rng)));
      }
      c.indices.insert(c.indices.end(), sources.begin(), sources.end());
      c.indptr.push_back(static_cast<int64_t>(c.indices.size()));
    }
    v1::Relation* r = manifest_.add_relations();
    r->set_src_type(src), r->set_name(name), r->set_dst_type(dst);
    r->set_num_edges(static_cast<int64_t>(c.indices.size())), r->set_index_dtype(v1::INDEX_DTYPE_INT32);
    relations_.push_back(std::move(c));
  }

  v1::DatasetManifest manifest_;
  std::vector<Csc> relations_;
  std::vector<float> paper_features_, field_features_;
  std::vector<int64_t> labels_, train_;
  GraphData graph_;
};

TEST(TypedSampler, EveryBatchKeepsEveryRule) {
  const RandomTypedGraph g;
  const GraphData& graph = g.graph();
  const DatasetSchema& schema = graph.schema;
  const SamplingSpec spec{.batch_size = 32, .seed_type = 0, .fanouts = {{4, 3}, {3, -1}, {0, 2}, {5, 1}, {2, 2}}};
  ASSERT_TRUE(CheckSamplingSpec(spec, schema).ok());
  TypedBuffer buffer(graph, spec);
  CpuSampler sampler(graph, spec, 3);
  for (uint64_t batch = 0; batch < 20; ++batch) {
    const std::span<const int64_t> seeds(g.train().data() + batch * 10, 32);
    sampler.Sample(1, batch, seeds, buffer.view);
    const BatchView& b = buffer.view;
    // Nodes: unique per type, seeds first, each later hop's new nodes sorted by id.
    std::vector<std::vector<int64_t>> hop_start(schema.node_types.size());
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      const int64_t n = b.num_nodes(static_cast<int>(t));
      ASSERT_LE(n, buffer.layout.capacity.max_nodes[t]);
      const std::set<int64_t> unique(b.types[t].node_ids, b.types[t].node_ids + n);
      ASSERT_EQ(static_cast<int64_t>(unique.size()), n) << schema.node_types[t].name;
      int64_t at = 0;
      for (int h = 0; h <= 2; ++h) {
        hop_start[t].push_back(at);
        const int64_t count = b.types[t].num_nodes_per_hop[h];
        if (h > 0) {
          ASSERT_TRUE(std::is_sorted(b.types[t].node_ids + at, b.types[t].node_ids + at + count));
        }
        at += count;
      }
      hop_start[t].push_back(at);
    }
    for (int i = 0; i < 32; ++i) ASSERT_EQ(b.types[0].node_ids[i], seeds[i]);
    ASSERT_EQ(b.types[1].num_nodes_per_hop[0], 0);
    // Edges: of their relation, and exactly min(fanout, degree) per expanded node, relation and hop.
    for (size_t r = 0; r < schema.relations.size(); ++r) {
      const RelationSchema& rel = schema.relations[r];
      const BatchView::Relation& e = b.relations[r];
      ASSERT_LE(b.num_edges(static_cast<int>(r)), buffer.layout.capacity.max_edges[r]);
      int64_t at = 0;
      for (int h = 0; h < 2; ++h) {
        std::map<int32_t, int64_t> per_dst;
        for (int64_t i = at; i < at + e.num_edges_per_hop[h]; ++i) {
          const int64_t src = b.types[rel.src_type].node_ids[e.edge_src[i]];
          const int64_t dst = b.types[rel.dst_type].node_ids[e.edge_dst[i]];
          const std::span<const int32_t> in = g.InNeighbors(static_cast<int>(r), dst);
          ASSERT_TRUE(std::binary_search(in.begin(), in.end(), src)) << rel.key() << ": not an edge";
          ASSERT_GE(e.edge_dst[i], hop_start[rel.dst_type][h]) << "destination outside the hop's frontier";
          ASSERT_LT(e.edge_dst[i], hop_start[rel.dst_type][h + 1]);
          ASSERT_LT(e.edge_src[i], hop_start[rel.src_type][h + 2]) << "source not yet in the batch";
          ++per_dst[e.edge_dst[i]];
        }
        for (int64_t v = hop_start[rel.dst_type][h]; v < hop_start[rel.dst_type][h + 1]; ++v) {
          const int64_t degree =
              static_cast<int64_t>(g.InNeighbors(static_cast<int>(r), b.types[rel.dst_type].node_ids[v]).size());
          const int32_t fanout = spec.fanouts[r][h];
          const int64_t want = fanout < 0 ? degree : std::min<int64_t>(fanout, degree);
          ASSERT_EQ(per_dst[static_cast<int32_t>(v)], want) << rel.key() << " hop " << h;
        }
        at += e.num_edges_per_hop[h];
      }
    }
    // Features of their rows; labels of the seeds.
    for (int64_t i = 0; i < b.num_nodes(0); ++i) {
      const float* row = static_cast<const float*>(b.types[0].features) + i * 3;
      ASSERT_EQ(row[1], static_cast<float>(b.types[0].node_ids[i] * 3 + 1) * 0.5f);
    }
    for (int64_t i = 0; i < b.num_nodes(2); ++i) {
      ASSERT_EQ(static_cast<const float*>(b.types[2].features)[i * 2], -static_cast<float>(b.types[2].node_ids[i] * 2));
    }
    EXPECT_EQ(b.types[1].features, nullptr);
    for (int i = 0; i < 32; ++i) ASSERT_EQ(b.types[0].labels[i], b.types[0].node_ids[i] % 4);
  }
}

TEST(TypedSampler, DrawsAreUniformPerRelationAndKeyedByIt) {
  const RandomTypedGraph g;
  const GraphData& graph = g.graph();
  // A seed paper with at least 10 citing papers; fanout 3 through cites and cites2 (the same CSC).
  int64_t seed = -1;
  for (int64_t v : g.train()) {
    if (g.InNeighbors(1, v).size() >= 10) {
      seed = v;
      break;
    }
  }
  ASSERT_GE(seed, 0);
  const int64_t degree = static_cast<int64_t>(g.InNeighbors(1, seed).size());
  const SamplingSpec spec{.batch_size = 1, .seed_type = 0, .fanouts = {{0}, {3}, {3}, {0}, {0}}};
  TypedBuffer buffer(graph, spec);
  CpuSampler sampler(graph, spec, 21);
  constexpr int kBatches = 4000;
  std::map<int32_t, int> picked;
  int differ = 0;
  const std::span<const int64_t> seeds(&seed, 1);
  for (int batch = 0; batch < kBatches; ++batch) {
    sampler.Sample(0, batch, seeds, buffer.view);
    const BatchView& b = buffer.view;
    ASSERT_EQ(b.relations[1].num_edges_per_hop[0], 3);
    std::set<int64_t> cites, cites2;
    for (int i = 0; i < 3; ++i) {
      cites.insert(b.types[0].node_ids[b.relations[1].edge_src[i]]);
      cites2.insert(b.types[0].node_ids[b.relations[2].edge_src[i]]);
    }
    for (int64_t u : cites) ++picked[static_cast<int32_t>(u)];
    differ += cites != cites2;
  }
  // Chi-square over the in-neighbors of cites: expected kBatches * 3 / degree picks each.
  const double expected = kBatches * 3.0 / degree;
  double chi = 0;
  for (int32_t u : g.InNeighbors(1, seed)) chi += (picked[u] - expected) * (picked[u] - expected) / expected;
  const double df = static_cast<double>(degree - 1);
  EXPECT_LT(chi, df + 5 * std::sqrt(2 * df)) << "degree " << degree;  // mean df, sd sqrt(2 df): 5 sd above
  EXPECT_GT(chi, 0.0);
  EXPECT_GT(differ, kBatches / 2) << "cites and cites2 draw alike: the relation is not in the counter";
}

TEST(TypedSampler, TheBatchSchemaNamesEveryArrayAndCountAndFitsTheSlot) {
  const RandomTypedGraph g;
  const SamplingSpec spec{.batch_size = 16, .seed_type = 0, .fanouts = {{2}, {2}, {1}, {1}, {1}}};
  TypedBuffer buffer(g.graph(), spec);
  const BatchSchema schema = BatchSchemaOf(buffer.layout, g.graph().schema);
  absl::StatusOr<BatchSchema> checked = BatchSchemaFromProto(BatchSchemaToProto(schema));
  ASSERT_TRUE(checked.ok()) << checked.status();
  std::vector<std::string> names;
  for (const BatchArraySchema& a : schema.arrays) names.push_back(a.name);
  EXPECT_EQ(names, (std::vector<std::string>{"paper.node_ids",
                                             "paper.num_nodes_per_hop",
                                             "paper.features",
                                             "paper.labels",
                                             "author.node_ids",
                                             "author.num_nodes_per_hop",
                                             "field.node_ids",
                                             "field.num_nodes_per_hop",
                                             "field.features",
                                             "author___writes___paper.edge_src",
                                             "author___writes___paper.edge_dst",
                                             "author___writes___paper.num_edges_per_hop",
                                             "paper___cites___paper.edge_src",
                                             "paper___cites___paper.edge_dst",
                                             "paper___cites___paper.num_edges_per_hop",
                                             "paper___cites2___paper.edge_src",
                                             "paper___cites2___paper.edge_dst",
                                             "paper___cites2___paper.num_edges_per_hop",
                                             "paper___has___field.edge_src",
                                             "paper___has___field.edge_dst",
                                             "paper___has___field.num_edges_per_hop",
                                             "field___of___author.edge_src",
                                             "field___of___author.edge_dst",
                                             "field___of___author.num_edges_per_hop"}));
  EXPECT_EQ(schema.arrays[schema.ArrayNamed("paper.labels")].count, schema.CountNamed("paper.seeds"));
  EXPECT_EQ(schema.arrays[schema.ArrayNamed("field.features")].row_shape, std::vector<int64_t>{2});
  CpuSampler(g.graph(), spec, 1).Sample(0, 0, std::span<const int64_t>(g.train().data(), 16), buffer.view);
  const std::vector<int64_t> counts = BatchCountsOf(buffer.view, buffer.layout);
  EXPECT_TRUE(CheckBatchCounts(schema, counts).ok());
  EXPECT_EQ(counts[schema.CountNamed("paper.seeds")], 16);
  EXPECT_EQ(counts[schema.CountNamed("paper___cites___paper.edges")], buffer.view.num_edges(1));
}

// Node attributes: every type's, under TYPE.NAME, the rows of its node_ids (gnnctl generate's: flag = every
// third node, rank = (v * 7919 mod n, -v)), in the dtypes they were stored in.
TEST(TypedSampler, NodeAttributesAreTheRowsOfTheBatchsNodes) {
  ScratchDir dir;
  auto preset = dataset::TypedPresetSpec("mag", 0.002);
  ASSERT_TRUE(preset.ok()) << preset.status();
  ASSERT_TRUE(dataset::GenerateTyped(*preset, {.seed = 2, .threads = 2, .node_attrs = true}, dir / "mag").ok());
  auto d = DatasetDir::Open(dir / "mag");
  ASSERT_TRUE(d.ok()) << d.status();
  const GraphData graph{d->manifest(), d->arrays(), d->schema()};
  const DatasetSchema& schema = graph.schema;
  const int papers = schema.NodeTypeNamed("paper");
  const SamplingSpec spec{.batch_size = 32,
                          .seed_type = papers,
                          .fanouts = std::vector<std::vector<int32_t>>(schema.relations.size(), {3, 2})};
  TypedBuffer buffer(graph, spec);
  const BatchSchema batch = BatchSchemaOf(buffer.layout, schema);
  const auto* train = static_cast<const int64_t*>(graph.arrays.data[schema.node_types[papers].splits[0]]);
  CpuSampler(graph, spec, 4).Sample(1, 2, std::span<const int64_t>(train, 32), buffer.view);
  const std::vector<int64_t> counts = BatchCountsOf(buffer.view, buffer.layout);
  int checked = 0;
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const NodeTypeSchema& type = schema.node_types[t];
    const int flag = batch.ArrayNamed(type.name + ".flag"), rank = batch.ArrayNamed(type.name + ".rank");
    ASSERT_GE(flag, 0) << type.name;
    ASSERT_GE(rank, 0) << type.name;
    EXPECT_EQ(batch.arrays[flag].dtype, DType::kBool);
    EXPECT_EQ(batch.arrays[rank].row_shape, std::vector<int64_t>{2});
    const int64_t n = counts[batch.arrays[flag].count];
    EXPECT_EQ(n, buffer.view.num_nodes(static_cast<int>(t)));
    const auto* flags = reinterpret_cast<const uint8_t*>(buffer.bytes.data() + batch.arrays[flag].offset);
    const auto* ranks = reinterpret_cast<const int64_t*>(buffer.bytes.data() + batch.arrays[rank].offset);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = buffer.view.types[t].node_ids[i];
      ASSERT_EQ(flags[i], v % 3 == 0 ? 1 : 0) << type.name << " node " << v;
      ASSERT_EQ(ranks[2 * i], (v * 7919) % type.num_nodes) << type.name << " node " << v;
      ASSERT_EQ(ranks[2 * i + 1], -v) << type.name << " node " << v;
      ++checked;
    }
  }
  EXPECT_GT(checked, 64);
}

TEST(TypedSampler, SpecErrorsNameTheRelation) {
  const RandomTypedGraph g;
  const DatasetSchema& schema = g.graph().schema;
  SamplingSpec spec{.batch_size = 8, .seed_type = 0, .fanouts = {{1}, {1}, {1}, {1}, {-2}}};
  EXPECT_EQ(CheckSamplingSpec(spec, schema).message(),
            "fanouts[field___of___author][0] = -2 (must be -1 for all neighbors, 0 for none, or more)");
  spec.fanouts[4] = {1, 1};
  EXPECT_EQ(CheckSamplingSpec(spec, schema).message(), "fanouts[field___of___author] has 2 hops, the others 1");
  spec.fanouts.pop_back();
  EXPECT_EQ(CheckSamplingSpec(spec, schema).message(), "fanouts for 4 relations, the dataset has 5");
}

}  // namespace
}  // namespace gnnd

namespace gnnd {
namespace {

// Every array of a typed batch as filled (not the slot's capacity), for comparing batches.
std::vector<std::byte> TypedContents(const BatchView& b, const DatasetSchema& schema) {
  std::vector<std::byte> out;
  auto add = [&](const void* p, size_t n) {
    const auto* bytes = static_cast<const std::byte*>(p);
    out.insert(out.end(), bytes, bytes + n);
  };
  for (size_t t = 0; t < b.types.size(); ++t) {
    const int64_t n = b.num_nodes(static_cast<int>(t));
    add(b.types[t].num_nodes_per_hop, 4 * (b.num_hops + 1));
    add(b.types[t].node_ids, 8 * n);
    if (b.types[t].features != nullptr) add(b.types[t].features, schema.node_types[t].feature_row_bytes() * n);
    if (b.types[t].labels != nullptr) add(b.types[t].labels, 8 * b.types[t].num_nodes_per_hop[0]);
  }
  for (size_t r = 0; r < b.relations.size(); ++r) {
    const int64_t e = b.num_edges(static_cast<int>(r));
    add(b.relations[r].num_edges_per_hop, 4 * b.num_hops);
    add(b.relations[r].edge_src, 4 * e);
    add(b.relations[r].edge_dst, 4 * e);
  }
  return out;
}

// An epoch of typed batches through `stages` (two stages) or `fill` (one).
std::vector<std::vector<std::byte>> TypedEpoch(const GraphData& graph, const SamplingSpec& spec,
                                               std::span<const int64_t> train, int threads, int window,
                                               const std::vector<RowCache*>* caches) {
  auto capacity = ComputeBatchCapacity(spec, graph.schema, graph.MaxInDegrees());
  EXPECT_TRUE(capacity.ok()) << capacity.status();
  const BatchLayout layout = BatchLayout::Make(*capacity, spec, graph.schema);
  constexpr int kSlots = 3;
  std::vector<std::vector<std::byte>> buffers(kSlots, std::vector<std::byte>(layout.total_bytes));
  std::vector<BatchView> slots;
  for (auto& buffer : buffers) slots.push_back(BatchView::At(buffer.data(), layout));
  const std::unique_ptr<ThreadPool> workers = *ThreadPool::Create(threads, "the test's producers");
  EpochSeeds seeds(train, {.seed = 6, .batch_size = spec.batch_size}, 1);
  std::unique_ptr<CpuProducer> producer =
      caches != nullptr
          ? std::make_unique<CpuProducer>(*CpuProducer::OnStorage({&graph, spec, std::nullopt, 6, layout},
                                                                  {slots, {}, nullptr},
                                                                  std::vector<RowTier*>(caches->begin(), caches->end()),
                                                                  window, threads),
                                          kSlots, 1, std::move(seeds), *workers, threads)
          : std::make_unique<CpuProducer>(
                *CpuProducer::InMemory({&graph, spec, std::nullopt, 6, layout}, {slots, {}, nullptr}, threads), kSlots,
                1, std::move(seeds), *workers, threads);
  std::vector<std::vector<std::byte>> out;
  while (auto ready = producer->Next()) {
    out.push_back(TypedContents(slots[ready->slot], graph.schema));
    producer->Release(ready->slot);
  }
  EXPECT_TRUE(producer->status().ok()) << producer->status();
  return out;
}

TEST(TypedSampler, TwoStagesThroughACachePerTableGiveTheSameBatches) {
  ScratchDir dir;
  auto preset = dataset::TypedPresetSpec("igbh", 0.00002);  // features on papers and authors
  ASSERT_TRUE(preset.ok()) << preset.status();
  ASSERT_TRUE(dataset::GenerateTyped(*preset, {.seed = 4, .threads = 2, .node_attrs = true}, dir / "igbh").ok());
  auto d = DatasetDir::Open(dir / "igbh");
  ASSERT_TRUE(d.ok()) << d.status();
  const GraphData graph{d->manifest(), d->arrays(), d->schema()};
  const DatasetSchema& schema = graph.schema;
  int seed_type = 0;
  while (schema.node_types[seed_type].splits[0] < 0) ++seed_type;
  const NodeTypeSchema& seeds_of = schema.node_types[seed_type];
  const std::span<const int64_t> train(static_cast<const int64_t*>(graph.arrays.data[seeds_of.splits[0]]),
                                       std::min<int64_t>(seeds_of.split_sizes[0], 640));  // 20 batches
  const SamplingSpec spec{.batch_size = 32,
                          .seed_type = seed_type,
                          .fanouts = std::vector<std::vector<int32_t>>(schema.relations.size(), {4, 3})};
  const auto expected = TypedEpoch(graph, spec, train, 2, 0, nullptr);
  ASSERT_GT(expected.size(), 3u);

  GraphData on_storage = graph;  // no features in memory
  auto capacity = *ComputeBatchCapacity(spec, schema, graph.MaxInDegrees());
  for (const bool small : {true, false}) {
    std::vector<std::unique_ptr<RowCache>> owned;
    std::vector<RowCache*> caches;
    int featured = 0;
    for (size_t t = 0; t < schema.node_types.size(); ++t) {
      const NodeTypeSchema& type = schema.node_types[t];
      if (type.features < 0) {
        caches.push_back(nullptr);
        continue;
      }
      ++featured;
      on_storage.arrays.data[type.features] = nullptr;
      const NpyFile& file = d->file(type.features);
      const RowTable table{file.path(), file.header().data_offset, type.feature_row_bytes(), type.num_nodes};
      const int64_t rows = small ? capacity.max_nodes[t] : type.num_nodes;
      auto cache = RowCache::Create(table, rows * RowCache::BytesPerRow(table.row_bytes), nullptr,
                                    {.reader = {.queue_depth = 8}});
      ASSERT_TRUE(cache.ok()) << cache.status();
      caches.push_back(cache->get());
      owned.push_back(*std::move(cache));
    }
    ASSERT_GE(featured, 2) << "the preset has several featured types";
    for (const auto& [threads, window] : {std::pair{1, 1}, {3, 4}}) {
      EXPECT_TRUE(TypedEpoch(on_storage, spec, train, threads, window, &caches) == expected)
          << "small caches " << small << ", threads " << threads << ", window " << window;
    }
    for (RowCache* cache : caches) {
      if (cache != nullptr) {
        EXPECT_EQ(cache->stats().window, 0);
      }
    }
  }
}

}  // namespace
}  // namespace gnnd
