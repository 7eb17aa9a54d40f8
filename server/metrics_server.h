// The opt-in HTTP listener for Prometheus: GET /metrics answers the text exposition that `render`
// returns; anything else is 404, a request that does not parse 400. Boost.Beast on one thread of its own;
// each connection gets 5 s, and at most 32 are served at once (past that, one is closed as it arrives), so
// whoever connects cannot take gnnd's descriptors from the gRPC socket. An accept that fails (out of
// descriptors or memory) is retried after a pause, logged once.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace gnnd {

class MetricsServer {
 public:
  // Listens on `address` (HOST:PORT; port 0 picks a free one). INVALID_ARGUMENT naming the address when
  // it cannot be parsed or bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address,
                                                              std::function<std::string()> render);
  ~MetricsServer();  // stops listening and waits for the thread
  int port() const;

 private:
  struct State;
  explicit MetricsServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace gnnd
