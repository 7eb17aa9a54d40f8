#include "common/base/vocabulary.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/status.h"

namespace gnnd {

std::string DefaultAddress() {
  const char* env = std::getenv("GNND_ADDRESS");
  return env != nullptr && *env != '\0' ? env : kDefaultAddress;
}

namespace {
bool InstanceCharacter(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }
}  // namespace

absl::Status CheckInstanceName(absl::string_view name, absl::string_view field) {
  if (!name.empty() && name.size() <= 32 && std::all_of(name.begin(), name.end(), InstanceCharacter)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(field, " = ", Quoted(name), " (an instance name: 1 to 32 of A-Z a-z 0-9 _ -)"));
}

std::string InstanceOfAddress(absl::string_view address) {
  std::string raw;
  if (absl::ConsumePrefix(&address, "unix:")) {
    const size_t slash = address.rfind('/');
    if (slash != absl::string_view::npos) address.remove_prefix(slash + 1);
    (void)absl::ConsumeSuffix(&address, ".sock");
    if (address != kDefaultInstance) (void)absl::ConsumePrefix(&address, "gnnd-");  // InstanceAddress's inverse
    raw = std::string(address);
  } else {
    const size_t colon = address.rfind(':');
    raw = absl::StrCat("tcp-", colon == absl::string_view::npos ? address : address.substr(colon + 1));
  }
  std::string name;
  for (char c : raw) {
    if (InstanceCharacter(c) && name.size() < 32) name.push_back(c);
  }
  return name.empty() ? kDefaultInstance : name;
}

std::string InstanceAddress(absl::string_view instance) {
  return absl::StrCat("unix:/tmp/", InstancePrefix(instance), ".sock");
}

std::string InstancePrefix(absl::string_view instance) {
  return instance == kDefaultInstance ? std::string(kDefaultInstance) : absl::StrCat("gnnd-", instance);
}

namespace {
struct FeatureDTypeEntry {
  v1::FeatureDType proto;
  DType dtype;
};
constexpr FeatureDTypeEntry kFeatureDTypes[] = {
    {v1::FEATURE_DTYPE_FLOAT32, DType::kFloat32},
    {v1::FEATURE_DTYPE_FLOAT16, DType::kFloat16},
    {v1::FEATURE_DTYPE_BFLOAT16, DType::kBFloat16},
    {v1::FEATURE_DTYPE_FLOAT8_E4M3FN, DType::kFloat8E4M3FN},
};
}  // namespace

std::optional<DType> FeatureElementDType(v1::FeatureDType t) {
  for (const FeatureDTypeEntry& e : kFeatureDTypes) {
    if (e.proto == t) return e.dtype;
  }
  return std::nullopt;
}

std::optional<DType> EdgeAttributeDType(v1::FeatureDType t) {
  if (t == v1::FEATURE_DTYPE_INT64) return DType::kInt64;
  if (t == v1::FEATURE_DTYPE_BOOL) return DType::kBool;
  return FeatureElementDType(t);
}

std::string FeatureDTypeName(v1::FeatureDType t) {
  if (t == v1::FEATURE_DTYPE_INT64) return "int64";
  if (t == v1::FEATURE_DTYPE_BOOL) return "bool";
  if (std::optional<DType> dtype = FeatureElementDType(t)) return std::string(DTypeName(*dtype));
  return t == v1::FEATURE_DTYPE_UNSPECIFIED ? "unspecified" : absl::StrCat("unknown (", static_cast<int>(t), ")");
}

absl::StatusOr<v1::FeatureDType> ParseFeatureDType(absl::string_view name, absl::string_view field) {
  std::string choices;
  for (const FeatureDTypeEntry& e : kFeatureDTypes) {
    if (name == DTypeName(e.dtype)) return e.proto;
    absl::StrAppend(&choices, choices.empty() ? "" : ", ", DTypeName(e.dtype));
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quoted(name), " (one of ", choices, ")"));
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

std::string BatchProducerName(BatchProducer producer) {
  switch (producer) {
    case BatchProducer::kSm:
      return "sm";
    case BatchProducer::kHostGather:
      return "host_gather";
    case BatchProducer::kHost:
      return "host";
    case BatchProducer::kAuto:
      return "auto";
  }
  return "unknown";
}

absl::StatusOr<BatchProducer> ParseBatchProducer(absl::string_view text, absl::string_view field) {
  for (BatchProducer p : {BatchProducer::kSm, BatchProducer::kHostGather, BatchProducer::kHost, BatchProducer::kAuto}) {
    if (text == BatchProducerName(p)) return p;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, " = ", Quoted(text, 100), " (sm, host_gather, host or auto)"));
}

}  // namespace gnnd
