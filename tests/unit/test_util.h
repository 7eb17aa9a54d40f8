// Helpers shared by the unit tests: scratch directories and small datasets written array by array.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/batch/batch.h"
#include "common/batch/batch_schema.h"
#include "common/batch/layout.h"
#include "common/dataset/dataset.h"
#include "common/dataset/graph.h"
#include "common/dataset/manifest.h"
#include "common/dataset/npy.h"
#include "common/dataset/row_reader.h"
#include "gtest/gtest.h"
#include "tools/dataset/synthetic.h"
#include "tools/dataset/synthetic_typed.h"

namespace gnnd::testing {

// A fresh directory under the test's temp dir, removed at destruction.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();  // null in SetUpTestSuite
    const auto* suite = ::testing::UnitTest::GetInstance()->current_test_suite();
    path_ = absl::StrCat(::testing::TempDir(), "gnnd-", suite ? suite->name() : "suite", "-",
                         info ? info->name() : "shared", "-", ::getpid());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return absl::StrCat(path_, "/", name); }

 private:
  std::string path_;
};

// A generated dataset, opened from a scratch directory: the homogeneous "tiny" preset, or the typed "mag" at
// x0.0004. A test may repoint graph()'s arrays (at arrays it keeps alive).
class GeneratedGraph {
 public:
  GeneratedGraph(bool typed, const dataset::GenerateOptions& options) {
    const std::string out = dir_ / "g";
    if (typed) {
      auto spec = dataset::TypedPresetSpec("mag", 0.0004);
      EXPECT_TRUE(spec.ok());
      EXPECT_TRUE(dataset::GenerateTyped(*spec, options, out).ok());
    } else {
      auto spec = dataset::PresetSpec("tiny", 1.0);
      EXPECT_TRUE(spec.ok());
      EXPECT_TRUE(dataset::Generate(*spec, options, out).ok());
    }
    auto d = DatasetDir::Open(out);
    EXPECT_TRUE(d.ok()) << d.status();
    dataset_.emplace(*std::move(d));
    graph_ = {dataset_->manifest(), dataset_->arrays(), dataset_->schema()};
  }
  GraphData& graph() { return graph_; }
  const GraphData& graph() const { return graph_; }

 private:
  ScratchDir dir_;
  std::optional<DatasetDir> dataset_;
  GraphData graph_;
};

// A batch buffer laid out for `spec` on `graph` (its capacity), filled with 0x5a so unwritten bytes show.
struct TypedBuffer {
  BatchLayout layout;
  std::vector<std::byte> bytes;
  BatchView view;
  TypedBuffer(const GraphData& graph, const SamplingSpec& spec) {
    absl::StatusOr<BatchCapacity> capacity = ComputeBatchCapacity(spec, graph.schema, graph.MaxInDegrees());
    EXPECT_TRUE(capacity.ok()) << capacity.status();
    layout = BatchLayout::Make(*capacity, spec, graph.schema);
    bytes.assign(layout.total_bytes, std::byte{0x5a});
    view = BatchView::At(bytes.data(), layout);
  }
};

// A table of `rows` rows of `row_bytes` after a header of `offset` bytes; byte j of row i is a function of
// (i, j), so any misplaced byte shows.
inline std::vector<uint8_t> Row(int64_t i, uint64_t row_bytes) {
  std::vector<uint8_t> row(row_bytes);
  for (uint64_t j = 0; j < row_bytes; ++j) row[j] = static_cast<uint8_t>((i * 131 + j * 7 + (i >> 8)) & 0xff);
  return row;
}

inline RowTable WriteTable(const std::string& path, uint64_t offset, uint64_t row_bytes, int64_t rows) {
  std::ofstream out(path, std::ios::binary);
  out << std::string(offset, 'h');
  for (int64_t i = 0; i < rows; ++i) {
    const std::vector<uint8_t> row = Row(i, row_bytes);
    out.write(reinterpret_cast<const char*>(row.data()), static_cast<std::streamsize>(row.size()));
  }
  return {path, offset, row_bytes, rows};
}

template <typename T>
void WriteNpy(const std::string& path, DType dtype, const std::vector<T>& values, std::vector<int64_t> row_shape = {}) {
  int64_t row = 1;
  for (int64_t d : row_shape) row *= d;
  std::filesystem::remove(path);  // a fixture may replace a file (writers never overwrite)
  auto writer = NpyWriter::CreateAppendable(path, dtype, row_shape);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_TRUE(writer->Append(values.data(), static_cast<int64_t>(values.size()) / row).ok());
  ASSERT_TRUE(writer->Finish().ok());
}

// Every byte of a batch that a consumer can see (host memory), for comparing batches.
inline std::vector<std::byte> BatchContents(const HomogeneousView& b, size_t feature_row_bytes) {
  std::vector<std::byte> out;
  auto add = [&](const void* p, size_t n) {
    const auto* bytes = static_cast<const std::byte*>(p);
    out.insert(out.end(), bytes, bytes + n);
  };
  add(b.num_nodes_per_hop, 4 * (b.num_hops + 1));
  add(b.num_edges_per_hop, 4 * b.num_hops);
  add(b.node_ids, 8 * b.num_nodes());
  add(b.edge_src, 4 * b.num_edges());
  add(b.edge_dst, 4 * b.num_edges());
  add(b.features, feature_row_bytes * b.num_nodes());
  add(b.labels, 8 * b.num_seeds());
  return out;
}

// Every array of `schema` up to its count, and the counts: what a trainer reads of a batch at `base`.
inline std::string SchemaContents(const BatchSchema& schema, const std::vector<int64_t>& counts,
                                  const std::byte* base) {
  std::string out(reinterpret_cast<const char*>(counts.data()), counts.size() * sizeof(int64_t));
  for (const BatchArraySchema& a : schema.arrays) {
    out.append(reinterpret_cast<const char*>(base + a.offset), a.row_bytes() * counts[a.count]);
  }
  return out;
}

// The arrays of a small dataset, valid as constructed; tests break one thing at a time.
struct SmallDataset {
  // 4 nodes; CSC in-neighbors: 0 <- {1, 2}, 1 <- {0}, 2 <- {}, 3 <- {0, 1, 2}.
  std::vector<int64_t> indptr = {0, 2, 3, 3, 6};
  std::vector<int32_t> indices = {1, 2, 0, 0, 1, 2};
  std::vector<float> features = {0, 1, 2, 3, 4, 5, 6, 7};  // 4 x 2
  std::vector<int64_t> labels = {0, 1, -1, 2};
  std::vector<int64_t> train = {0, 3}, valid = {1}, test = {};
  v1::DatasetManifest manifest;

  SmallDataset() {
    manifest.set_format_version(kDatasetFormatVersion);
    manifest.set_num_nodes(4);
    manifest.set_num_edges(6);
    manifest.set_index_dtype(v1::INDEX_DTYPE_INT32);
    manifest.set_feature_dim(2);
    manifest.set_feature_dtype(v1::FEATURE_DTYPE_FLOAT32);
    manifest.set_num_classes(3);
    manifest.set_num_train(2);
    manifest.set_num_valid(1);
    manifest.set_num_test(0);
  }

  void Write(const std::string& dir) const {
    WriteNpy(dir + "/indptr.npy", DType::kInt64, indptr);
    WriteNpy(dir + "/indices.npy", DType::kInt32, indices);
    WriteNpy(dir + "/features.npy", DType::kFloat32, features, {2});
    WriteNpy(dir + "/labels.npy", DType::kInt64, labels);
    WriteNpy(dir + "/train.npy", DType::kInt64, train);
    WriteNpy(dir + "/valid.npy", DType::kInt64, valid);
    WriteNpy(dir + "/test.npy", DType::kInt64, test);
    ASSERT_TRUE(WriteManifest(dir, manifest).ok());
  }
};

// A small typed (format_version 2) dataset, valid as constructed: papers (3, float16 features, labeled),
// authors (2, no features, no labels), fields (1, float32 features); paper-cites-paper, author-writes-paper,
// paper-has_topic-field.
struct TypedDataset {
  std::vector<int64_t> cites_indptr = {0, 1, 2, 3};  // paper 0 <- 1, 1 <- 2, 2 <- 0
  std::vector<int32_t> cites_indices = {1, 2, 0};
  std::vector<int64_t> writes_indptr = {0, 2, 2, 3};  // paper 0 <- authors 0, 1; paper 2 <- author 1
  std::vector<int32_t> writes_indices = {0, 1, 1};
  std::vector<int64_t> topic_indptr = {0, 2};  // field 0 <- papers 0, 2
  std::vector<int64_t> topic_indices = {0, 2};
  std::vector<uint16_t> paper_features = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600};  // 3 x 2 float16
  std::vector<int64_t> paper_labels = {1, 0, 1};
  std::vector<int64_t> train = {0, 2}, valid = {1}, test = {};
  std::vector<float> field_features = {0.5f, 1.5f, 2.5f, 3.5f};  // 1 x 4
  v1::DatasetManifest manifest;

  TypedDataset() {
    manifest.set_format_version(2);
    v1::NodeType* paper = manifest.add_node_types();
    paper->set_name("paper"), paper->set_num_nodes(3), paper->set_feature_dim(2);
    paper->set_feature_dtype(v1::FEATURE_DTYPE_FLOAT16), paper->set_num_classes(2);
    paper->set_num_train(2), paper->set_num_valid(1);
    v1::NodeType* author = manifest.add_node_types();
    author->set_name("author"), author->set_num_nodes(2);
    v1::NodeType* field = manifest.add_node_types();
    field->set_name("field"), field->set_num_nodes(1), field->set_feature_dim(4);
    field->set_feature_dtype(v1::FEATURE_DTYPE_FLOAT32);
    auto relation = [&](const char* src, const char* name, const char* dst, int64_t edges, v1::IndexDType dtype) {
      v1::Relation* r = manifest.add_relations();
      r->set_src_type(src), r->set_name(name), r->set_dst_type(dst), r->set_num_edges(edges), r->set_index_dtype(dtype);
    };
    relation("paper", "cites", "paper", 3, v1::INDEX_DTYPE_INT32);
    relation("author", "writes", "paper", 3, v1::INDEX_DTYPE_INT32);
    relation("paper", "has_topic", "field", 2, v1::INDEX_DTYPE_INT64);
  }

  void Write(const std::string& dir) const {
    WriteNpy(dir + "/paper___cites___paper.indptr.npy", DType::kInt64, cites_indptr);
    WriteNpy(dir + "/paper___cites___paper.indices.npy", DType::kInt32, cites_indices);
    WriteNpy(dir + "/author___writes___paper.indptr.npy", DType::kInt64, writes_indptr);
    WriteNpy(dir + "/author___writes___paper.indices.npy", DType::kInt32, writes_indices);
    WriteNpy(dir + "/paper___has_topic___field.indptr.npy", DType::kInt64, topic_indptr);
    WriteNpy(dir + "/paper___has_topic___field.indices.npy", DType::kInt64, topic_indices);
    WriteNpy(dir + "/paper.features.npy", DType::kFloat16, paper_features, {2});
    WriteNpy(dir + "/paper.labels.npy", DType::kInt64, paper_labels);
    WriteNpy(dir + "/paper.train.npy", DType::kInt64, train);
    WriteNpy(dir + "/paper.valid.npy", DType::kInt64, valid);
    WriteNpy(dir + "/paper.test.npy", DType::kInt64, test);
    WriteNpy(dir + "/field.features.npy", DType::kFloat32, field_features, {4});
    ASSERT_TRUE(WriteManifest(dir, manifest).ok());
  }
};

}  // namespace gnnd::testing
