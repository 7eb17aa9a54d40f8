#include "server/metrics_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace gnnd {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// One scrape: read a request, answer it, close.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, const std::function<std::string()>& render)
      : stream_(std::move(socket)), render_(render) {}

  void Start() {
    stream_.expires_after(std::chrono::seconds(5));
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code error, size_t) { self->Answer(error); });
  }

 private:
  void Answer(beast::error_code error) {
    if (error) return;
    response_.version(request_.version());
    response_.keep_alive(false);
    if (request_.method() == http::verb::get && request_.target() == "/metrics") {
      response_.result(http::status::ok);
      response_.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      response_.body() = render_();
    } else {
      response_.result(http::status::not_found);
      response_.set(http::field::content_type, "text/plain");
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
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

struct MetricsServer::State {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  std::function<std::string()> render;
  std::thread thread;

  void Accept() {
    acceptor.async_accept([this](beast::error_code error, tcp::socket socket) {
      if (error) return;  // closed: stopping
      std::make_shared<Connection>(std::move(socket), render)->Start();
      Accept();
    });
  }
};

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& address,
                                                                    std::function<std::string()> render) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("metrics_address = '", address, "' (HOST:PORT)"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  auto state = std::make_unique<State>();
  state->render = std::move(render);
  beast::error_code error;
  const auto endpoints = tcp::resolver(state->io).resolve(host, std::to_string(port), error);
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
  state->thread = std::thread([s = state.get()] { s->io.run(); });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(state)));
}

MetricsServer::MetricsServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

MetricsServer::~MetricsServer() {
  asio::post(state_->io, [s = state_.get()] {
    beast::error_code ignored;
    s->acceptor.close(ignored);
  });
  state_->io.stop();
  state_->thread.join();
}

int MetricsServer::port() const { return state_->acceptor.local_endpoint().port(); }

}  // namespace gnnd
