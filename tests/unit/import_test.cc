// Importers on small inputs written here in the real formats (gzip through zlib, .npy through
// NpyWriter). Cross-format agreement with numpy-written npz files is in tests/python.
#include "tools/dataset/import.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "common/dataset/dataset.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"

namespace gnnd::dataset {
namespace {

using testing::ScratchDir;
using testing::WriteNpy;

void WriteGzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
  gzclose(f);
}

// The reference graph: 5 nodes, edges 0->1, 2->1, 3->1, 1->4, 4->0, 0->4, 2->3; features row v = (v, -v).
void WriteOgbCsv(const std::string& root, const std::string& labels = "1\n0\nnan\n2\n1\n") {
  std::filesystem::create_directories(root + "/raw");
  std::filesystem::create_directories(root + "/split/random");
  WriteGzip(root + "/raw/num-node-list.csv.gz", "5\n");
  WriteGzip(root + "/raw/edge.csv.gz", "0,1\n2,1\n3,1\n1,4\n4,0\n0,4\n2,3\n");
  WriteGzip(root + "/raw/node-feat.csv.gz", "0.0,-0.0\n1.0,-1.0\n2,-2\n3.0,-3.0\n4.5,-4.5\n");
  WriteGzip(root + "/raw/node-label.csv.gz", labels);
  WriteGzip(root + "/split/random/train.csv.gz", "0\n1\n");
  WriteGzip(root + "/split/random/valid.csv.gz", "3\n");
  WriteGzip(root + "/split/random/test.csv.gz", "4\n");
}

void ExpectReferenceGraph(const std::string& dir) {
  auto d = DatasetDir::Open(dir);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(d->Validate(2).ok());
  const v1::DatasetManifest& m = d->manifest();
  EXPECT_EQ(m.num_nodes(), 5);
  EXPECT_EQ(m.num_edges(), 7);
  EXPECT_EQ(m.num_classes(), 3);
  const int64_t* indptr = d->arrays().indptr();
  const int32_t* indices = d->file(ArrayId::kIndices).as<int32_t>();
  EXPECT_EQ(std::vector<int64_t>(indptr, indptr + 6), (std::vector<int64_t>{0, 1, 4, 4, 5, 7}));
  EXPECT_EQ(std::vector<int32_t>(indices, indices + 7), (std::vector<int32_t>{4, 0, 2, 3, 2, 0, 1}));
  const float* features = d->file(ArrayId::kFeatures).as<float>();
  EXPECT_EQ(features[2 * 4], 4.5f);
  EXPECT_EQ(features[2 * 4 + 1], -4.5f);
  const int64_t* labels = d->arrays().labels();
  EXPECT_EQ(std::vector<int64_t>(labels, labels + 5), (std::vector<int64_t>{1, 0, -1, 2, 1}));
  EXPECT_EQ(m.num_train(), 2);
  EXPECT_EQ(d->file(ArrayId::kTrain).as<int64_t>()[1], 1);
  EXPECT_EQ(d->file(ArrayId::kTest).as<int64_t>()[0], 4);
}

TEST(ImportOgb, RawCsvLayout) {
  ScratchDir dir;
  WriteOgbCsv(dir / "src");
  ASSERT_TRUE(ImportOgbCsv(dir / "src", dir / "out", {}).ok());
  ExpectReferenceGraph(dir / "out");
}

TEST(ImportOgb, FeatureDTypeConversion) {
  ScratchDir dir;
  WriteOgbCsv(dir / "src");
  ImportOptions options;
  options.feature_dtype = v1::FEATURE_DTYPE_BFLOAT16;
  ASSERT_TRUE(ImportOgbCsv(dir / "src", dir / "out", options).ok());
  auto d = DatasetDir::Open(dir / "out");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->manifest().feature_dtype(), v1::FEATURE_DTYPE_BFLOAT16);
  EXPECT_EQ(d->file(ArrayId::kFeatures).header().dtype, DType::kUInt16);
  EXPECT_EQ(d->file(ArrayId::kFeatures).as<uint16_t>()[9], FloatToBFloat16(-4.5f));
}

TEST(ImportOgb, Float8FeaturesAndTheirRange) {
  ScratchDir dir;
  WriteOgbCsv(dir / "src");
  ImportOptions options;
  options.feature_dtype = v1::FEATURE_DTYPE_FLOAT8_E4M3FN;
  ASSERT_TRUE(ImportOgbCsv(dir / "src", dir / "out", options).ok());
  auto d = DatasetDir::Open(dir / "out");
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->manifest().feature_dtype(), v1::FEATURE_DTYPE_FLOAT8_E4M3FN);
  EXPECT_EQ(d->file(ArrayId::kFeatures).header().dtype, DType::kUInt8);
  EXPECT_EQ(d->file(ArrayId::kFeatures).as<uint8_t>()[9], FloatToFloat8E4M3FN(-4.5f));
  EXPECT_EQ(Float8E4M3FNToFloat(d->file(ArrayId::kFeatures).as<uint8_t>()[9]), -4.5f);
  EXPECT_TRUE(d->Validate(1).ok());

  ScratchDir big;
  WriteOgbCsv(big / "src");
  WriteGzip(big / "src/raw/node-feat.csv.gz", "0,0\n1,1\n2,500\n3,3\n4,4\n");
  absl::Status s = ImportOgbCsv(big / "src", big / "out", options);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("feature value 500"), std::string::npos) << s;
  EXPECT_NE(s.message().find("float8_e4m3fn's range"), std::string::npos) << s;
  EXPECT_NE(s.message().find("raw/node-feat.csv.gz"), std::string::npos) << s;
}

TEST(ImportOgb, BadInputIsNamedAndLeavesNothing) {
  struct Case {
    std::string file, text, message;
  } cases[] = {
      {"raw/edge.csv.gz", "0,1\n2,x\n", "raw/edge.csv.gz line 2: 'x' is not an integer"},
      {"raw/edge.csv.gz", "0,1\n2,7\n", "raw/edge.csv.gz line 2: node id 7 is out of range [0, 5)"},
      {"raw/edge.csv.gz", "0,1,2\n", "raw/edge.csv.gz line 1: 3 fields, expected 'src,dst'"},
      {"raw/node-feat.csv.gz", "0,0\n1,1\n2\n", "raw/node-feat.csv.gz line 3: 1 feature values, expected 2"},
      {"raw/node-label.csv.gz", "1\n0\n2.5\n",
       "raw/node-label.csv.gz line 3: label 2.5 is not a class id (a non-negative integer, or NaN/-1 for none)"},
      {"raw/node-label.csv.gz", "1\n0\n", "raw/node-label.csv.gz: 2 labels but num_nodes = 5"},
      {"split/random/valid.csv.gz", "3\n9\n", "split/random/valid.csv.gz line 2: node id 9 is out of range [0, 5)"},
      {"split/random/test.csv.gz", "2\n", "test.npy: test[0] = 2 is unlabeled (labels.npy has -1 there)"},
  };
  for (const Case& c : cases) {
    ScratchDir dir;
    WriteOgbCsv(dir / "src");
    WriteGzip(dir / ("src/" + c.file), c.text);
    absl::Status s = ImportOgbCsv(dir / "src", dir / "out", {});
    EXPECT_EQ(s.message(), c.message) << c.file;
    EXPECT_FALSE(std::filesystem::exists(dir / "out")) << c.file;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
      EXPECT_EQ(entry.path().filename(), "src") << "left behind: " << entry.path();
    }
  }
}

TEST(ImportOgb, SplitSchemeMustBeChosenWhenSeveral) {
  ScratchDir dir;
  WriteOgbCsv(dir / "src");
  std::filesystem::create_directories(dir / "src/split/time");
  absl::Status s = ImportOgbCsv(dir / "src", dir / "out", {});
  EXPECT_EQ(s.message(), "split/: 2 split schemes (random, time); choose one with --split-scheme");
  ImportOptions options;
  options.split_scheme = "random";
  EXPECT_TRUE(ImportOgbCsv(dir / "src", dir / "out", options).ok());
}

TEST(ImportOgb, RefusesExistingOutput) {
  ScratchDir dir;
  WriteOgbCsv(dir / "src");
  std::filesystem::create_directories(dir / "out");
  std::ofstream(dir / "out/keep.txt") << "user data";
  absl::Status s = ImportOgbCsv(dir / "src", dir / "out", {});
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(std::filesystem::exists(dir / "out/keep.txt"));
}

void WriteSideArrays(const ScratchDir& dir) {
  std::filesystem::create_directories(dir / "splits");
  WriteNpy(dir / "feat.npy", DType::kFloat64, std::vector<double>{0, -0.0, 1, -1, 2, -2, 3, -3, 4.5, -4.5}, {2});
  WriteNpy(dir / "labels.npy", DType::kFloat32, std::vector<float>{1, 0, NAN, 2, 1});
  WriteNpy(dir / "splits/train.npy", DType::kInt64, std::vector<int64_t>{0, 1});
  WriteNpy(dir / "splits/valid.npy", DType::kInt32, std::vector<int32_t>{3});
  WriteNpy(dir / "splits/test.npy", DType::kInt64, std::vector<int64_t>{4});
}

TEST(ImportEdgeList, PlainAndGzipWithComments) {
  ScratchDir dir;
  WriteSideArrays(dir);
  const std::string text = "# a comment\n0 1\n2\t1\n\n3 1  # trailing\n1 4\n4 0\n0 4\n2 3";
  std::ofstream(dir / "edges.txt") << text;
  WriteGzip(dir / "edges.txt.gz", text);
  ImportOptions options;
  options.features_npy = dir / "feat.npy";
  options.labels_npy = dir / "labels.npy";
  options.splits_dir = dir / "splits";
  ASSERT_TRUE(ImportEdgeList(dir / "edges.txt", dir / "out1", options).ok());
  ExpectReferenceGraph(dir / "out1");
  ASSERT_TRUE(ImportEdgeList(dir / "edges.txt.gz", dir / "out2", options).ok());
  ExpectReferenceGraph(dir / "out2");

  std::ofstream(dir / "bad.txt") << "0 1\n1 2 3\n";
  EXPECT_EQ(ImportEdgeList(dir / "bad.txt", dir / "out3", options).message(),
            "bad.txt line 2: 3 fields, expected 'src dst'");
  ImportOptions splits_without_labels;
  splits_without_labels.splits_dir = dir / "splits";
  EXPECT_EQ(ImportEdgeList(dir / "edges.txt", dir / "out4", splits_without_labels).code(),
            absl::StatusCode::kInvalidArgument);  // a graph alone is link_dataset_test's
}

TEST(ImportGraphBolt, CsvAndNumpyEdges) {
  for (const std::string format : {"csv", "numpy"}) {
    ScratchDir dir;
    const std::string src = dir / "gb";
    std::filesystem::create_directories(src + "/data");
    if (format == "csv") {
      std::ofstream(src + "/data/edges.csv") << "0,1\n2,1\n3,1\n1,4\n4,0\n0,4\n2,3\n";
    } else {
      WriteNpy(src + "/data/edges.npy", DType::kInt64, std::vector<int64_t>{0, 2, 3, 1, 4, 0, 2, 1, 1, 1, 4, 0, 4, 3},
               {7});
    }
    WriteNpy(src + "/data/feat.npy", DType::kFloat32, std::vector<float>{0, 0, 1, -1, 2, -2, 3, -3, 4.5, -4.5}, {2});
    WriteNpy(src + "/data/train_seeds.npy", DType::kInt64, std::vector<int64_t>{0, 1});
    WriteNpy(src + "/data/train_labels.npy", DType::kInt64, std::vector<int64_t>{1, 0});
    WriteNpy(src + "/data/valid_seeds.npy", DType::kInt64, std::vector<int64_t>{3});
    WriteNpy(src + "/data/valid_labels.npy", DType::kInt64, std::vector<int64_t>{2});
    WriteNpy(src + "/data/test_seeds.npy", DType::kInt64, std::vector<int64_t>{4});
    WriteNpy(src + "/data/test_labels.npy", DType::kInt64, std::vector<int64_t>{1});
    std::ofstream(src + "/metadata.yaml") << R"(dataset_name: reference
graph:
  nodes:
    - num: 5
  edges:
    - format: )" << format << R"(
      path: data/edges.)" << (format == "csv" ? "csv" : "npy")
                                          << R"(
feature_data:
  - domain: node
    name: feat
    format: numpy
    in_memory: true
    path: data/feat.npy
tasks:
  - name: node_classification
    num_classes: 3
    train_set:
      - data:
          - name: seeds
            format: numpy
            path: data/train_seeds.npy
          - name: labels
            format: numpy
            path: data/train_labels.npy
    validation_set:
      - data:
          - name: seeds
            format: numpy
            path: data/valid_seeds.npy
          - name: labels
            format: numpy
            path: data/valid_labels.npy
    test_set:
      - data:
          - name: seeds
            format: numpy
            path: data/test_seeds.npy
          - name: labels
            format: numpy
            path: data/test_labels.npy
)";
    absl::Status s = ImportGraphBolt(src, dir / "out", {});
    ASSERT_TRUE(s.ok()) << format << ": " << s;
    ExpectReferenceGraph(dir / "out");
  }
}

TEST(ImportGraphBolt, HeterogeneousAndMissingPiecesAreNamed) {
  ScratchDir dir;
  std::filesystem::create_directories(dir / "gb");
  std::ofstream(dir / "gb/metadata.yaml")
      << "graph:\n  nodes:\n    - type: paper\n      num: 3\n    - type: author\n      num: 2\n";
  EXPECT_EQ(ImportGraphBolt(dir / "gb", dir / "out", {}).message(),
            "metadata.yaml: graph.nodes: expected exactly one node type (heterogeneous graphs are not supported)");
  std::ofstream(dir / "gb/metadata.yaml") << "graph: [unclosed\n";
  EXPECT_EQ(ImportGraphBolt(dir / "gb", dir / "out", {}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ImportGraphBolt(dir / "nowhere", dir / "out", {}).code(), absl::StatusCode::kNotFound);
}

TEST(Import, UnknownFormat) {
  EXPECT_EQ(Import("parquet", "a", "b", {}).message(),
            "--format parquet: unknown (ogb, ogb-bin, graphbolt, edgelist or mag240m)");
}

}  // namespace
}  // namespace gnnd::dataset
