// Element types of dataset and batch arrays, described once (kDTypes: name, size, how numpy stores it),
// and the float16/bfloat16/float8 conversions used when importing features. Host and device code can
// both include this header.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/strings/string_view.h"

namespace gnnd {

enum class DType : uint8_t {
  kBool,
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kFloat16,
  kFloat32,
  kFloat64,
  kBFloat16,      // numpy has none: a .npy holds its bits as uint16
  kFloat8E4M3FN,  // numpy has none: a .npy holds its bits as uint8
};

struct DTypeInfo {
  DType dtype;
  absl::string_view name;  // torch's and numpy's name where they have one ("float8_e4m3fn" as torch)
  uint8_t size;
  DType npy_storage;  // how a .npy file holds it
};
inline constexpr DTypeInfo kDTypes[] = {
    {DType::kBool, "bool", 1, DType::kBool},           {DType::kInt8, "int8", 1, DType::kInt8},
    {DType::kUInt8, "uint8", 1, DType::kUInt8},        {DType::kInt16, "int16", 2, DType::kInt16},
    {DType::kUInt16, "uint16", 2, DType::kUInt16},     {DType::kInt32, "int32", 4, DType::kInt32},
    {DType::kUInt32, "uint32", 4, DType::kUInt32},     {DType::kInt64, "int64", 8, DType::kInt64},
    {DType::kUInt64, "uint64", 8, DType::kUInt64},     {DType::kFloat16, "float16", 2, DType::kFloat16},
    {DType::kFloat32, "float32", 4, DType::kFloat32},  {DType::kFloat64, "float64", 8, DType::kFloat64},
    {DType::kBFloat16, "bfloat16", 2, DType::kUInt16}, {DType::kFloat8E4M3FN, "float8_e4m3fn", 1, DType::kUInt8},
};
inline constexpr int kNumDTypes = sizeof(kDTypes) / sizeof(kDTypes[0]);

constexpr const DTypeInfo& Info(DType t) { return kDTypes[static_cast<int>(t)]; }
static_assert([] {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (static_cast<int>(kDTypes[i].dtype) != i) return false;
  }
  return true;
}());

constexpr size_t DTypeSize(DType t) { return Info(t).size; }
constexpr absl::string_view DTypeName(DType t) { return Info(t).name; }
constexpr DType NpyStorage(DType t) { return Info(t).npy_storage; }
// The dtype named `name` (as DTypeName gives it), if any.
constexpr std::optional<DType> DTypeNamed(absl::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

constexpr bool IsFloat(DType t) {
  return t == DType::kFloat16 || t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kBFloat16 ||
         t == DType::kFloat8E4M3FN;
}

// numpy's little-endian descr string of how a .npy holds t, e.g. "<i8" ("<u2" for bfloat16).
absl::string_view NpyDescr(DType t);

// IEEE binary16 <-> binary32, round to nearest even; NaN and infinities preserved.
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal half: exact as a normal float
    float value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

inline uint16_t FloatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (keep NaN quiet)
    return sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: overflow to inf
  if (abs < 0x38800000u) {                        // below the smallest normal half
    // Scale so the half subnormal unit (2^-24) becomes 1, then round to nearest even.
    float magnitude;
    std::memcpy(&magnitude, &abs, sizeof(magnitude));
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

inline float BFloat16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

inline uint16_t FloatToBFloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);  // NaN
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// float8_e4m3fn (1 sign, 4 exponent bits of bias 7, 3 mantissa bits; no infinities; 0x7f and 0xff are NaN;
// largest finite 448). Conversions as PyTorch's: round to nearest even (464 rounds to 448); a magnitude
// that rounds past 448, an infinity or a NaN becomes NaN. Importers refuse out-of-range values before they get here.
inline constexpr float kFloat8E4M3FNMax = 448.0f;

inline float Float8E4M3FNToFloat(uint8_t b) {
  const bool negative = (b & 0x80u) != 0;
  const uint32_t exponent = (b >> 3) & 0xfu;
  const uint32_t mantissa = b & 0x7u;
  float value;
  if (exponent == 0xf && mantissa == 0x7) {
    value = std::nanf("");
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -9);  // subnormal: mantissa * 2^-9
  } else {
    value = std::ldexp(static_cast<float>(8 + mantissa), static_cast<int>(exponent) - 10);
  }
  return negative ? -value : value;
}

inline uint8_t FloatToFloat8E4M3FN(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs >= 0x43f00000u) return sign | 0x7fu;  // >= 480, inf or NaN (480 > x > 464 rounds to NaN below)
  if (abs < 0x3c800000u) {                      // below 2^-6, the smallest normal: subnormal steps of 2^-9
    float magnitude;
    std::memcpy(&magnitude, &abs, sizeof(magnitude));
    return sign | static_cast<uint8_t>(std::nearbyint(magnitude * 512.0f));
  }
  const uint32_t rounded = abs + 0x7ffffu + ((abs >> 20) & 1u);  // round to nearest even at bit 20
  return sign | static_cast<uint8_t>((rounded - 0x3c000000u) >> 20);
}

}  // namespace gnnd
