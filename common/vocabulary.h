// The words gnnd's parts share with each other and with trainers, each defined once: where gnnd listens
// by default, feature dtype names, and device strings ("cpu", "cuda:N"). The names of a batch's arrays
// live with the batch layout (common/batch.h), dataset array and split names with the dataset
// (common/dataset.h).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/dtype.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd {

// gnnd's address unless configured; clients take $GNND_ADDRESS first (DefaultAddress()).
inline constexpr char kDefaultAddress[] = "unix:/tmp/gnnd.sock";
std::string DefaultAddress();

// "float32" | "float16" | "bfloat16" (UNSPECIFIED prints as "unspecified").
absl::string_view FeatureDTypeName(v1::FeatureDType t);
// The inverse; anything else is INVALID_ARGUMENT naming `field`.
absl::StatusOr<v1::FeatureDType> ParseFeatureDType(absl::string_view name, absl::string_view field);
// How feature values are stored (bfloat16 as its uint16 bits, as numpy has no bfloat16).
constexpr DType FeatureStorageDType(v1::FeatureDType t) {
  return t == v1::FEATURE_DTYPE_FLOAT16    ? DType::kFloat16
         : t == v1::FEATURE_DTYPE_BFLOAT16 ? DType::kUInt16
                                           : DType::kFloat32;
}

// Where a batch is made and delivered: "cpu" (also "") or "cuda:N".
struct Device {
  int cuda = -1;  // the CUDA ordinal, or -1 for the CPU

  bool is_cuda() const { return cuda >= 0; }
  std::string ToString() const;
};
// Parses a device string; errors are INVALID_ARGUMENT naming `field`: "open.device = 'gpu' (cpu or cuda:N)".
absl::StatusOr<Device> ParseDevice(absl::string_view text, absl::string_view field);

}  // namespace gnnd
