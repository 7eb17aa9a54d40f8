#include "common/dataset/npy.h"

#include <cmath>
#include <cstring>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/unit/test_util.h"

namespace gnnd {
namespace {

using testing::ScratchDir;

TEST(NpyHeader, FormatThenParseRoundTrips) {
  auto text = FormatNpyHeader(DType::kFloat16, {1600000000, 128});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->size(), 128u);
  EXPECT_EQ(text->back(), '\n');
  auto header = ParseNpyHeader(*text, "x.npy");
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->dtype, DType::kFloat16);
  EXPECT_EQ(header->shape, (std::vector<int64_t>{1600000000, 128}));
  EXPECT_EQ(header->data_offset, 128u);
  EXPECT_FALSE(header->fortran_order);
}

TEST(NpyHeader, ParsesNumpyWrittenVersion1And2Headers) {
  // Exactly what numpy 1.24 writes for np.save(f, np.zeros(3, '<i4')).
  std::string v1 =
      std::string("\x93NUMPY\x01\x00\x76\x00", 10) + "{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }";
  v1.append(128 - v1.size() - 1, ' ');
  v1 += '\n';
  auto h1 = ParseNpyHeader(v1, "a.npy");
  ASSERT_TRUE(h1.ok()) << h1.status();
  EXPECT_EQ(h1->dtype, DType::kInt32);
  EXPECT_EQ(h1->shape, std::vector<int64_t>{3});

  std::string dict = "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 5), }\n";
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  const uint32_t len = static_cast<uint32_t>(dict.size());
  v2.append(reinterpret_cast<const char*>(&len), 4);
  v2 += dict;
  auto h2 = ParseNpyHeader(v2, "b.npy");
  ASSERT_TRUE(h2.ok()) << h2.status();
  EXPECT_EQ(h2->dtype, DType::kUInt8);
  EXPECT_TRUE(h2->fortran_order);
  EXPECT_EQ(h2->data_offset, 12 + dict.size());
}

TEST(NpyHeader, RejectsWhatItCannotRead) {
  auto expect_error = [](std::string bytes, std::string fragment) {
    auto h = ParseNpyHeader(bytes, "f.npy");
    ASSERT_FALSE(h.ok());
    EXPECT_NE(std::string(h.status().message()).find(fragment), std::string::npos) << h.status();
    EXPECT_NE(std::string(h.status().message()).find("f.npy"), std::string::npos) << h.status();
  };
  expect_error("PK\x03\x04 not npy at all", "bad magic");
  // A version 1.0 header whose length field matches `dict`.
  auto header = [](std::string dict) {
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(dict.size()) + '\0' + dict;
  };
  expect_error(header("{'descr': '>i8', 'fortran_order': False, 'shape': (3,), }"), "unsupported dtype '>i8'");
  expect_error(header("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }"), "unsupported dtype");
  expect_error(header("{'descr': '<i8', 'fortran_order': False, 'shape': (-3,), }"), "bad shape");
  expect_error(header("{'descr': '<i8', 'shape': (3,), }"), "no 'fortran_order'");
  expect_error(std::string("\x93NUMPY\x07\x00\x40\x00", 10), "version 7");
  expect_error(header("{'descr': '<i8'}").substr(0, 14), "truncated");
  // Shapes whose byte size wraps (2^61 + 1 int64 = 2^64 + 8 bytes) would pass for an 8-byte file.
  expect_error(header("{'descr': '<i8', 'fortran_order': False, 'shape': (2305843009213693953,), }"),
               "shape (2305843009213693953,) is too large");
  expect_error(header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967297), }"), "is too large");
}

TEST(NpyWriter, AppendableGrowsAndNumpyLayoutIsExact) {
  ScratchDir dir;
  auto writer = NpyWriter::CreateAppendable(dir / "a.npy", DType::kInt32, {3});
  ASSERT_TRUE(writer.ok());
  std::vector<int32_t> rows(3 * 100000);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int32_t>(i * 7);
  ASSERT_TRUE(writer->Append(rows.data(), 60000).ok());
  ASSERT_TRUE(writer->Append(rows.data() + 3 * 60000, 40000).ok());
  ASSERT_TRUE(writer->Finish().ok());
  auto file = NpyFile::Open(dir / "a.npy");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->header().shape, (std::vector<int64_t>{100000, 3}));
  EXPECT_EQ(std::memcmp(file->data(), rows.data(), rows.size() * 4), 0);
}

TEST(NpyWriter, MappedWritesAndTruncates) {
  ScratchDir dir;
  auto writer = NpyWriter::CreateMapped(dir / "m.npy", DType::kInt64, {10});
  ASSERT_TRUE(writer.ok());
  for (int i = 0; i < 10; ++i) writer->mutable_as<int64_t>()[i] = 100 + i;
  ASSERT_TRUE(writer->Truncate(4).ok());
  ASSERT_TRUE(writer->Finish().ok());
  auto file = NpyFile::Open(dir / "m.npy");
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_EQ(file->header().shape, std::vector<int64_t>{4});
  EXPECT_EQ(file->as<int64_t>()[3], 103);
}

TEST(NpyFile, SizeMustMatchHeader) {
  ScratchDir dir;
  testing::WriteNpy(dir / "x.npy", DType::kInt64, std::vector<int64_t>{1, 2, 3});
  std::filesystem::resize_file(dir / "x.npy", 128 + 16);
  auto file = NpyFile::Open(dir / "x.npy");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().message(), "x.npy: file has 144 bytes but its header implies 152");
}

TEST(NpyStream, ConvertsOnRead) {
  ScratchDir dir;
  testing::WriteNpy(dir / "u.npy", DType::kUInt16, std::vector<uint16_t>{7, 65535});
  auto source = OpenFileSource(dir / "u.npy");
  ASSERT_TRUE(source.ok());
  auto reader = NpyStreamReader::Open(std::move(*source), "u.npy");
  ASSERT_TRUE(reader.ok()) << reader.status();
  int64_t out[2];
  ASSERT_TRUE(reader->ReadInt64(out, 2).ok());
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[1], 65535);
  absl::Status past_end = reader->ReadInt64(out, 1);
  EXPECT_EQ(past_end.code(), absl::StatusCode::kDataLoss);
}

TEST(HalfFloat, ConversionsRoundToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);               // rounds up to infinity
  EXPECT_EQ(FloatToHalf(5.960464477539063e-8f), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);     // a tie rounds to even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite positive half survives the round trip
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(1.00390625f), 0x3f80);  // tie, even stays
  EXPECT_EQ(FloatToBFloat16(1.01171875f), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(BFloat16ToFloat(0xc040), -3.0f);
}

}  // namespace
}  // namespace gnnd
