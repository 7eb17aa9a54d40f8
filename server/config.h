// The daemon's configuration: a text-format DaemonConfig file (proto/gnnd/v1/config.proto), command
// line flags on top, defaults filled in, every field checked with its path in the error.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/base/limits.h"
#include "gnnd/v1/config.pb.h"

namespace gnnd {

// Parses a config file (a regular file of at most kMaxConfigBytes); syntax errors name the file, line and
// column.
inline constexpr size_t kMaxConfigBytes = 1 << 20;
absl::StatusOr<v1::DaemonConfig> ReadDaemonConfig(const std::string& path);
// Fills defaults and checks every field ("datasets[1].name: ...").
absl::Status FinishDaemonConfig(v1::DaemonConfig& config);

// A parsed --listen / listen value.
struct ListenAddress {
  bool unix_socket = true;
  std::string path;    // unix
  std::string target;  // tcp: host:port as gRPC takes it
};
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& listen);

// metrics_address parsed: HOST:PORT ("[::1]:9400" for IPv6; port 0 picks one when bound).
struct HostPort {
  std::string host;
  int port = 0;
};
absl::StatusOr<HostPort> ParseMetricsAddress(const std::string& address);
// A peer's "HOST:PORT" or "tcp:HOST:PORT"; INVALID_ARGUMENT naming `what` otherwise.
absl::StatusOr<HostPort> ParsePeerAddress(absl::string_view address, absl::string_view what);
// peer_timeout: "10s" when empty; positive, at most 10 minutes.
absl::StatusOr<absl::Duration> ParsePeerTimeout(const std::string& value);
// The secret in peer_token_file, trailing whitespace dropped: PERMISSION_DENIED unless the file is a regular file
// that its owner (gnnd's user) alone may read or write; INVALID_ARGUMENT for fewer than 16 bytes.
absl::StatusOr<std::string> ReadPeerToken(const std::string& path);

// remote_cache: its bytes, 0 when empty.
absl::StatusOr<uint64_t> ParseRemoteCache(const std::string& value);

// prepare_gpus parsed: every GPU, or the listed ones (none: an empty list).
struct PrepareGpus {
  bool all = true;
  std::vector<int> devices;
};
absl::StatusOr<PrepareGpus> ParsePrepareGpus(const std::string& value);

// gpu_cache parsed: how much of a GPU's memory its hot tier may take.
struct GpuCacheSize {
  enum class Kind { kAuto, kBytes, kShare };
  Kind kind = Kind::kAuto;
  uint64_t bytes = 0;  // kBytes
  double share = 0;    // kShare: of the GPU's memory
  // The bytes for a GPU with `total` bytes of memory, `free` of them free now.
  uint64_t For(uint64_t free, uint64_t total) const;
};
absl::StatusOr<GpuCacheSize> ParseGpuCache(const std::string& value);

// "2GiB", "512MiB", "64KiB", "1TiB" or plain bytes.
absl::StatusOr<uint64_t> ParseByteSize(absl::string_view value);

// A dataset's feature_cache and look_ahead checked (errors start with `field`, e.g. "datasets[1]."), the
// look-ahead's default filled in.
inline constexpr int kDefaultLookAhead = 8, kMaxLookAhead = 1024;
absl::Status FinishDatasetConfig(v1::DatasetConfig& dataset, absl::string_view field);

}  // namespace gnnd
