// The dtype table (names, sizes, how numpy stores each) and the float8_e4m3fn conversions, checked against
// a brute-force nearest-value search.
#include "common/base/dtype.h"

#include <cmath>
#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace gnnd {
namespace {

TEST(DTypeTable, NamesRoundTripAndStorageIsNumpys) {
  for (const DTypeInfo& info : kDTypes) {
    ASSERT_TRUE(DTypeNamed(info.name).has_value()) << info.name;
    EXPECT_EQ(*DTypeNamed(info.name), info.dtype);
    EXPECT_EQ(DTypeSize(NpyStorage(info.dtype)), info.size) << info.name;
  }
  EXPECT_FALSE(DTypeNamed("float8").has_value());
  EXPECT_EQ(DTypeName(DType::kFloat8E4M3FN), "float8_e4m3fn");
  EXPECT_EQ(NpyDescr(DType::kBFloat16), "<u2");
  EXPECT_EQ(NpyDescr(DType::kFloat8E4M3FN), "|u1");
  EXPECT_EQ(NpyDescr(DType::kInt64), "<i8");
  EXPECT_TRUE(IsFloat(DType::kFloat8E4M3FN));
  EXPECT_FALSE(IsFloat(DType::kUInt8));
}

TEST(Float8E4M3FN, KnownValues) {
  EXPECT_EQ(FloatToFloat8E4M3FN(1.0f), 0x38);
  EXPECT_EQ(FloatToFloat8E4M3FN(-2.0f), 0xc0);
  EXPECT_EQ(FloatToFloat8E4M3FN(448.0f), 0x7e);
  EXPECT_EQ(FloatToFloat8E4M3FN(464.0f), 0x7e);  // the tie between 448 and 480 goes to the even 448
  EXPECT_EQ(FloatToFloat8E4M3FN(465.0f), 0x7f);  // rounds past 448: NaN, as PyTorch
  EXPECT_EQ(FloatToFloat8E4M3FN(-INFINITY), 0xff);
  EXPECT_EQ(FloatToFloat8E4M3FN(std::ldexp(1.0f, -9)), 0x01);   // smallest subnormal
  EXPECT_EQ(FloatToFloat8E4M3FN(std::ldexp(1.0f, -10)), 0x00);  // a tie with zero goes to zero
  EXPECT_EQ(FloatToFloat8E4M3FN(std::ldexp(1.0f, -6)), 0x08);   // smallest normal
  EXPECT_EQ(Float8E4M3FNToFloat(0x7e), 448.0f);
  EXPECT_EQ(Float8E4M3FNToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(Float8E4M3FNToFloat(0xb8), -1.0f);
  EXPECT_TRUE(std::isnan(Float8E4M3FNToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(Float8E4M3FNToFloat(0xff)));
  for (int code = 0; code < 256; ++code) {  // every finite value survives the round trip
    if ((code & 0x7f) == 0x7f) continue;
    ASSERT_EQ(FloatToFloat8E4M3FN(Float8E4M3FNToFloat(static_cast<uint8_t>(code))), code) << code;
  }
}

// The nearest finite float8 to |f| by search, ties to the even code; NaN past 464 (PyTorch's rule).
uint8_t NearestFloat8(float f) {
  const float magnitude = std::fabs(f);
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  if (magnitude > 464.0f) return sign | 0x7f;
  int best = 0;
  for (int code = 1; code < 0x7f; ++code) {
    const double d = std::fabs(Float8E4M3FNToFloat(static_cast<uint8_t>(code)) - static_cast<double>(magnitude));
    const double d_best = std::fabs(Float8E4M3FNToFloat(static_cast<uint8_t>(best)) - static_cast<double>(magnitude));
    if (d < d_best || (d == d_best && (code & 1) == 0)) best = code;
  }
  return sign | static_cast<uint8_t>(best);
}

TEST(Float8E4M3FN, RoundsToNearestEvenAsASearchDoes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-500.0f, 500.0f);
  std::uniform_int_distribution<int> exponent(-12, 9);
  for (int i = 0; i < 20000; ++i) {
    const float f = i % 2 == 0 ? wide(rng) : std::ldexp(wide(rng) / 500.0f, exponent(rng));
    ASSERT_EQ(FloatToFloat8E4M3FN(f), NearestFloat8(f)) << f;
  }
  for (int code = 0; code < 0x7e; ++code) {  // every midpoint between neighbours: a tie
    const float lo = Float8E4M3FNToFloat(static_cast<uint8_t>(code));
    const float hi = Float8E4M3FNToFloat(static_cast<uint8_t>(code + 1));
    const float mid = (lo + hi) / 2;
    ASSERT_EQ(FloatToFloat8E4M3FN(mid), NearestFloat8(mid)) << mid;
    ASSERT_EQ(FloatToFloat8E4M3FN(mid) & 1, 0) << mid;
  }
}

}  // namespace
}  // namespace gnnd
