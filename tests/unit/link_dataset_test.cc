// Datasets for link prediction: a graph alone (no features, labels or node splits) and edge splits (seed
// edges, their labels and fixed negatives), from the manifest's checks through import and validation.
#include <filesystem>
#include <fstream>

#include "common/dataset/dataset.h"
#include "common/dataset/manifest.h"
#include "common/dataset/schema.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/import.h"

namespace gnnd::dataset {
namespace {

using testing::ScratchDir;
using testing::WriteNpy;

constexpr char kEdges[] = "0 1\n2 1\n3 1\n1 4\n4 0\n0 4\n2 3\n";

template <typename T>
std::vector<T> Contents(const NpyFile& file) {
  size_t n = 1;
  for (int64_t d : file.header().shape) n *= static_cast<size_t>(d);
  return std::vector<T>(file.as<T>(), file.as<T>() + n);
}

TEST(LinkDataset, AnEdgeListAloneIsAGraphWithoutFeaturesLabelsOrSplits) {
  ScratchDir dir;
  std::ofstream(dir / "edges.txt") << kEdges;
  ASSERT_TRUE(ImportEdgeList(dir / "edges.txt", dir / "out", {}).ok());
  auto d = DatasetDir::Open(dir / "out");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->Validate(2).ok());
  EXPECT_EQ(d->manifest().num_nodes(), 5);  // the largest id + 1
  EXPECT_EQ(d->manifest().num_edges(), 7);
  const NodeTypeSchema& nodes = d->schema().node_types[0];
  EXPECT_EQ(nodes.features, -1);
  EXPECT_EQ(nodes.labels, -1);
  EXPECT_EQ(d->schema().arrays.size(), 2u);  // indptr, indices
  EXPECT_FALSE(std::filesystem::exists(dir / "out/labels.npy"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out/train.npy"));
  EXPECT_EQ(d->arrays().positions[static_cast<int>(ArrayId::kFeatures)], -1);
  EXPECT_EQ(d->Summary().find("features"), std::string::npos) << d->Summary();

  ImportOptions more;
  more.num_nodes[""] = 9;  // nodes without edges
  ASSERT_TRUE(ImportEdgeList(dir / "edges.txt", dir / "out9", more).ok());
  EXPECT_EQ(DatasetDir::Open(dir / "out9")->manifest().num_nodes(), 9);
  more.num_nodes[""] = 4;
  EXPECT_EQ(ImportEdgeList(dir / "edges.txt", dir / "out4", more).message(),
            "edges.txt line 4: node id 4 is out of range [0, 4)");
  EXPECT_FALSE(std::filesystem::exists(dir / "out4"));
}

TEST(LinkDataset, EdgeSplitsImportWithLabelsAndFixedNegatives) {
  ScratchDir dir;
  std::filesystem::create_directories(dir / "splits");
  // The graph as a (2, E) .npy edge index.
  WriteNpy(dir / "edges.npy", DType::kInt64, std::vector<int64_t>{0, 2, 3, 1, 4, 0, 2, 1, 1, 1, 4, 0, 4, 3}, {7});
  WriteNpy(dir / "splits/train.npy", DType::kInt32, std::vector<int32_t>{0, 2, 3, 1, 1, 1}, {3});
  WriteNpy(dir / "splits/train_label.npy", DType::kFloat32, std::vector<float>{1, 0, 2});
  WriteNpy(dir / "splits/test.npy", DType::kInt64, std::vector<int64_t>{4, 6, 0, 2}, {2});  // 6: no graph edge
  WriteNpy(dir / "splits/test_neg.npy", DType::kInt64, std::vector<int64_t>{1, 2, 3, 5, 0, 1}, {3});
  ImportOptions options;
  options.edge_splits_dir = dir / "splits";
  ASSERT_TRUE(ImportEdgeList(dir / "edges.npy", dir / "out", options).ok());
  auto d = DatasetDir::Open(dir / "out");
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->Validate(2).ok());
  EXPECT_EQ(d->manifest().num_nodes(), 7);  // the splits' largest id + 1
  EXPECT_EQ(d->manifest().num_edges(), 7);
  ASSERT_EQ(d->manifest().edge_splits_size(), 2);
  EXPECT_EQ(d->manifest().edge_splits(0).name(), "train");
  EXPECT_TRUE(d->manifest().edge_splits(0).labeled());
  EXPECT_EQ(d->manifest().edge_splits(1).num_negatives(), 3);

  const RelationSchema& r = d->schema().relations[0];
  const EdgeSplitSchema& train = r.edge_splits[0];
  const EdgeSplitSchema& valid = r.edge_splits[1];
  const EdgeSplitSchema& test = r.edge_splits[2];
  EXPECT_EQ(valid.edges, -1);
  ASSERT_GE(train.edges, 0);
  EXPECT_EQ(train.negatives, -1);
  EXPECT_EQ(test.labels, -1);
  EXPECT_EQ(d->schema().arrays[train.edges].file(), "train_edges.npy");
  EXPECT_EQ(Contents<int64_t>(d->file(train.edges)), (std::vector<int64_t>{0, 2, 3, 1, 1, 1}));
  EXPECT_EQ(Contents<int64_t>(d->file(train.labels)), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(Contents<int64_t>(d->file(test.edges)), (std::vector<int64_t>{4, 6, 0, 2}));
  EXPECT_EQ(d->file(test.negatives).header().shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Contents<int64_t>(d->file(test.negatives)), (std::vector<int64_t>{1, 2, 3, 5, 0, 1}));
  EXPECT_NE(d->Summary().find("edge splits train 3 (labeled) / test 2 (3 negatives each)"), std::string::npos)
      << d->Summary();
}

TEST(LinkDataset, BadEdgeSplitsAreNamedAndLeaveNothing) {
  ScratchDir dir;
  std::ofstream(dir / "edges.txt") << kEdges;
  auto import = [&](const std::string& case_name, auto write) {
    const std::string splits = dir / case_name;
    std::filesystem::create_directories(splits);
    write(splits);
    ImportOptions options;
    options.edge_splits_dir = splits;
    options.num_nodes[""] = 5;
    const absl::Status status = ImportEdgeList(dir / "edges.txt", dir / (case_name + ".out"), options);
    EXPECT_FALSE(std::filesystem::exists(dir / (case_name + ".out")));
    return std::string(status.message());
  };
  EXPECT_EQ(import("none", [](const std::string&) {}),
            dir / "none" + ": none of train.npy, valid.npy, test.npy (each a (2, E) array of seed edges)");
  EXPECT_EQ(import("orphan",
                   [](const std::string& s) {
                     WriteNpy(s + "/valid_neg.npy", DType::kInt64, std::vector<int64_t>{1, 2}, {2});
                   }),
            dir / "orphan" + ": valid_neg.npy without valid.npy (the split's seed edges)");
  EXPECT_EQ(import("shape",
                   [](const std::string& s) {
                     WriteNpy(s + "/train.npy", DType::kInt64, std::vector<int64_t>{0, 1, 2}, {});
                   }),
            "train.npy: shape (3), expected (2, num_edges): sources, destinations");
  EXPECT_EQ(import("range",
                   [](const std::string& s) {
                     WriteNpy(s + "/train.npy", DType::kInt64, std::vector<int64_t>{0, 1, 2, 5}, {2});
                   }),
            "train.npy[:, 1]: node id 5 is out of range [0, 5)");
  EXPECT_EQ(import("unlabeled",
                   [](const std::string& s) {
                     WriteNpy(s + "/train.npy", DType::kInt64, std::vector<int64_t>{0, 1, 2, 3}, {2});
                     WriteNpy(s + "/train_label.npy", DType::kFloat64, std::vector<double>{1, NAN});
                   }),
            "train_label.npy[1]: no label (-1 or NaN); every seed edge needs a class id >= 0");
  EXPECT_EQ(import("label_count",
                   [](const std::string& s) {
                     WriteNpy(s + "/train.npy", DType::kInt64, std::vector<int64_t>{0, 1, 2, 3}, {2});
                     WriteNpy(s + "/train_label.npy", DType::kInt64, std::vector<int64_t>{1, 1, 1});
                   }),
            "train_label.npy: shape (3), expected (2,): one label per seed edge");
  EXPECT_EQ(import("negatives",
                   [](const std::string& s) {
                     WriteNpy(s + "/test.npy", DType::kInt64, std::vector<int64_t>{0, 1, 2, 3}, {2});
                     WriteNpy(s + "/test_neg.npy", DType::kInt64, std::vector<int64_t>{1, 2, 3, 4, 0, 9}, {3});
                   }),
            "test_neg.npy[1, 2]: node id 9 is out of range [0, 5)");

  ImportOptions splits_alone;
  splits_alone.splits_dir = dir / "none";
  EXPECT_EQ(ImportEdgeList(dir / "edges.txt", dir / "x", splits_alone).message(),
            "--splits needs --labels (a split's nodes must be labeled)");
  ImportOptions typed_count;
  typed_count.num_nodes["paper"] = 5;
  EXPECT_EQ(ImportEdgeList(dir / "edges.txt", dir / "x", typed_count).message(),
            "--num-nodes paper=5: an edge list has one node type (give --num-nodes N)");
}

v1::DatasetManifest GraphAlone() {
  v1::DatasetManifest m;
  m.set_format_version(1);
  m.set_num_nodes(5);
  m.set_num_edges(7);
  m.set_index_dtype(v1::INDEX_DTYPE_INT32);
  return m;
}

TEST(LinkDataset, ManifestEdgeSplitsAreChecked) {
  auto message = [](const v1::DatasetManifest& m) {
    return std::string(DatasetSchema::FromManifest(m).status().message());
  };
  v1::DatasetManifest m = GraphAlone();
  v1::EdgeSplit* e = m.add_edge_splits();
  e->set_name("trian");
  EXPECT_EQ(message(m), "manifest.textproto: edge_splits[0].name = 'trian' is not train, valid or test");
  e->set_name("train");
  e->set_num_edges(-1);
  EXPECT_EQ(message(m), "manifest.textproto: edge_splits[0].num_edges = -1 must not be negative");
  e->set_num_edges(int64_t{1} << 30);
  e->set_num_negatives(1025);  // more than a session may serve per edge
  EXPECT_EQ(message(m),
            "manifest.textproto: edge_splits[0].num_negatives = 1025 must be 0 to 1024 (negatives per edge gnnd can "
            "serve)");
  e->set_num_edges(int64_t{1} << 40);
  e->set_num_negatives(1024);
  EXPECT_EQ(message(m),
            "manifest.textproto: edge_splits[0].num_negatives = 1024 makes more than 281474976710656 negatives "
            "(num_edges = 1099511627776)");
  e->set_num_edges(int64_t{1} << 30);
  e->set_num_negatives(4);
  *m.add_edge_splits() = *e;
  EXPECT_EQ(message(m), "manifest.textproto: edge_splits[1].name = 'train' is given twice");
  m.mutable_edge_splits()->RemoveLast();
  EXPECT_TRUE(DatasetSchema::FromManifest(m).ok());

  // A typed dataset gives them per relation, its arrays named after the relation.
  v1::DatasetManifest typed;
  typed.set_format_version(2);
  v1::NodeType* user = typed.add_node_types();
  user->set_name("user");
  user->set_num_nodes(3);
  v1::NodeType* item = typed.add_node_types();
  item->set_name("item");
  item->set_num_nodes(4);
  v1::Relation* rates = typed.add_relations();
  rates->set_src_type("user");
  rates->set_name("rates");
  rates->set_dst_type("item");
  rates->set_num_edges(5);
  rates->set_index_dtype(v1::INDEX_DTYPE_INT32);
  *typed.add_edge_splits() = *e;
  EXPECT_EQ(message(typed),
            "manifest.textproto: format_version = 2 describes its graph in node_types and relations, not num_nodes, "
            "num_edges, edge_splits, ...");
  typed.clear_edge_splits();
  *rates->add_edge_splits() = *e;
  rates->mutable_edge_splits(0)->set_name("valid");
  rates->mutable_edge_splits(0)->set_num_negatives(-2);
  EXPECT_EQ(message(typed),
            "manifest.textproto: relations[0].edge_splits[0].num_negatives = -2 must be 0 to 1024 (negatives per edge "
            "gnnd can serve)");
  rates->mutable_edge_splits(0)->set_num_negatives(0);
  rates->mutable_edge_splits(0)->set_labeled(true);
  auto schema = DatasetSchema::FromManifest(typed);
  ASSERT_TRUE(schema.ok()) << schema.status();
  const EdgeSplitSchema& valid = schema->relations[0].edge_splits[1];
  EXPECT_EQ(schema->arrays[valid.edges].file(), "user___rates___item.valid_edges.npy");
  EXPECT_EQ(schema->arrays[valid.edges].shape, (std::vector<int64_t>{2, int64_t{1} << 30}));
  EXPECT_EQ(schema->arrays[valid.labels].file(), "user___rates___item.valid_edge_label.npy");
  EXPECT_EQ(valid.negatives, -1);
}

TEST(LinkDataset, ValidationNamesTheFirstBadSeedEdgeNegativeOrLabel) {
  v1::DatasetManifest m;
  m.set_format_version(2);
  for (auto [name, count] : {std::pair{"user", 3}, std::pair{"item", 4}}) {
    v1::NodeType* t = m.add_node_types();
    t->set_name(name);
    t->set_num_nodes(count);
  }
  v1::Relation* rates = m.add_relations();
  rates->set_src_type("user");
  rates->set_name("rates");
  rates->set_dst_type("item");
  rates->set_num_edges(0);
  rates->set_index_dtype(v1::INDEX_DTYPE_INT32);
  v1::EdgeSplit* train = rates->add_edge_splits();
  train->set_name("train");
  train->set_num_edges(2);
  train->set_labeled(true);
  train->set_num_negatives(2);
  auto schema = DatasetSchema::FromManifest(m);
  ASSERT_TRUE(schema.ok()) << schema.status();
  const EdgeSplitSchema& e = schema->relations[0].edge_splits[0];
  std::vector<int64_t> indptr = {0, 0, 0, 0, 0};
  std::vector<int64_t> edges = {0, 2, 3, 1};  // users 0, 2 -> items 3, 1
  std::vector<int64_t> labels = {0, 7};
  std::vector<int64_t> negatives = {0, 1, 2, 3};
  DatasetArrays arrays(*schema);
  arrays.data[schema->relations[0].indptr] = indptr.data();
  arrays.data[schema->relations[0].indices] = nullptr;  // no edges
  arrays.data[e.edges] = edges.data();
  arrays.data[e.labels] = labels.data();
  arrays.data[e.negatives] = negatives.data();
  EXPECT_TRUE(ValidateArrays(*schema, arrays, 2).ok());

  edges[1] = 3;  // users go to 2
  EXPECT_EQ(ValidateArrays(*schema, arrays, 2).message(),
            "user___rates___item.train_edges.npy: [0, 1] = 3 is not a node id (type 'user' has 3 nodes)");
  edges[1] = 2;
  edges[2] = 4;  // items go to 3
  EXPECT_EQ(ValidateArrays(*schema, arrays, 2).message(),
            "user___rates___item.train_edges.npy: [1, 0] = 4 is not a node id (type 'item' has 4 nodes)");
  edges[2] = 3;
  negatives[3] = -1;
  EXPECT_EQ(ValidateArrays(*schema, arrays, 2).message(),
            "user___rates___item.train_neg.npy: [1, 1] = -1 is not a node id (type 'item' has 4 nodes)");
  negatives[3] = 3;
  labels[0] = -1;
  EXPECT_EQ(ValidateArrays(*schema, arrays, 2).message(),
            "user___rates___item.train_edge_label.npy: [0] = -1 is not a class id (must not be negative)");
}

}  // namespace
}  // namespace gnnd::dataset
