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

// Instances: several gnnd on one host, each namespacing its host-global names (shared-memory segments,
// default socket) by its instance name. The default instance, "gnnd", keeps the plain names.
inline constexpr char kDefaultInstance[] = "gnnd";
// [A-Za-z0-9_-], 1 to 32 characters; INVALID_ARGUMENT naming `field` otherwise.
absl::Status CheckInstanceName(absl::string_view name, absl::string_view field);
// The instance a listen address implies: the socket file's name less ".sock" and a leading "gnnd-"
// (unix:/tmp/gnnd-a.sock is instance "a", unix:/run/x.sock "x", unix:/tmp/gnnd.sock "gnnd"), or "tcp-PORT";
// characters an instance name may not have are dropped.
std::string InstanceOfAddress(absl::string_view address);
// An instance's default address: unix:/tmp/gnnd.sock for the default instance, unix:/tmp/gnnd-NAME.sock.
std::string InstanceAddress(absl::string_view instance);
// The first part of every shared-memory name of an instance: "gnnd" or "gnnd-NAME".
std::string InstancePrefix(absl::string_view instance);

// The feature dtypes a dataset may declare (the manifest's FeatureDType) and their element dtypes:
// float32, float16, bfloat16, float8_e4m3fn. nullopt for UNSPECIFIED or a value this build does not know.
std::optional<DType> FeatureElementDType(v1::FeatureDType t);
// An edge attribute's element dtype: a node feature dtype, or int64.
std::optional<DType> EdgeAttributeDType(v1::FeatureDType t);
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

// Where a CUDA session's batches are made: "sm", by the GPU's kernels (in the producer slice: SMs a trainer
// could use); "host_gather", sampled by the GPU's kernels, the rows gathered by gnnd's threads into pinned memory
// and uploaded by the copy engines (a GPU hot tier's rows still from GPU memory); or "host", by the CPU backend's
// producer on gnnd's threads, each batch then uploaded by the copy engines (no SM time); or "auto", host_gather
// or sm as the session's batches measure (server/sessions/auto_producer.h). A CPU session's batches are the host's.
enum class BatchProducer { kSm, kHostGather, kHost, kAuto };
std::string BatchProducerName(BatchProducer producer);
// Parses a producer's name; errors are INVALID_ARGUMENT naming `field` and the choices.
absl::StatusOr<BatchProducer> ParseBatchProducer(absl::string_view text, absl::string_view field);

}  // namespace gnnd
