#include "server/metrics_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "server/config.h"

namespace gnnd {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Connections served at once; one more is closed as soon as it is accepted. TCP has no peer identity to
// share by, so the bound is on all of them: whoever connects, the port holds at most this many of gnnd's
// descriptors, and the gRPC socket keeps the rest.
constexpr int kMaxConnections = 32;
// How long a connection may take to send its request and read the answer.
constexpr std::chrono::seconds kConnectionTimeout{5};
// A scrape is a GET with no body.
constexpr uint64_t kMaxRequestBodyBytes = 4096;
// How long accepting pauses after it failed (descriptors, memory) before it tries again.
constexpr std::chrono::milliseconds kAcceptRetry{100};

// One scrape: read a request, answer it, close. Counted in `open` while it lives (all on the io thread).
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const std::function<std::string()>& render, int& open)
      : stream_(std::move(socket)), render_(render), open_(open) {
    ++open_;
    parser_.body_limit(kMaxRequestBodyBytes);
  }
  ~Connection() { --open_; }

  void Start() {
    stream_.expires_after(kConnectionTimeout);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->Answer(error); });
  }

 private:
  void Answer(beast::error_code error) {
    // A request that does not parse gets 400; a peer that left or timed out gets nothing.
    const bool malformed = error && error.category() == http::make_error_code(http::error::bad_target).category() &&
                           error != http::error::end_of_stream && error != http::error::partial_message;
    if (error && !malformed) return;
    const http::request<http::string_body>& request = parser_.get();
    response_.version(malformed ? 11 : request.version());
    response_.keep_alive(false);
    response_.set(http::field::content_type, "text/plain");
    if (malformed) {
      response_.result(http::status::bad_request);
      response_.body() = absl::StrCat("bad request: ", error.message(), "\n");
    } else if (request.method() == http::verb::get && request.target() == "/metrics") {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      response_.body() = render_();
    } else {
      response_.result(http::status::not_found);
      response_.body() = "gnnd serves GET /metrics\n";
    }
    response_.prepare_payload();
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  beast::tcp_stream stream_;
  const std::function<std::string()>& render_;
  int& open_;
  beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> response_;
};

}  // namespace

struct MetricsServer::State {
  int open = 0;  // connections alive; before `io`, whose destruction ends the last ones
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer retry{io};
  std::function<std::string()> render;
  std::thread thread;
  bool accept_failing = false, full = false;  // each logged once per episode

  void Accept() {
    acceptor.async_accept([this](beast::error_code error, tcp::socket socket) {
      if (error == asio::error::operation_aborted || !acceptor.is_open()) return;  // stopping
      if (error) {  // out of descriptors or memory (another user's connections may be the cause): later
        if (!accept_failing) {
          LogWarning("metrics: accepting on port %d failed: %s; retrying every %d ms", port(), error.message(),
                     kAcceptRetry.count());
        }
        accept_failing = true;
        retry.expires_after(kAcceptRetry);
        retry.async_wait([this](beast::error_code wait_error) {
          if (!wait_error) Accept();
        });
        return;
      }
      if (accept_failing) LogInfo("metrics: accepting on port %d again", port());
      accept_failing = false;
      if (open >= kMaxConnections) {  // the socket closes as it goes out of scope
        if (!full) LogWarning("metrics: %d connections open, refusing more until some end", open);
        full = true;
      } else {
        full = false;
        std::make_shared<Connection>(std::move(socket), render, open)->Start();
      }
      Accept();
    });
  }

  int port() const {
    beast::error_code ignored;
    return acceptor.local_endpoint(ignored).port();
  }
};

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& address,
                                                                    std::function<std::string()> render) {
  GNND_ASSIGN_OR_RETURN(const HostPort where, ParseMetricsAddress(address));
  auto state = std::make_unique<State>();
  state->render = std::move(render);
  beast::error_code error;
  const auto endpoints = tcp::resolver(state->io).resolve(where.host, std::to_string(where.port), error);
  if (error || endpoints.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("metrics_address = '", address, "': ", error.message()));
  }
  const tcp::endpoint endpoint = *endpoints.begin();
  state->acceptor.open(endpoint.protocol(), error);
  if (!error) state->acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) state->acceptor.bind(endpoint, error);
  if (!error) state->acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    return absl::InvalidArgumentError(absl::StrCat("metrics_address = '", address, "': ", error.message()));
  }
  state->Accept();
  try {
    state->thread = std::thread([s = state.get()] { s->io.run(); });
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("metrics_address = '", address, "': no thread to serve it: ", e.what()));
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(state)));
}

MetricsServer::MetricsServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

MetricsServer::~MetricsServer() {
  state_->io.stop();
  state_->thread.join();
}

int MetricsServer::port() const { return state_->port(); }

}  // namespace gnnd
