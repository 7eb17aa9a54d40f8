#include "server/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/file_io.h"
#include "common/base/status.h"
#include "common/base/text_proto.h"
#include "common/base/vocabulary.h"
#include "common/dataset/shm_store.h"

namespace gnnd {

absl::StatusOr<v1::DaemonConfig> ReadDaemonConfig(const std::string& path) {
  GNND_ASSIGN_OR_RETURN(FileDescriptor fd, OpenRegularFile(path, path));
  GNND_ASSIGN_OR_RETURN(std::string text, ReadAll(fd.get(), kMaxConfigBytes, path));
  v1::DaemonConfig config;
  GNND_RETURN_IF_ERROR(ParseTextProto(text, path, &config));
  return config;
}

absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& listen) {
  ListenAddress address;
  if (absl::StartsWith(listen, "unix:")) {
    address.path = listen.substr(5);
    if (address.path.empty() || address.path.size() >= 108) {
      return absl::InvalidArgumentError(absl::StrCat("listen: '", listen, "' needs a socket path of 1 to 107 bytes"));
    }
    return address;
  }
  const size_t colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 || !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("listen: '", listen, "' is neither unix:/path/to/socket nor host:port"));
  }
  address.unix_socket = false;
  address.target = listen;
  return address;
}

absl::StatusOr<HostPort> ParsePeerAddress(absl::string_view address, absl::string_view what) {
  absl::string_view rest = address;
  absl::ConsumePrefix(&rest, "tcp:");
  absl::StatusOr<HostPort> parsed = ParseMetricsAddress(std::string(rest));
  if (!parsed.ok() || parsed->port == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", Quoted(address), ": expected HOST:PORT (tcp:HOST:PORT)"));
  }
  return parsed;
}

absl::StatusOr<absl::Duration> ParsePeerTimeout(const std::string& value) {
  if (value.empty()) return absl::Seconds(10);
  absl::Duration timeout;
  if (!absl::ParseDuration(value, &timeout) || timeout <= absl::ZeroDuration() || timeout > absl::Minutes(10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("peer_timeout: ", Quoted(value), " (a duration such as 10s, at most 10m)"));
  }
  return timeout;
}

absl::StatusOr<std::string> ReadPeerToken(const std::string& path) {
  GNND_ASSIGN_OR_RETURN(FileDescriptor fd, OpenRegularFile(path, absl::StrCat("peer_token_file ", path)));
  struct stat st = {};
  if (fstat(fd.get(), &st) != 0) return absl::InternalError(absl::StrCat("peer_token_file ", path, ": fstat failed"));
  if ((st.st_mode & 077) != 0 || st.st_uid != geteuid()) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "peer_token_file %s: mode %04o, owner uid %d: the token must be readable by gnnd's user (uid %d) alone "
        "(chown it, chmod 600)",
        path, st.st_mode & 07777, st.st_uid, geteuid()));
  }
  GNND_ASSIGN_OR_RETURN(std::string token, ReadAll(fd.get(), 4096, absl::StrCat("peer_token_file ", path)));
  while (!token.empty() && absl::ascii_isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.size() < 16) {
    return absl::InvalidArgumentError(absl::StrCat("peer_token_file ", path, ": a token of ", token.size(),
                                                   " bytes; at least 16 are needed (openssl rand -hex 32)"));
  }
  return token;
}

absl::StatusOr<HostPort> ParseMetricsAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  HostPort parsed;
  if (colon == std::string::npos || colon == 0 || !absl::SimpleAtoi(address.substr(colon + 1), &parsed.port) ||
      parsed.port < 0 || parsed.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics_address = ", Quoted(address), " (HOST:PORT)"));
  }
  parsed.host = address.substr(0, colon);
  if (parsed.host.size() > 1 && parsed.host.front() == '[' && parsed.host.back() == ']') {
    parsed.host = parsed.host.substr(1, parsed.host.size() - 2);
  }
  return parsed;
}

absl::StatusOr<PrepareGpus> ParsePrepareGpus(const std::string& value) {
  if (value.empty() || value == "all") return PrepareGpus{};
  PrepareGpus gpus{.all = false, .devices = {}};
  if (value == "none") return gpus;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    int device = -1;
    if (!absl::SimpleAtoi(item, &device) || device < 0) {
      return absl::InvalidArgumentError(absl::StrCat("prepare_gpus: '", value, "' (all, none, or GPU numbers: 0,1)"));
    }
    gpus.devices.push_back(device);
  }
  return gpus;
}

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view value) {
  absl::string_view number = value;
  uint64_t unit = 1;
  for (const auto& [suffix, scale] : {std::pair<absl::string_view, uint64_t>{"KiB", uint64_t{1} << 10},
                                      {"MiB", uint64_t{1} << 20},
                                      {"GiB", uint64_t{1} << 30},
                                      {"TiB", uint64_t{1} << 40}}) {
    if (absl::ConsumeSuffix(&number, suffix)) {
      unit = scale;
      break;
    }
  }
  uint64_t count = 0;
  if (!absl::SimpleAtoi(number, &count) || count > UINT64_MAX / unit) {
    return absl::InvalidArgumentError(absl::StrCat("'", value, "' (bytes such as 20GiB, 512MiB or 1000000)"));
  }
  return count * unit;
}

absl::StatusOr<uint64_t> ParseRemoteCache(const std::string& value) {
  if (value.empty()) return 0;
  absl::StatusOr<uint64_t> bytes = ParseByteSize(value);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("remote_cache: ", Quoted(value), " (bytes such as 2GiB or 512MiB; 0 or empty: none)"));
  }
  return bytes;
}

absl::StatusOr<GpuCacheSize> ParseGpuCache(const std::string& value) {
  GpuCacheSize size;
  if (value.empty() || value == "auto") return size;
  const auto invalid = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu_cache: '", value, "' (auto, none, bytes such as 20GiB or 512MiB, or a share such as 25%)"));
  };
  if (value == "none") return GpuCacheSize{.kind = GpuCacheSize::Kind::kBytes};
  if (absl::EndsWith(value, "%")) {
    double percent = 0;
    if (!absl::SimpleAtod(value.substr(0, value.size() - 1), &percent) || !(percent >= 0 && percent <= 100)) {
      return invalid();
    }
    return GpuCacheSize{.kind = GpuCacheSize::Kind::kShare, .share = percent / 100};
  }
  const absl::StatusOr<uint64_t> bytes = ParseByteSize(value);
  if (!bytes.ok()) return invalid();
  return GpuCacheSize{.kind = GpuCacheSize::Kind::kBytes, .bytes = *bytes};
}

absl::Status FinishDatasetConfig(v1::DatasetConfig& d, absl::string_view field) {
  if (!d.feature_cache().empty()) {
    const absl::StatusOr<uint64_t> bytes = ParseByteSize(d.feature_cache());
    if (!bytes.ok() || *bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, "feature_cache: '", d.feature_cache(),
                                                     "' (bytes such as 2GiB or 512MiB; empty: features in memory)"));
    }
  }
  if (d.look_ahead() == 0) d.set_look_ahead(kDefaultLookAhead);
  if (d.look_ahead() < 1 || d.look_ahead() > kMaxLookAhead) {
    return absl::InvalidArgumentError(absl::StrCat(field, "look_ahead: ", d.look_ahead(), " (1 to ", kMaxLookAhead,
                                                   ", or 0 for ", kDefaultLookAhead, ")"));
  }
  return absl::OkStatus();
}

uint64_t GpuCacheSize::For(uint64_t free, uint64_t total) const {
  switch (kind) {
    case Kind::kBytes:
      return bytes;
    case Kind::kShare:
      return static_cast<uint64_t>(share * static_cast<double>(total));
    case Kind::kAuto:
      break;
  }
  // A quarter of the GPU, but never leaving trainers less than half of it.
  const uint64_t keep_free = total / 2;
  return free > keep_free ? std::min(total / 4, free - keep_free) : 0;
}

absl::Status FinishDaemonConfig(v1::DaemonConfig& config) {
  if (!config.instance().empty()) GNND_RETURN_IF_ERROR(CheckInstanceName(config.instance(), "instance"));
  // Unset: where clients look by default ($GNND_ADDRESS, else unix:/tmp/gnnd.sock), or the instance's own.
  if (config.listen().empty()) {
    config.set_listen(config.instance().empty() ? DefaultAddress() : InstanceAddress(config.instance()));
  }
  GNND_RETURN_IF_ERROR(ParseListenAddress(config.listen()).status());
  if (config.instance().empty()) config.set_instance(InstanceOfAddress(config.listen()));
  if (config.socket_mode() == 0) config.set_socket_mode(0660);
  if (config.socket_mode() > 0777) {
    return absl::InvalidArgumentError(absl::StrCat("socket_mode: ", config.socket_mode(), " is not a permission mode"));
  }
  if (config.default_slots() == 0) config.set_default_slots(kDefaultSlots);
  if (config.default_slots() < 1 || config.default_slots() > kMaxSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("default_slots: ", config.default_slots(), " (must be 1 to ", kMaxSlots, ")"));
  }
  if (config.max_session_bytes() == 0) config.set_max_session_bytes(kDefaultMaxSessionBytes);
  if (config.producer_threads() < 0 || config.producer_threads() > kMaxThreads) {
    return absl::InvalidArgumentError(absl::StrCat("producer_threads: ", config.producer_threads(), " (must be 1 to ",
                                                   kMaxThreads, ", or 0 for every core)"));
  }
  if (config.max_sessions() > kMaxSessions) {
    return absl::InvalidArgumentError(absl::StrCat("max_sessions: ", config.max_sessions(), " (must be 1 to ",
                                                   kMaxSessions, ", or 0 for ", kDefaultMaxSessions, ")"));
  }
  if (config.uid_share_percent() > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("uid_share_percent: ", config.uid_share_percent(), " (must be 1 to 100, or 0 for 50)"));
  }
  if (!config.has_producer_sms()) config.set_producer_sms(-1);  // auto: a small slice that grows as needed
  if (config.producer_sms() < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("producer_sms: ", config.producer_sms(), " (0: whole GPU, N: N SMs, -1: auto)"));
  }
  if (config.producer().empty()) config.set_producer("auto");
  GNND_RETURN_IF_ERROR(ParseBatchProducer(config.producer(), "producer").status());
  GNND_RETURN_IF_ERROR(ParsePrepareGpus(config.prepare_gpus()).status());
  if (!config.metrics_address().empty()) GNND_RETURN_IF_ERROR(ParseMetricsAddress(config.metrics_address()).status());
  GNND_RETURN_IF_ERROR(ParseGpuCache(config.gpu_cache()).status());
  for (int i = 0; i < config.peers_size(); ++i) {
    GNND_RETURN_IF_ERROR(ParsePeerAddress(config.peers(i), absl::StrCat("peers[", i, "]")).status());
  }
  if (!config.peer_listen().empty())
    GNND_RETURN_IF_ERROR(ParsePeerAddress(config.peer_listen(), "peer_listen").status());
  if (config.peers_size() == 1)
    return absl::InvalidArgumentError("peers: one address; a partition has 2 parts or more");
  if (config.peers_size() > 0 && config.peer_token_file().empty()) {
    return absl::InvalidArgumentError("peers: set peer_token_file too (the secret the parts' gnnd share)");
  }
  GNND_RETURN_IF_ERROR(ParsePeerTimeout(config.peer_timeout()).status());
  GNND_ASSIGN_OR_RETURN(const uint64_t remote_cache, ParseRemoteCache(config.remote_cache()));
  if (remote_cache > 0 && config.peers_size() == 0) {
    return absl::InvalidArgumentError("remote_cache: it keeps rows fetched from peers; set peers too");
  }
  std::set<std::string> names;
  for (int i = 0; i < config.datasets_size(); ++i) {
    const v1::DatasetConfig& d = config.datasets(i);
    const std::string field = absl::StrCat("datasets[", i, "]");
    if (absl::Status s = ShmDataset::CheckName(d.name()); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".name: ", s.message()));
    }
    if (!names.insert(d.name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".name: '", d.name(), "' appears twice"));
    }
    if (d.path().empty()) return absl::InvalidArgumentError(absl::StrCat(field, ".path: missing"));
    GNND_RETURN_IF_ERROR(FinishDatasetConfig(*config.mutable_datasets(i), absl::StrCat(field, ".")));
  }
  return absl::OkStatus();
}

}  // namespace gnnd
