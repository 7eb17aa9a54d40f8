// The words gnnd's parts share with each other and with trainers, each defined once: where gnnd listens
// by default, feature dtypes, and device strings ("cpu", "cuda:N"). The names of a batch's arrays
// live with the batch layout (common/batch/batch.h), dataset array and split names with the dataset
// (common/dataset/dataset.h).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/base/dtype.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd {

// gnnd's address unless configured; clients take $GNND_ADDRESS first (DefaultAddress()).
inline constexpr char kDefaultAddress[] = "unix:/tmp/gnnd.sock";
std::string DefaultAddress();

// The feature dtypes a dataset may declare (the manifest's FeatureDType) and their element dtypes:
// float32, float16, bfloat16, float8_e4m3fn. nullopt for UNSPECIFIED or a value this build does not know.
std::optional<DType> FeatureElementDType(v1::FeatureDType t);
// The element dtype's name ("unspecified" or "unknown (N)" otherwise).
std::string FeatureDTypeName(v1::FeatureDType t);
// The inverse; anything else is INVALID_ARGUMENT naming `field` and the choices.
absl::StatusOr<v1::FeatureDType> ParseFeatureDType(absl::string_view name, absl::string_view field);

// Where a batch is made and delivered: "cpu" (also "") or "cuda:N".
struct Device {
  int cuda = -1;  // the CUDA ordinal, or -1 for the CPU

  bool is_cuda() const { return cuda >= 0; }
  std::string ToString() const;
};
// Parses a device string; errors are INVALID_ARGUMENT naming `field`: "open.device = 'gpu' (cpu or cuda:N)".
absl::StatusOr<Device> ParseDevice(absl::string_view text, absl::string_view field);

}  // namespace gnnd
