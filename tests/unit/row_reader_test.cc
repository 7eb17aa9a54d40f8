#include "common/dataset/row_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/unit/test_util.h"

namespace gnnd {
namespace {

using testing::Row;
using testing::ScratchDir;
using testing::WriteTable;

void ExpectRows(RowReader& reader, const std::vector<int64_t>& ids) {
  const uint64_t row_bytes = reader.table().row_bytes;
  std::vector<uint8_t> out(ids.size() * row_bytes, 0xee);
  ASSERT_TRUE(reader.Read(ids, out.data()).ok());
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(std::memcmp(out.data() + i * row_bytes, Row(ids[i], row_bytes).data(), row_bytes), 0)
        << "row " << ids[i] << " at " << i << ", rows of " << row_bytes << " bytes";
  }
}

std::vector<int64_t> RandomIds(int64_t rows, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> ids(count);
  for (int64_t& id : ids) id = std::uniform_int_distribution<int64_t>(0, rows - 1)(rng);
  return ids;  // unsorted, with repeats
}

TEST(RowReader, AnyIdsOfAnyRowSizeAsDirectAndBufferedReadsAtEveryQueueDepth) {
  ScratchDir dir;
  for (const uint64_t row_bytes : {uint64_t{100}, uint64_t{4096}, uint64_t{5000}, uint64_t{300000}}) {
    // Rows larger than a read's pages: 20 of them, each asked for twice on average (300 KB rows at 300 ids
    // would be 90 MB to check per case, minutes under the sanitizers, for nothing more found).
    const bool large = row_bytes > 100000;
    const int64_t rows = large ? 20 : 3000;
    const RowTable table = WriteTable(dir / absl::StrCat("t", row_bytes, ".npy"), 128, row_bytes, rows);
    for (const bool direct : {true, false}) {
      for (const unsigned depth : {1u, 3u, 64u}) {
        auto reader = RowReader::Open(table, {.queue_depth = depth, .direct = direct});
        ASSERT_TRUE(reader.ok()) << reader.status();
        if (!direct) {
          EXPECT_FALSE((*reader)->direct());
        }
        ExpectRows(**reader, RandomIds(rows, large ? 40 : 300, static_cast<uint32_t>(row_bytes + depth)));
        ExpectRows(**reader, {rows - 1, 0, rows - 1, 1});  // the last page runs past the end of the file
        ExpectRows(**reader, {});
      }
    }
  }
}

TEST(RowReader, RowsSharingAPageAreOneRead) {
  ScratchDir dir;
  const RowTable table = WriteTable(dir / "small.npy", 0, 100, 200);  // 40 rows in each of the first pages
  auto reader = RowReader::Open(table, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<int64_t> ids;
  for (int64_t i = 39; i >= 0; --i) ids.push_back(i);  // pages 0 (and the start of 1, row 40 is not asked)
  ExpectRows(**reader, ids);
  EXPECT_EQ((*reader)->stats().reads, 1u);
  EXPECT_EQ((*reader)->stats().bytes_read, 4096u);
  EXPECT_EQ((*reader)->stats().rows, 40u);
  ExpectRows(**reader, {0, 199, 100});  // pages 0, 4 and 2: no two adjacent, three reads
  EXPECT_EQ((*reader)->stats().reads, 1u + 3u);
}

TEST(RowReader, TmpfsServesRowsWhetherItTakesODirectOrNot) {
  // Linux before 6.6 refuses O_DIRECT on tmpfs (the reader then reads through the page cache), later
  // kernels take it: the rows are the same either way.
  const std::string path = absl::StrCat("/dev/shm/gnnd-row-reader-test-", ::getpid());
  const RowTable table = WriteTable(path, 64, 700, 100);
  auto reader = RowReader::Open(table, {.direct = true});
  ASSERT_TRUE(reader.ok()) << reader.status();
  ExpectRows(**reader, RandomIds(100, 300, 5));
  std::filesystem::remove(path);
}

TEST(RowReader, BadIdsTablesAndTruncatedFilesAreNamed) {
  ScratchDir dir;
  const RowTable table = WriteTable(dir / "t.npy", 128, 1000, 100);
  auto reader = RowReader::Open(table, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<uint8_t> out(2 * 1000);
  const std::vector<int64_t> bad = {3, 100};
  absl::Status s = (*reader)->Read(bad, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("row 100 requested, the table has 100"), std::string::npos) << s;

  RowTable longer = table;
  longer.num_rows = 101;
  // A refused open leaves others' descriptors alone (it once closed descriptor 0, through a ring never set up).
  if (::fcntl(0, F_GETFD) == -1) ASSERT_EQ(::open("/dev/null", O_RDONLY), 0);
  EXPECT_EQ(RowReader::Open(longer, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(::fcntl(0, F_GETFD), -1) << "descriptor 0 closed by a refused open";
  EXPECT_EQ(RowReader::Open(table, {.queue_depth = 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RowReader::Open({dir / "none.npy", 0, 8, 1}, {}).status().code(), absl::StatusCode::kNotFound);

  // The file shrinks under the open reader: the rows past its new end are refused by name, the rest read.
  std::filesystem::resize_file(table.path, 128 + 50 * 1000);
  const std::vector<int64_t> cut = {10, 80};
  s = (*reader)->Read(cut, out.data());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find(table.path), std::string::npos) << s;
  EXPECT_NE(s.message().find("before row 80 of 100"), std::string::npos) << s;
  ExpectRows(**reader, {49, 0, 10});  // the reader goes on serving what is there
}

}  // namespace
}  // namespace gnnd
