// Accepts connections on gnnd's Unix socket itself, so that each peer's credentials can be read with
// SO_PEERCRED before the connection is handed to gRPC (AddInsecureChannelFromFd); gRPC names such a
// connection "fd:<n>", which is how a request finds its peer's credentials again.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "grpcpp/server.h"
#include "server/peer_credentials.h"

namespace gnnd {

class UnixListener {
 public:
  // Binds `path` (replacing a stale socket file, refusing a live one) with permission bits `mode`.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Bind(const std::string& path, mode_t mode);
  ~UnixListener();

  // Starts accepting into `server` on a thread of its own; RESOURCE_EXHAUSTED if it cannot start one.
  absl::Status Start(grpc::Server* server);
  // Stops accepting and removes the socket file.
  void Stop();
  // The credentials of the connection gRPC reports as `peer` ("fd:<n>"); unknown otherwise.
  PeerCredentials Lookup(const std::string& peer) const;

 private:
  UnixListener() = default;
  // How long accept waits after failing for want of descriptors or memory.
  static constexpr std::chrono::milliseconds kAcceptRetry{50};
  void Accept(grpc::Server* server);

  std::string path_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};  // a pipe that interrupts poll() on Stop
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<int, PeerCredentials> peers_;
};

}  // namespace gnnd
