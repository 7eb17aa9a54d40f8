#include "common/dataset/dataset.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/dataset/manifest.h"
#include "common/dataset/shm_store.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"

namespace gnnd {
namespace {

using testing::ScratchDir;
using testing::SmallDataset;

// Writes `d`, opens and validates it; returns the first error (OK if none).
absl::Status OpenAndValidate(const SmallDataset& d, const ScratchDir& dir) {
  d.Write(dir.path());
  absl::StatusOr<DatasetDir> dataset = DatasetDir::Open(dir.path());
  if (!dataset.ok()) return dataset.status();
  return dataset->Validate(2);
}

TEST(Dataset, ValidDatasetOpensAndDescribesItself) {
  ScratchDir dir;
  SmallDataset d;
  d.Write(dir.path());
  auto dataset = DatasetDir::Open(dir.path());
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  EXPECT_TRUE(dataset->Validate(2).ok());
  EXPECT_EQ(dataset->arrays().indptr()[4], 6);
  EXPECT_EQ(dataset->arrays().labels()[3], 2);
  EXPECT_NE(dataset->Summary().find("4 nodes, 6 edges"), std::string::npos) << dataset->Summary();
  EXPECT_NE(dataset->Summary().find("max 3"), std::string::npos) << dataset->Summary();
}

struct BadCase {
  std::string name;
  std::function<void(SmallDataset&)> corrupt;
  std::string message;
  friend void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }
};

class DatasetErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(DatasetErrors, FirstProblemIsNamed) {
  ScratchDir dir;
  SmallDataset d;
  GetParam().corrupt(d);
  absl::Status status = OpenAndValidate(d, dir);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    EveryRule, DatasetErrors,
    ::testing::Values(
        BadCase{"IndptrStart", [](SmallDataset& d) { d.indptr[0] = 1; }, "indptr.npy: indptr[0] = 1 (must be 0)"},
        BadCase{"IndptrDecreases", [](SmallDataset& d) { d.indptr[2] = 1; },
                "indptr.npy: indptr[2] = 1 is less than indptr[1] = 2 (must never decrease)"},
        BadCase{"IndptrEnd", [](SmallDataset& d) { d.indptr[4] = 5; },
                "indptr.npy: indptr[4] = 5 but the manifest says num_edges = 6"},
        BadCase{"IndexOutOfRange", [](SmallDataset& d) { d.indices[4] = 9; },
                "indices.npy: indices[4] = 9 is not a node id (num_nodes = 4)"},
        BadCase{"NegativeIndex", [](SmallDataset& d) { d.indices[0] = -1; },
                "indices.npy: indices[0] = -1 is not a node id (num_nodes = 4)"},
        BadCase{"LabelTooLarge", [](SmallDataset& d) { d.labels[1] = 3; },
                "labels.npy: labels[1] = 3 is neither -1 nor a class in [0, 3)"},
        BadCase{"LabelNegative", [](SmallDataset& d) { d.labels[0] = -2; },
                "labels.npy: labels[0] = -2 is neither -1 nor a class in [0, 3)"},
        BadCase{"SplitIdOutOfRange", [](SmallDataset& d) { d.train[1] = 4; },
                "train.npy: train[1] = 4 is not a node id (num_nodes = 4)"},
        BadCase{"SplitIdUnlabeled", [](SmallDataset& d) { d.valid[0] = 2; },
                "valid.npy: valid[0] = 2 is unlabeled (labels.npy has -1 there)"},
        BadCase{"SplitIdRepeated",
                [](SmallDataset& d) {
                  d.train = {0, 3, 0};
                  d.manifest.set_num_train(3);
                },
                "train.npy: train[2] = 0 appears twice in the split"},
        BadCase{"WrongDType", [](SmallDataset& d) { d.manifest.set_index_dtype(v1::INDEX_DTYPE_INT64); },
                "indices.npy: dtype is <i4 but the manifest implies <i8"},
        BadCase{"WrongShape", [](SmallDataset& d) { d.manifest.set_feature_dim(4); },
                "features.npy: shape is (4, 2) but the manifest implies (4, 4)"},
        BadCase{"WrongCount", [](SmallDataset& d) { d.manifest.set_num_valid(2); },
                "valid.npy: shape is (1) but the manifest implies (2)"},
        BadCase{"FormatVersion", [](SmallDataset& d) { d.manifest.set_format_version(9); },
                "manifest.textproto: format_version = 9 is not supported (want 1 or 2)"},
        BadCase{"SplitsWithoutClasses", [](SmallDataset& d) { d.manifest.set_num_classes(0); },
                "manifest.textproto: num_train = 2 needs labels (num_classes is 0)"},
        BadCase{"NegativeClasses", [](SmallDataset& d) { d.manifest.set_num_classes(-1); },
                "manifest.textproto: num_classes = -1 must not be negative"},
        BadCase{"FeatureDimOverflows", [](SmallDataset& d) { d.manifest.set_feature_dim(4611686018427387905); },
                "manifest.textproto: feature_dim = 4611686018427387905 is too large (at most "
                "281474976710656)"},
        BadCase{"FeatureBytesOverflow",
                [](SmallDataset& d) {
                  d.manifest.set_num_nodes(int64_t{1} << 40);
                  d.manifest.set_index_dtype(v1::INDEX_DTYPE_INT64);
                  d.manifest.set_feature_dim(int64_t{1} << 30);
                },
                "manifest.textproto: feature_dim = 1073741824 makes the features (num_nodes = "
                "1099511627776 rows) larger than 1125899906842624 bytes"},
        BadCase{"NumNodesHuge",
                [](SmallDataset& d) {
                  d.manifest.set_num_nodes(int64_t{1} << 61);
                  d.manifest.set_index_dtype(v1::INDEX_DTYPE_INT64);
                },
                "manifest.textproto: num_nodes = 2305843009213693952 is too large (at most "
                "281474976710656)"},
        BadCase{"SplitLargerThanGraph", [](SmallDataset& d) { d.manifest.set_num_train(int64_t{1} << 61); },
                "manifest.textproto: num_train = 2305843009213693952 exceeds num_nodes = 4"},
        BadCase{"Int32TooNarrow", [](SmallDataset& d) { d.manifest.set_num_nodes(int64_t{1} << 31); },
                "manifest.textproto: index_dtype = INDEX_DTYPE_INT32 cannot hold 2147483648 node ids"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST(Dataset, MissingArrayIsNamed) {
  ScratchDir dir;
  SmallDataset().Write(dir.path());
  std::filesystem::remove(dir / "labels.npy");
  auto dataset = DatasetDir::Open(dir.path());
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(dataset.status().message(), absl::StrCat("labels.npy: missing from ", dir.path()));
}

TEST(Dataset, ManifestSyntaxErrorGivesLine) {
  ScratchDir dir;
  SmallDataset().Write(dir.path());
  std::ofstream(dir / kManifestFile) << "format_version: 1\nnum_nodes: 4\nnum_edgez: 6\n";
  auto dataset = DatasetDir::Open(dir.path());
  ASSERT_FALSE(dataset.ok());
  EXPECT_NE(std::string(dataset.status().message()).find("manifest.textproto: line 3"), std::string::npos)
      << dataset.status();
  EXPECT_NE(std::string(dataset.status().message()).find("num_edgez"), std::string::npos) << dataset.status();
}

// Files are opened once, regular files only, without blocking, and never through a link out of the
// directory; what is read later is what was opened.
TEST(DatasetFiles, FifoIsRefusedAtOnce) {
  for (const std::string file : {"indptr.npy", kManifestFile}) {
    ScratchDir dir;
    SmallDataset().Write(dir.path());
    std::filesystem::remove(dir / file);
    ASSERT_EQ(::mkfifo((dir / file).c_str(), 0600), 0);
    auto dataset = DatasetDir::Open(dir.path());  // would block forever if the FIFO were opened for reading
    ASSERT_FALSE(dataset.ok());
    EXPECT_EQ(dataset.status().message(), absl::StrCat(file, ": is a FIFO, not a regular file"));
  }
}

TEST(DatasetFiles, DirectoryInsteadOfAFileIsNamed) {
  ScratchDir dir;
  SmallDataset().Write(dir.path());
  std::filesystem::remove(dir / "features.npy");
  std::filesystem::create_directory(dir / "features.npy");
  auto dataset = DatasetDir::Open(dir.path());
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().message(), "features.npy: is a directory, not a regular file");
  EXPECT_EQ(DatasetDir::Open(dir / "labels.npy").status().message(),
            absl::StrCat(dir / "labels.npy", ": not a directory"));
  EXPECT_EQ(DatasetDir::Open(std::string("a\0b", 3)).status().message(),
            "dataset directory: the path contains a NUL byte");
}

TEST(DatasetFiles, ManifestIsReadUpToALimit) {
  ScratchDir dir;
  SmallDataset().Write(dir.path());
  std::ofstream(dir / kManifestFile, std::ios::app) << "# " << std::string(kMaxManifestBytes, 'x') << "\n";
  auto dataset = DatasetDir::Open(dir.path());
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().message(), "manifest.textproto: larger than 1048576 bytes");
}

TEST(DatasetFiles, LinksMayPointWithinTheDirectoryButNotOutOfIt) {
  ScratchDir root;
  const std::string dir = root / "d", outside = root / "o";
  std::filesystem::create_directory(dir);
  std::filesystem::create_directory(outside);
  auto in = [](const std::string& d, const std::string& name) { return d + "/" + name; };
  SmallDataset().Write(dir);
  std::filesystem::create_directory(in(dir, "arrays"));
  std::filesystem::rename(in(dir, "features.npy"), in(dir, "arrays/features.npy"));
  std::filesystem::create_symlink("arrays/features.npy", in(dir, "features.npy"));
  ASSERT_TRUE(DatasetDir::Open(dir).ok());  // within: followed

  std::filesystem::copy_file(in(dir, "arrays/features.npy"), in(outside, "features.npy"));
  std::filesystem::remove(in(dir, "features.npy"));
  std::filesystem::create_symlink(in(outside, "features.npy"), in(dir, "features.npy"));
  auto dataset = DatasetDir::Open(dir);
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(dataset.status().message(),
            "features.npy: a symbolic link out of the dataset directory (only links within it are followed)");
  std::filesystem::remove(in(dir, "features.npy"));
  std::filesystem::create_symlink("../o/features.npy", in(dir, "features.npy"));
  EXPECT_EQ(DatasetDir::Open(dir).status().code(), absl::StatusCode::kPermissionDenied);
}

TEST(DatasetFiles, WhatIsReadIsWhatWasOpenedEvenIfTheNameIsSwapped) {
  ScratchDir dir;
  SmallDataset original;
  original.Write(dir.path());
  auto dataset = DatasetDir::Open(dir.path());
  ASSERT_TRUE(dataset.ok()) << dataset.status();
  // Another file takes the name after the checks (as a swapped symlink or rename would).
  SmallDataset other;
  for (float& f : other.features) f = -1;
  testing::WriteNpy(dir / "swap.npy", DType::kFloat32, other.features, {2});
  std::filesystem::rename(dir / "swap.npy", dir / "features.npy");
  // Loading into shared memory copies the file that was checked, not whatever the name points at now.
  const std::string name = absl::StrCat("swap-", ::getpid());
  auto shm = ShmDataset::Load(name, *dataset, {});
  ASSERT_TRUE(shm.ok()) << shm.status();
  const auto* features = static_cast<const float*>((*shm)->arrays()[ArrayId::kFeatures]);
  EXPECT_EQ(std::vector<float>(features, features + original.features.size()), original.features);
  shm->reset();
  EXPECT_TRUE(ShmDataset::Remove(name).ok());
}

TEST(Dataset, NotADatasetDirectory) {
  ScratchDir dir;
  auto dataset = DatasetDir::Open(dir.path());
  ASSERT_FALSE(dataset.ok());
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(dataset.status().message()).find("not a dataset directory"), std::string::npos);
}

TEST(Dataset, ValidationReportsLowestPositionAcrossChunks) {
  // Many chunks checked in parallel: the error named must be the first bad position, every time.
  const int64_t n = 5'000'000;
  std::vector<int64_t> indptr(n + 1);
  for (int64_t v = 0; v <= n; ++v) indptr[v] = v;
  std::vector<int32_t> indices(n, 0);
  indices[4'200'000] = -7;
  indices[1'300'000] = n;
  std::vector<int64_t> labels(n, 0), split = {0};
  v1::DatasetManifest m;
  m.set_format_version(1), m.set_num_nodes(n), m.set_num_edges(n), m.set_index_dtype(v1::INDEX_DTYPE_INT32);
  m.set_feature_dim(1), m.set_feature_dtype(v1::FEATURE_DTYPE_FLOAT32), m.set_num_classes(1), m.set_num_train(1);
  const absl::StatusOr<DatasetSchema> schema = DatasetSchema::FromManifest(m);
  ASSERT_TRUE(schema.ok()) << schema.status();
  DatasetArrays arrays(*schema);
  float feature = 0;
  arrays.data = {indptr.data(), indices.data(), &feature, labels.data(), split.data(), split.data(), split.data()};
  for (int run = 0; run < 3; ++run) {
    absl::Status s = ValidateArrays(*schema, arrays, 4);
    EXPECT_EQ(s.message(), "indices.npy: indices[1300000] = 5000000 is not a node id (num_nodes = 5000000)");
  }
}

}  // namespace
}  // namespace gnnd
