// gnnctl partition (tools/dataset/partition.h): every part is a valid dataset with the whole structure and the
// feature rows of the nodes it owns, the owner map the same in every part and each node's row where the map says;
// random and range methods, homogeneous and typed datasets; bad requests and damaged parts refused naming what.
#include "tools/dataset/partition.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/dataset/dataset.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"
#include "tools/dataset/synthetic.h"
#include "tools/dataset/synthetic_typed.h"

namespace gnnd::dataset {
namespace {

using testing::ScratchDir;

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Checks the parts of `whole` under OUT against it.
void CheckParts(const std::string& whole_dir, const std::string& out, const PartitionSpec& spec) {
  auto whole = DatasetDir::Open(whole_dir);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const DatasetSchema& schema = whole->schema();
  std::vector<DatasetDir> parts;
  for (uint32_t p = 0; p < spec.parts; ++p) {
    auto part = DatasetDir::Open(absl::StrCat(out, "/part-", p));
    ASSERT_TRUE(part.ok()) << part.status();
    ASSERT_TRUE(part->Validate(2).ok()) << part->Validate(2);
    EXPECT_EQ(part->schema().partition.part, p);
    EXPECT_EQ(part->schema().partition.num_parts, spec.parts);
    EXPECT_EQ(part->schema().partition.method, spec.method);
    EXPECT_EQ(part->schema().partition.dataset_id,
              parts.empty() ? part->schema().partition.dataset_id : parts[0].schema().partition.dataset_id);
    EXPECT_EQ(RequireWhole(part->schema(), "part").code(), absl::StatusCode::kFailedPrecondition);
    parts.push_back(*std::move(part));
  }
  int featured = 0;
  for (size_t t = 0; t < schema.node_types.size(); ++t) {
    const NodeTypeSchema& type = schema.node_types[t];
    const NodeTypeSchema& in_part = parts[0].schema().node_types[t];
    if (type.features < 0) {
      EXPECT_LT(in_part.owner, 0) << type.name;  // no rows, no map
      continue;
    }
    ++featured;
    const auto* owner = static_cast<const int32_t*>(parts[0].file(in_part.owner).data());
    const auto* row = static_cast<const int64_t*>(parts[0].file(in_part.owner_row).data());
    const size_t row_bytes = type.feature_row_bytes();
    const auto* rows = static_cast<const std::byte*>(whole->file(type.features).data());
    std::vector<int64_t> owned(spec.parts, 0);
    for (int64_t v = 0; v < type.num_nodes; ++v) {
      if (spec.method != "metis")
        ASSERT_EQ(static_cast<uint32_t>(owner[v]), OwnerOf(spec, v, type.num_nodes, type.offset + v));
      ++owned[owner[v]];
      const DatasetDir& holder = parts[owner[v]];
      const auto* held = static_cast<const std::byte*>(holder.file(holder.schema().node_types[t].features).data());
      ASSERT_EQ(std::memcmp(held + row[v] * row_bytes, rows + v * row_bytes, row_bytes), 0) << type.name << " " << v;
      if (spec.method == "range" && v > 0) ASSERT_LE(owner[v - 1], owner[v]);  // contiguous ranges
    }
    for (uint32_t p = 0; p < spec.parts; ++p) {
      EXPECT_EQ(parts[p].schema().node_types[t].part_rows[p], owned[p]);
      EXPECT_EQ(parts[p].schema().arrays[parts[p].schema().node_types[t].features].shape[0], owned[p]);
      // The same map in every part.
      const NodeTypeSchema& there = parts[p].schema().node_types[t];
      EXPECT_EQ(std::memcmp(parts[p].file(there.owner).data(), owner, sizeof(int32_t) * type.num_nodes), 0);
      EXPECT_GT(owned[p], 0) << "every part owns some of " << type.num_nodes << " nodes";
    }
  }
  EXPECT_GT(featured, 0);
  // The structure is the whole one in every part.
  for (const RelationSchema& r : schema.relations) {
    for (int array : {r.indptr, r.indices}) {
      const std::string file = schema.arrays[array].file();
      EXPECT_EQ(Contents(absl::StrCat(out, "/part-", spec.parts - 1, "/", file)), Contents(whole_dir + "/" + file));
    }
  }
}

TEST(Partition, HomogeneousRandomAndRangePartsHoldTheirOwnRows) {
  ScratchDir dir;
  auto preset = PresetSpec("tiny", 1.0);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(Generate(*preset,
                       {.seed = 3,
                        .feature_dtype = v1::FEATURE_DTYPE_BFLOAT16,
                        .threads = 2,
                        .edge_attrs = true,
                        .node_attrs = true},
                       dir / "g")
                  .ok());
  for (const PartitionSpec& spec : {PartitionSpec{.parts = 3, .method = "random", .seed = 5, .threads = 2},
                                    PartitionSpec{.parts = 4, .method = "range", .threads = 2}}) {
    const std::string out = dir / ("parts-" + spec.method);
    auto summary = PartitionDataset(dir / "g", out, spec);
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_NE(summary->find("part 0 of"), std::string::npos) << *summary;
    CheckParts(dir / "g", out, spec);
  }
}

// The edges of the homogeneous dataset at `dir` whose ends are in different parts, by part-0's owner map.
int64_t CutEdges(const std::string& dir, const std::string& part0) {
  auto whole = DatasetDir::Open(dir);
  auto part = DatasetDir::Open(part0);
  EXPECT_TRUE(whole.ok() && part.ok());
  const auto* owner = static_cast<const int32_t*>(part->file(part->schema().node_types[0].owner).data());
  const auto* indptr = static_cast<const int64_t*>(whole->file(ArrayId::kIndptr).data());
  const auto* indices = static_cast<const int32_t*>(whole->file(ArrayId::kIndices).data());
  int64_t cut = 0;
  for (int64_t v = 0; v < whole->schema().num_nodes; ++v) {
    for (int64_t p = indptr[v]; p < indptr[v + 1]; ++p) cut += owner[indices[p]] != owner[v];
  }
  return cut;
}

TEST(Partition, MetisSplitsFewerNeighborhoodsThanRandomAndIsReproducible) {
  ScratchDir dir;
  auto preset = PresetSpec("tiny", 1.0);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(Generate(*preset, {.seed = 3, .threads = 2}, dir / "g").ok());
  const PartitionSpec metis{.parts = 4, .method = "metis", .seed = 7, .threads = 2};
  ASSERT_TRUE(PartitionDataset(dir / "g", dir / "metis", metis).ok());
  CheckParts(dir / "g", dir / "metis", metis);
  ASSERT_TRUE(PartitionDataset(dir / "g", dir / "again", metis).ok());
  EXPECT_EQ(Contents(dir / "metis/part-0/owner.npy"), Contents(dir / "again/part-0/owner.npy"));  // the same seed
  ASSERT_TRUE(PartitionDataset(dir / "g", dir / "random", {.parts = 4, .seed = 7, .threads = 2}).ok());
  const int64_t metis_cut = CutEdges(dir / "g", dir / "metis/part-0"),
                random_cut = CutEdges(dir / "g", dir / "random/part-0");
  EXPECT_LT(metis_cut, random_cut) << "metis " << metis_cut << ", random " << random_cut;
}

TEST(Partition, TypedDatasetsArePartitionedPerFeaturedType) {
  ScratchDir dir;
  auto preset = TypedPresetSpec("mag", 0.0004);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(GenerateTyped(*preset, {.seed = 4, .threads = 2, .temporal = true}, dir / "g").ok());
  for (const PartitionSpec& spec : {PartitionSpec{.parts = 2, .method = "random", .seed = 9, .threads = 2},
                                    PartitionSpec{.parts = 3, .method = "metis", .seed = 9, .threads = 2}}) {
    ASSERT_TRUE(PartitionDataset(dir / "g", dir / spec.method, spec).ok());
    CheckParts(dir / "g", dir / spec.method, spec);
  }
}

TEST(Partition, BadRequestsAndDamagedPartsAreRefusedNamingWhat) {
  ScratchDir dir;
  auto preset = PresetSpec("tiny", 0.3);
  ASSERT_TRUE(preset.ok());
  ASSERT_TRUE(Generate(*preset, {.seed = 3, .threads = 2}, dir / "g").ok());
  const PartitionSpec spec{.parts = 2, .threads = 2};
  EXPECT_NE(PartitionDataset(dir / "g", dir / "a", {.parts = 0}).status().message().find("--parts 0"),
            std::string::npos);
  EXPECT_NE(PartitionDataset(dir / "g", dir / "a", {.parts = 2, .method = "kway"})
                .status()
                .message()
                .find("--method kway (random, range or metis)"),
            std::string::npos);
  ASSERT_TRUE(PartitionDataset(dir / "g", dir / "parts", spec).ok());
  EXPECT_EQ(PartitionDataset(dir / "g", dir / "parts", spec).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(PartitionDataset(dir / "parts/part-0", dir / "again", spec).status().message().find("is part 0 of 2"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "again"));
  EXPECT_FALSE(std::filesystem::exists(dir / "a"));

  // A damaged map: two nodes on one row.
  const std::string part = dir / "parts/part-1";
  auto opened = DatasetDir::Open(part);
  ASSERT_TRUE(opened.ok());
  const NodeTypeSchema& type = opened->schema().node_types[0];
  std::vector<int32_t> owner(static_cast<const int32_t*>(opened->file(type.owner).data()),
                             static_cast<const int32_t*>(opened->file(type.owner).data()) + type.num_nodes);
  std::vector<int64_t> row(static_cast<const int64_t*>(opened->file(type.owner_row).data()),
                           static_cast<const int64_t*>(opened->file(type.owner_row).data()) + type.num_nodes);
  int64_t second = 1;
  while (owner[second] != owner[0]) ++second;
  row[second] = row[0];
  std::filesystem::remove(part + "/owner_row.npy");  // a hard link to part-0's: replaced, not written through
  testing::WriteNpy(part + "/owner_row.npy", DType::kInt64, row);
  auto damaged = DatasetDir::Open(part);
  ASSERT_TRUE(damaged.ok()) << damaged.status();
  const absl::Status invalid = damaged->Validate(2);
  EXPECT_NE(invalid.message().find(absl::StrCat("owner_row.npy: owner_row[", second, "] = ", row[0])),
            std::string::npos)
      << invalid;
  EXPECT_NE(invalid.message().find("has two owners"), std::string::npos) << invalid;
  // A truncated feature file: refused at open, naming it.
  std::filesystem::resize_file(part + "/features.npy", std::filesystem::file_size(part + "/features.npy") - 8);
  EXPECT_NE(DatasetDir::Open(part).status().message().find("features.npy"), std::string::npos);
}

}  // namespace
}  // namespace gnnd::dataset
