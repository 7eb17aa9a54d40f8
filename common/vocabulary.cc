#include "common/vocabulary.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace gnnd {

std::string DefaultAddress() {
  const char* env = std::getenv("GNND_ADDRESS");
  return env != nullptr && *env != '\0' ? env : kDefaultAddress;
}

absl::string_view FeatureDTypeName(v1::FeatureDType t) {
  switch (t) {
    case v1::FEATURE_DTYPE_FLOAT32:
      return "float32";
    case v1::FEATURE_DTYPE_FLOAT16:
      return "float16";
    case v1::FEATURE_DTYPE_BFLOAT16:
      return "bfloat16";
    default:
      return "unspecified";
  }
}

absl::StatusOr<v1::FeatureDType> ParseFeatureDType(absl::string_view name, absl::string_view field) {
  for (v1::FeatureDType t : {v1::FEATURE_DTYPE_FLOAT32, v1::FEATURE_DTYPE_FLOAT16, v1::FEATURE_DTYPE_BFLOAT16}) {
    if (name == FeatureDTypeName(t)) return t;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quoted(name), " (float32, float16 or bfloat16)"));
}

std::string Device::ToString() const { return is_cuda() ? absl::StrCat("cuda:", cuda) : "cpu"; }

absl::StatusOr<Device> ParseDevice(absl::string_view text, absl::string_view field) {
  Device device;
  if (text.empty() || text == "cpu") return device;
  absl::string_view ordinal = text;
  if (absl::ConsumePrefix(&ordinal, "cuda:") && !ordinal.empty() && ordinal.size() <= 4 &&
      std::all_of(ordinal.begin(), ordinal.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      absl::SimpleAtoi(ordinal, &device.cuda)) {
    return device;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quoted(text), " (cpu or cuda:N)"));
}

}  // namespace gnnd
