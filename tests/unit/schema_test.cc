// The dataset schema: the array table a manifest describes (typed and homogeneous), the manifest checks
// with the field they name, and a typed directory opened, validated and refused where it is wrong.
#include "common/dataset/schema.h"

#include <functional>
#include <string>
#include <vector>

#include "common/dataset/dataset.h"
#include "common/dataset/graph.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"

namespace gnnd {
namespace {

using gnnd::testing::ScratchDir;
using gnnd::testing::SmallDataset;
using gnnd::testing::TypedDataset;

TEST(Schema, TypedManifestDescribesEveryArray) {
  const TypedDataset typed;
  absl::StatusOr<DatasetSchema> s = DatasetSchema::FromManifest(typed.manifest);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->homogeneous());
  EXPECT_EQ(s->num_nodes, 6);
  ASSERT_EQ(s->node_types.size(), 3u);
  EXPECT_EQ(s->node_types[1].name, "author");
  EXPECT_EQ(s->node_types[1].offset, 3);
  EXPECT_EQ(s->node_types[2].offset, 5);
  EXPECT_EQ(s->node_types[1].features, -1);
  EXPECT_EQ(s->node_types[1].labels, -1);
  EXPECT_EQ(s->node_types[0].feature_row_bytes(), 4u);
  EXPECT_EQ(s->node_types[2].feature_row_bytes(), 16u);
  ASSERT_EQ(s->relations.size(), 3u);
  EXPECT_EQ(s->relations[1].key(), "author___writes___paper");
  EXPECT_EQ(s->relations[1].src_type, 1);
  EXPECT_EQ(s->relations[1].dst_type, 0);
  EXPECT_EQ(s->relations[2].index_dtype, DType::kInt64);

  struct Want {
    std::string name;
    ArrayRole role;
    DType dtype;
    std::vector<int64_t> shape;
  };
  const std::vector<Want> want = {
      {"paper___cites___paper.indptr", ArrayRole::kIndptr, DType::kInt64, {4}},
      {"paper___cites___paper.indices", ArrayRole::kIndices, DType::kInt32, {3}},
      {"author___writes___paper.indptr", ArrayRole::kIndptr, DType::kInt64, {4}},
      {"author___writes___paper.indices", ArrayRole::kIndices, DType::kInt32, {3}},
      {"paper___has_topic___field.indptr", ArrayRole::kIndptr, DType::kInt64, {2}},
      {"paper___has_topic___field.indices", ArrayRole::kIndices, DType::kInt64, {2}},
      {"paper.features", ArrayRole::kFeatures, DType::kFloat16, {3, 2}},
      {"paper.labels", ArrayRole::kLabels, DType::kInt64, {3}},
      {"paper.train", ArrayRole::kSplit, DType::kInt64, {2}},
      {"paper.valid", ArrayRole::kSplit, DType::kInt64, {1}},
      {"paper.test", ArrayRole::kSplit, DType::kInt64, {0}},
      {"field.features", ArrayRole::kFeatures, DType::kFloat32, {1, 4}},
  };
  ASSERT_EQ(s->arrays.size(), want.size());
  size_t total = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(s->arrays[i].name, want[i].name) << i;
    EXPECT_EQ(s->arrays[i].role, want[i].role) << want[i].name;
    EXPECT_EQ(s->arrays[i].dtype, want[i].dtype) << want[i].name;
    EXPECT_EQ(s->arrays[i].shape, want[i].shape) << want[i].name;
    total += s->arrays[i].bytes();
  }
  EXPECT_EQ(s->total_bytes(), total);
  EXPECT_EQ(s->arrays[s->relations[1].indices].name, "author___writes___paper.indices");
  EXPECT_EQ(s->arrays[s->node_types[0].splits[1]].name, "paper.valid");
  EXPECT_EQ(s->arrays[s->node_types[0].splits[1]].split, 1);
}

TEST(Schema, HomogeneousManifestIsOneTypeAndOneRelationUnderItsOldNames) {
  const SmallDataset small;
  absl::StatusOr<DatasetSchema> s = DatasetSchema::FromManifest(small.manifest);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->homogeneous());
  ASSERT_EQ(s->arrays.size(), static_cast<size_t>(kNumArrays));
  for (ArrayId id : kAllArrays) EXPECT_EQ(s->arrays[static_cast<int>(id)].name, ArrayName(id));
  EXPECT_EQ(s->arrays[static_cast<int>(ArrayId::kFeatures)].shape, (std::vector<int64_t>{4, 2}));
  const DatasetArrays arrays(*s);
  EXPECT_EQ(arrays.positions[static_cast<int>(ArrayId::kTest)], 6);
  EXPECT_EQ(DatasetArrays(*DatasetSchema::FromManifest(TypedDataset().manifest)).positions[0], -1);
}

TEST(Schema, NodeTimesAreInt64ArraysOfTheirType) {
  TypedDataset typed;
  typed.manifest.mutable_node_types(1)->set_node_time(true);
  absl::StatusOr<DatasetSchema> s = DatasetSchema::FromManifest(typed.manifest);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->node_types[0].node_time, -1);
  const int at = s->node_types[1].node_time;
  ASSERT_GE(at, 0);
  EXPECT_EQ(s->arrays[at].name, "author.node_time");
  EXPECT_EQ(s->arrays[at].role, ArrayRole::kNodeTime);
  EXPECT_EQ(s->arrays[at].dtype, DType::kInt64);
  EXPECT_EQ(s->arrays[at].shape, (std::vector<int64_t>{s->node_types[1].num_nodes}));

  SmallDataset small;
  small.manifest.set_node_time(true);
  absl::StatusOr<DatasetSchema> h = DatasetSchema::FromManifest(small.manifest);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->arrays.size(), static_cast<size_t>(kNumArrays) + 1);  // after the seven, which keep their places
  EXPECT_EQ(h->arrays.back().name, "node_time");
  EXPECT_EQ(h->node_types[0].node_time, kNumArrays);

  typed.manifest.set_node_time(true);  // format_version 2 keeps times in node_types
  EXPECT_FALSE(DatasetSchema::FromManifest(typed.manifest).ok());
}

TEST(Schema, NodeAttributesAreArraysOfTheirTypeByName) {
  TypedDataset typed;
  v1::EdgeAttribute& mask = *typed.manifest.mutable_node_types(1)->add_node_attrs();
  mask.set_name("mask");
  mask.set_dtype(v1::FEATURE_DTYPE_INT64);
  v1::EdgeAttribute& emb = *typed.manifest.mutable_node_types(1)->add_node_attrs();
  emb.set_name("emb");
  emb.set_dim(3);
  emb.set_dtype(v1::FEATURE_DTYPE_FLOAT16);
  absl::StatusOr<DatasetSchema> s = DatasetSchema::FromManifest(typed.manifest);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->node_types[0].node_attrs.empty());
  const std::vector<EdgeAttributeSchema>& attrs = s->node_types[1].node_attrs;
  ASSERT_EQ(attrs.size(), 2u);
  const int64_t n = s->node_types[1].num_nodes;
  EXPECT_EQ(s->arrays[attrs[0].array].name, "author.node.mask");
  EXPECT_EQ(s->arrays[attrs[0].array].role, ArrayRole::kNodeAttr);
  EXPECT_EQ(s->arrays[attrs[0].array].shape, (std::vector<int64_t>{n}));
  EXPECT_EQ(s->arrays[attrs[1].array].name, "author.node.emb");
  EXPECT_EQ(s->arrays[attrs[1].array].dtype, DType::kFloat16);
  EXPECT_EQ(s->arrays[attrs[1].array].shape, (std::vector<int64_t>{n, 3}));

  SmallDataset small;  // format_version 1: node.NAME, after the seven arrays; its name apart from edge attributes'
  v1::EdgeAttribute& x = *small.manifest.add_node_attrs();
  x.set_name("x");
  x.set_dtype(v1::FEATURE_DTYPE_INT64);
  absl::StatusOr<DatasetSchema> h = DatasetSchema::FromManifest(small.manifest);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->arrays[h->node_types[0].node_attrs[0].array].name, "node.x");
  small.manifest.set_edge_ids(true);
  *small.manifest.add_edge_attrs() = x;
  EXPECT_EQ(DatasetSchema::FromManifest(small.manifest).status().message(),
            "manifest.textproto: node_attrs = 'x' is also an edge attribute's name");
}

TEST(Schema, SplitTimesFollowTheirSplits) {
  TypedDataset typed;
  typed.manifest.mutable_node_types(0)->set_split_times(true);
  v1::EdgeSplit* seeds = typed.manifest.mutable_relations(1)->add_edge_splits();
  seeds->set_name("valid");
  seeds->set_num_edges(5);
  seeds->set_timed(true);
  absl::StatusOr<DatasetSchema> s = DatasetSchema::FromManifest(typed.manifest);
  ASSERT_TRUE(s.ok()) << s.status();
  const NodeTypeSchema& paper = s->node_types[0];
  for (int split = 0; split < 3; ++split) {
    const ArraySchema& a = s->arrays[paper.split_times[split]];
    EXPECT_EQ(a.name, "paper." + std::string(gnnd::kSplitNames[split]) + "_time");
    EXPECT_EQ(a.role, ArrayRole::kSplitTime);
    EXPECT_EQ(a.split, split);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{paper.split_sizes[split]}));
  }
  const ArraySchema& edge_times = s->arrays[s->relations[1].edge_splits[1].times];
  EXPECT_EQ(edge_times.name, "author___writes___paper.valid_edge_time");
  EXPECT_EQ(edge_times.role, ArrayRole::kEdgeSplitTime);
  EXPECT_EQ(edge_times.shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(s->relations[1].edge_splits[0].times, -1);

  typed.manifest.mutable_node_types(1)->set_split_times(true);  // author: no labels, no splits
  absl::StatusOr<DatasetSchema> bad = DatasetSchema::FromManifest(typed.manifest);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "manifest.textproto: node_types[1].split_times = true needs splits (num_classes is 0)");
}

struct BadManifest {
  std::string name;
  std::function<void(v1::DatasetManifest&)> change;
  std::string message;
};

class SchemaErrors : public ::testing::TestWithParam<BadManifest> {};

TEST_P(SchemaErrors, FirstProblemIsNamed) {
  TypedDataset typed;
  GetParam().change(typed.manifest);
  absl::StatusOr<DatasetSchema> s = DatasetSchema::FromManifest(typed.manifest);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    EveryRule, SchemaErrors,
    ::testing::Values(
        BadManifest{"UnknownSourceType", [](auto& m) { m.mutable_relations(1)->set_src_type("writer"); },
                    "manifest.textproto: relations[1].src_type = 'writer' is not one of node_types"},
        BadManifest{"UnknownDestinationType", [](auto& m) { m.mutable_relations(0)->set_dst_type("x"); },
                    "manifest.textproto: relations[0].dst_type = 'x' is not one of node_types"},
        BadManifest{"TypeTwice", [](auto& m) { m.mutable_node_types(2)->set_name("paper"); },
                    "manifest.textproto: node_types[2].name = 'paper' is given twice"},
        BadManifest{"RelationTwice", [](auto& m) { *m.add_relations() = m.relations(0); },
                    "manifest.textproto: relations[3].name = 'paper___cites___paper' is given twice"},
        BadManifest{"NotAName", [](auto& m) { m.mutable_node_types(1)->set_name("a/b"); },
                    "manifest.textproto: node_types[1].name = 'a/b' is not a name (letters, digits and _, at most "
                    "64 bytes, no ___)"},
        BadManifest{"OgbSeparator", [](auto& m) { m.mutable_relations(0)->set_name("a___b"); },
                    "manifest.textproto: relations[0].name = 'a___b' is not a name (letters, digits and _, at most "
                    "64 bytes, no ___)"},
        BadManifest{"Reserved", [](auto& m) { m.mutable_node_types(1)->set_name("staged"); },
                    "manifest.textproto: node_types[1].name = 'staged' is reserved"},
        BadManifest{"NoNodes", [](auto& m) { m.mutable_node_types(1)->set_num_nodes(0); },
                    "manifest.textproto: node_types[1].num_nodes = 0 must be positive"},
        BadManifest{"SplitWithoutLabels", [](auto& m) { m.mutable_node_types(1)->set_num_test(1); },
                    "manifest.textproto: node_types[1].num_test = 1 needs labels (num_classes is 0)"},
        BadManifest{"FeaturesWithoutDType", [](auto& m) { m.mutable_node_types(1)->set_feature_dim(8); },
                    "manifest.textproto: node_types[1].feature_dtype = unspecified must be set to a known feature "
                    "dtype"},
        BadManifest{"NarrowIndex",
                    [](auto& m) {
                      m.mutable_node_types(1)->set_num_nodes(int64_t{1} << 31);
                      m.mutable_relations(1)->set_index_dtype(v1::INDEX_DTYPE_INT32);
                    },
                    "manifest.textproto: relations[1].index_dtype = INDEX_DTYPE_INT32 cannot hold 2147483648 node "
                    "ids"},
        BadManifest{"NoRelations", [](auto& m) { m.clear_relations(); },
                    "manifest.textproto: relations = 0 entries (must be 1 to 256)"},
        BadManifest{"MixedVersions", [](auto& m) { m.set_num_nodes(6); },
                    "manifest.textproto: format_version = 2 describes its graph in node_types and relations, not "
                    "num_nodes, num_edges, edge_splits, ..."},
        BadManifest{"EdgeAttributesWithoutIds",
                    [](auto& m) {
                      v1::EdgeAttribute& a = *m.mutable_relations(0)->add_edge_attrs();
                      a.set_name("w");
                      a.set_dtype(v1::FEATURE_DTYPE_FLOAT32);
                    },
                    "manifest.textproto: relations[0].edge_ids = false must be true where there are edge attributes "
                    "(a batch's edges carry their ids with them)"},
        BadManifest{"EdgeAttributeName",
                    [](auto& m) {
                      m.mutable_relations(0)->set_edge_ids(true);
                      m.mutable_relations(0)->add_edge_attrs()->set_name("a b");
                    },
                    "manifest.textproto: relations[0].edge_attrs[0].name = 'a b' is not a name (letters, digits and "
                    "_, at most 64 bytes, no ___)"},
        BadManifest{"EdgeAttributeTwice",
                    [](auto& m) {
                      m.mutable_relations(0)->set_edge_ids(true);
                      for (int i = 0; i < 2; ++i) {
                        v1::EdgeAttribute& a = *m.mutable_relations(0)->add_edge_attrs();
                        a.set_name("w");
                        a.set_dtype(v1::FEATURE_DTYPE_FLOAT32);
                      }
                    },
                    "manifest.textproto: relations[0].edge_attrs[1].name = 'w' is given twice"},
        BadManifest{"EdgeAttributeNamedAsABatchArray",
                    [](auto& m) {
                      m.mutable_relations(0)->set_edge_ids(true);
                      v1::EdgeAttribute& a = *m.mutable_relations(0)->add_edge_attrs();
                      a.set_name("labels");
                      a.set_dtype(v1::FEATURE_DTYPE_FLOAT32);
                    },
                    "manifest.textproto: relations[0].edge_attrs[0].name = 'labels' is the name of a batch's array "
                    "(batches carry attributes by name)"},
        BadManifest{"EdgeAttributeDType",
                    [](auto& m) {
                      m.mutable_relations(0)->set_edge_ids(true);
                      m.mutable_relations(0)->add_edge_attrs()->set_name("w");
                    },
                    "manifest.textproto: relations[0].edge_attrs[0].dtype = unspecified must be set to a known "
                    "attribute dtype"},
        BadManifest{"NodeAttributeBatchName",
                    [](auto& m) {
                      v1::EdgeAttribute& a = *m.mutable_node_types(0)->add_node_attrs();
                      a.set_name("node_ids");
                      a.set_dtype(v1::FEATURE_DTYPE_INT64);
                    },
                    "manifest.textproto: node_types[0].node_attrs[0].name = 'node_ids' is the name of a batch's "
                    "array (batches carry attributes by name)"},
        BadManifest{"NodeAttributeTwice",
                    [](auto& m) {
                      for (int i = 0; i < 2; ++i) {
                        v1::EdgeAttribute& a = *m.mutable_node_types(0)->add_node_attrs();
                        a.set_name("mask");
                        a.set_dtype(v1::FEATURE_DTYPE_INT64);
                      }
                    },
                    "manifest.textproto: node_types[0].node_attrs[1].name = 'mask' is given twice"},
        BadManifest{"NodeAttributeDim",
                    [](auto& m) {
                      v1::EdgeAttribute& a = *m.mutable_node_types(0)->add_node_attrs();
                      a.set_name("x");
                      a.set_dim(-1);
                      a.set_dtype(v1::FEATURE_DTYPE_INT64);
                    },
                    "manifest.textproto: node_types[0].node_attrs[0].dim = -1 must be 0 (one value a node) to "
                    "281474976710656"},
        BadManifest{"NodeAttributesInVersion2TopLevel", [](auto& m) { m.add_node_attrs()->set_name("x"); },
                    "manifest.textproto: format_version = 2 describes its graph in node_types and relations, not "
                    "num_nodes, num_edges, edge_splits, ..."},
        BadManifest{"EdgeAttributeDim",
                    [](auto& m) {
                      m.mutable_relations(0)->set_edge_ids(true);
                      v1::EdgeAttribute& a = *m.mutable_relations(0)->add_edge_attrs();
                      a.set_name("w");
                      a.set_dim(-2);
                      a.set_dtype(v1::FEATURE_DTYPE_INT64);
                    },
                    "manifest.textproto: relations[0].edge_attrs[0].dim = -2 must be 0 (one value an edge) to "
                    "281474976710656"},
        BadManifest{"Int64NodeFeatures",
                    [](auto& m) { m.mutable_node_types(0)->set_feature_dtype(v1::FEATURE_DTYPE_INT64); },
                    "manifest.textproto: node_types[0].feature_dtype = int64 must be set to a known feature dtype"},
        BadManifest{"EdgeArraysInVersion2TopLevel", [](auto& m) { m.set_edge_ids(true); },
                    "manifest.textproto: format_version = 2 describes its graph in node_types and relations, not "
                    "num_nodes, num_edges, edge_splits, ..."},
        BadManifest{"TypesInVersion1", [](auto& m) { m.set_format_version(1); },
                    "manifest.textproto: format_version = 1 has no node_types or relations (typed datasets are "
                    "format_version 2)"}),
    [](const ::testing::TestParamInfo<BadManifest>& info) { return info.param.name; });

TEST(TypedDirectory, OpensValidatesAndDescribesEveryType) {
  ScratchDir dir;
  TypedDataset().Write(dir.path());
  absl::StatusOr<DatasetDir> d = DatasetDir::Open(dir.path());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->Validate(2).ok()) << d->Validate(2);
  const std::string summary = d->Summary();
  EXPECT_NE(summary.find("3 node types, 3 relations"), std::string::npos) << summary;
  EXPECT_NE(summary.find("paper: 3 nodes, features 2 x float16"), std::string::npos) << summary;
  EXPECT_NE(summary.find("(author, writes, paper): 3 edges, int32 indices"), std::string::npos) << summary;
  const GraphData graph{d->manifest(), d->arrays(), d->schema()};
  EXPECT_EQ(graph.MaxInDegree(), 2);
  const auto* field = static_cast<const float*>(d->arrays().data[d->schema().node_types[2].features]);
  EXPECT_EQ(field[3], 3.5f);
}

TEST(TypedDirectory, EveryValueProblemNamesItsFileAndType) {
  struct Case {
    std::function<void(TypedDataset&)> change;
    std::string message;
  } cases[] = {
      {[](TypedDataset& t) { t.writes_indices[1] = 2; },
       "author___writes___paper.indices.npy: indices[1] = 2 is not a node id (type 'author' has 2 nodes)"},
      {[](TypedDataset& t) {
         t.topic_indptr = {0, 1};
       },
       "paper___has_topic___field.indptr.npy: indptr[1] = 1 but the manifest says num_edges = 2"},
      {[](TypedDataset& t) { t.paper_labels[2] = 2; },
       "paper.labels.npy: labels[2] = 2 is neither -1 nor a class in [0, 2)"},
      {[](TypedDataset& t) { t.valid = {3}; },
       "paper.valid.npy: valid[0] = 3 is not a node id (type 'paper' has 3 nodes)"},
      {[](TypedDataset& t) { t.paper_labels[1] = -1; },
       "paper.valid.npy: valid[0] = 1 is unlabeled (paper.labels.npy has -1 there)"},
  };
  for (const Case& c : cases) {
    ScratchDir dir;
    TypedDataset typed;
    c.change(typed);
    typed.Write(dir.path());
    absl::StatusOr<DatasetDir> d = DatasetDir::Open(dir.path());
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->Validate(2).message(), c.message);
  }
  ScratchDir dir;
  TypedDataset().Write(dir.path());
  std::filesystem::remove(dir / "field.features.npy");
  EXPECT_EQ(DatasetDir::Open(dir.path()).status().message(),
            absl::StrCat("field.features.npy: missing from ", dir.path()));
}

}  // namespace
}  // namespace gnnd
