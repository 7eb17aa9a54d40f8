// The opt-in HTTP listener for Prometheus: GET /metrics answers the text exposition that `render`
// returns; anything else is 404. Boost.Beast on one thread of its own; each connection gets 5 s.
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
