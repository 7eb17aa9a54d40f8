#include "server/peers/peer_network.h"

#include <netdb.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "server/config.h"
#include "server/peers/peer_network_impl.h"

namespace gnnd {

void PreparePeerEnvironment() {
  // UCX reads its transports' settings from the environment only.
  setenv("UCX_TCP_CM_REUSEADDR", "y", /*overwrite=*/0);
  setenv("UCX_RDMA_CM_REUSEADDR", "y", /*overwrite=*/0);
}

namespace peer_network_internal {

void OpDone(void* request, ucs_status_t status, void* user_data) {
  auto* op = static_cast<PeerNetwork::Impl::Op*>(user_data);
  if (op->done) op->done(status);
  delete op;
  ucp_request_free(request);
}

void RecvDone(void* request, ucs_status_t status, size_t /*length*/, void* user_data) {
  OpDone(request, status, user_data);
}

std::string UcsError(ucs_status_t status) { return ucs_status_string(status); }

}  // namespace peer_network_internal

using peer_network_internal::OpDone;
using peer_network_internal::UcsError;

namespace {

absl::StatusOr<sockaddr_storage> Resolve(absl::string_view address, absl::string_view what) {
  GNND_ASSIGN_OR_RETURN(const HostPort parsed, ParsePeerAddress(address, what));
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string host = parsed.host.empty() ? "0.0.0.0" : parsed.host;
  if (const int error = getaddrinfo(host.c_str(), std::to_string(parsed.port).c_str(), &hints, &found); error != 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, " '", address, "': ", gai_strerror(error)));
  }
  sockaddr_storage out = {};
  std::memcpy(&out, found->ai_addr, found->ai_addrlen);
  freeaddrinfo(found);
  return out;
}

// AM callbacks: `arg` is the Impl, and every callback runs inside ucp_worker_progress on the network thread.
template <ucs_status_t (PeerNetwork::Impl::*Handler)(const void*, size_t, void*, size_t, const ucp_am_recv_param_t*)>
ucs_status_t Dispatch(void* arg, const void* header, size_t header_bytes, void* data, size_t bytes,
                      const ucp_am_recv_param_t* param) {
  return (static_cast<PeerNetwork::Impl*>(arg)->*Handler)(header, header_bytes, data, bytes, param);
}

}  // namespace

PeerNetwork::Impl::~Impl() {
  if (listener != nullptr) ucp_listener_destroy(listener);
  if (worker != nullptr) ucp_worker_destroy(worker);
  if (context != nullptr) ucp_cleanup(context);
  if (epoll_fd >= 0) close(epoll_fd);
  if (wake_fd >= 0) close(wake_fd);
}

absl::Status PeerNetwork::Impl::Init() {
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK) {
    return absl::UnavailableError(absl::StrCat("peers: UCX configuration: ", UcsError(s)));
  }
  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.name = "gnnd-peers";
  const ucs_status_t initialized = ucp_init(&params, config, &context);
  ucp_config_release(config);
  if (initialized != UCS_OK) return absl::UnavailableError(absl::StrCat("peers: UCX: ", UcsError(initialized)));
  ucp_worker_params_t worker_params = {};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;  // the network thread's alone
  if (ucs_status_t s = ucp_worker_create(context, &worker_params, &worker); s != UCS_OK) {
    return absl::UnavailableError(absl::StrCat("peers: UCX worker: ", UcsError(s)));
  }
  const std::pair<unsigned, ucp_am_recv_callback_t> handlers[] = {{peer_wire::kHello, &Dispatch<&Impl::OnHello>},
                                                                  {peer_wire::kWelcome, &Dispatch<&Impl::OnWelcome>},
                                                                  {peer_wire::kRequest, &Dispatch<&Impl::OnRequest>},
                                                                  {peer_wire::kRows, &Dispatch<&Impl::OnRows>}};
  for (const auto& [id, callback] : handlers) {
    ucp_am_handler_param_t handler = {};
    handler.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                         UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    handler.id = id;
    handler.cb = callback;
    handler.arg = this;
    handler.flags = UCP_AM_FLAG_WHOLE_MSG;
    if (ucs_status_t s = ucp_worker_set_am_recv_handler(worker, &handler); s != UCS_OK) {
      return absl::UnavailableError(absl::StrCat("peers: UCX message handler: ", UcsError(s)));
    }
  }
  const std::string& own = options.listen.empty() ? options.peers[options.part] : options.listen;
  GNND_ASSIGN_OR_RETURN(const sockaddr_storage listen_address, Resolve(own, "--peer-listen"));
  ucp_listener_params_t listener_params = {};
  listener_params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  listener_params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&listen_address);
  listener_params.sockaddr.addrlen = sizeof(listen_address);
  listener_params.conn_handler.cb = [](ucp_conn_request_h request, void* arg) {
    static_cast<Impl*>(arg)->conn_requests.push_back(request);
  };
  listener_params.conn_handler.arg = this;
  if (ucs_status_t s = ucp_listener_create(worker, &listener_params, &listener); s != UCS_OK) {
    return absl::UnavailableError(absl::StrCat("peers: cannot listen on ", own, ": ", UcsError(s)));
  }
  int worker_fd = -1;
  if (ucs_status_t s = ucp_worker_get_efd(worker, &worker_fd); s != UCS_OK) {
    return absl::UnavailableError(absl::StrCat("peers: UCX event descriptor: ", UcsError(s)));
  }
  epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_fd < 0 || wake_fd < 0) return absl::InternalError("peers: epoll or eventfd failed");
  for (int fd : {worker_fd, wake_fd}) {
    epoll_event event = {};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) return absl::InternalError("peers: epoll_ctl failed");
  }
  const int answering = std::clamp<int>(static_cast<int>(std::thread::hardware_concurrency()) / 4, 1, 8);
  answerers = std::make_unique<RowAnswerers>(answering, tables, buffers, [this] { Wake(); });
  for (uint32_t part = 0; part < options.peers.size(); ++part) {
    if (part == options.part) {
      peers.push_back(nullptr);
      continue;
    }
    auto peer = std::make_unique<Peer>();
    peer->part = part;
    peer->address = options.peers[part];
    GNND_ASSIGN_OR_RETURN(peer->sockaddr, Resolve(peer->address, absl::StrCat("--peers entry ", part)));
    peer->stats.part = part;
    peer->stats.address = peer->address;
    peers.push_back(std::move(peer));
  }
  PublishStats();
  return absl::OkStatus();
}

void PeerNetwork::Impl::Track(ucs_status_ptr_t request, Op* op) {
  if (request == nullptr) {  // done at once
    if (op->done) op->done(UCS_OK);
    delete op;
  } else if (UCS_PTR_IS_ERR(request)) {
    if (op->done) op->done(UCS_PTR_STATUS(request));
    delete op;
  } else {
    ++ops_in_flight;
    auto done = std::move(op->done);
    op->done = [this, done = std::move(done)](ucs_status_t status) {
      --ops_in_flight;
      if (done) done(status);
    };
  }
}

void PeerNetwork::Impl::Send(ucp_ep_h ep, unsigned id, const void* header, size_t header_bytes,
                             std::shared_ptr<const void> owner, const void* data, size_t bytes, uint32_t flags,
                             std::function<void(ucs_status_t)> done) {
  // The op keeps the data (and a copy of the header, which UCX may read until completion) alive.
  auto held_header = std::make_shared<std::string>(static_cast<const char*>(header), header_bytes);
  auto* op = new Op{[held_header, owner = std::move(owner), done = std::move(done)](ucs_status_t status) {
    if (done) done(status);
  }};
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = &OpDone;
  param.user_data = op;
  param.flags = flags | UCP_AM_SEND_FLAG_REPLY;
  Track(ucp_am_send_nbx(ep, id, held_header->data(), held_header->size(), data, bytes, &param), op);
}

void PeerNetwork::Impl::Close(ucp_ep_h ep, bool flush) {
  auto* op = new Op{};
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = &OpDone;
  param.user_data = op;
  param.flags = flush ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
  Track(ucp_ep_close_nbx(ep, &param), op);
}

void PeerNetwork::Impl::PublishStats() {
  std::vector<PeerStats> out;
  for (const auto& peer : peers) {
    if (peer == nullptr) continue;
    PeerStats stats = peer->stats;
    stats.state = peer->state == Peer::State::kConnected    ? "connected"
                  : peer->state == Peer::State::kConnecting ? "connecting"
                  : peer->state == Peer::State::kRefused    ? "refused"
                                                            : "down";
    if (peer->state != Peer::State::kConnected && !peer->error.empty()) stats.error = peer->error;
    out.push_back(std::move(stats));
  }
  std::lock_guard<std::mutex> lock(mutex);
  published_stats = std::move(out);
}

void PeerNetwork::Impl::Run() {
  while (!stopping.load()) {
    while (ucp_worker_progress(worker) != 0) {
    }
    for (ucp_conn_request_h request : std::exchange(conn_requests, {})) Accept(request);
    if (std::vector<RowAnswerers::Answer> answers = answerers->Take(); !answers.empty()) {
      SendAnswers(std::move(answers));
    }
    while (!deferred.empty()) {
      for (auto& work : std::exchange(deferred, {})) work();
    }
    std::deque<std::shared_ptr<RowFetch>> fresh;
    {
      std::lock_guard<std::mutex> lock(mutex);
      fresh.swap(submitted);
    }
    for (auto& fetch : fresh) {
      Peer& peer = *peers[fetch->part_];
      if (peer.state == Peer::State::kRefused && absl::Now() < peer.next_attempt) {
        Finish(*fetch, absl::Status(peer.refusal, absl::StrCat(Name(peer.part), ": ", peer.error)));
        continue;
      }
      peer.waiting.push_back(std::move(fetch));
    }
    const absl::Time now = absl::Now();
    for (auto& peer : peers) {
      if (peer == nullptr) continue;
      if ((peer->state == Peer::State::kDown || peer->state == Peer::State::kRefused) && now >= peer->next_attempt) {
        Connect(*peer);
      }
      if (peer->state == Peer::State::kConnected) SendWaiting(*peer);
    }
    // A connection that never said hello is closed after the timeout.
    for (auto it = accepted.begin(); it != accepted.end();) {
      if (!it->second.welcomed && now - it->second.opened > options.timeout) {
        LogWarning("peers: a connection from %s sent no hello within %s: closed", it->second.address,
                   absl::FormatDuration(options.timeout));
        Close(it->first);
        it = accepted.erase(it);
      } else {
        ++it;
      }
    }
    if (now >= next_expiry_check) {  // a pass over the requests in flight: ten times a second is enough
      ExpireDeadlines();
      next_expiry_check = now + absl::Milliseconds(100);
      stats_changed = true;
    }
    if (std::exchange(stats_changed, false)) PublishStats();
    if (!deferred.empty() || !conn_requests.empty()) continue;
    if (ucp_worker_arm(worker) == UCS_ERR_BUSY) continue;
    epoll_event events[2];
    (void)epoll_wait(epoll_fd, events, 2, 50);
    uint64_t drained;
    (void)!read(wake_fd, &drained, sizeof(drained));
  }
  // Stopping: the answerers finish, every fetch fails, every connection closes (force: no goodbyes), the operations
  // complete.
  answerers.reset();
  const absl::Status cancelled = absl::CancelledError("peers: gnnd is stopping");
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (auto& fetch : submitted) peers[fetch->part_]->waiting.push_back(fetch);
    submitted.clear();
  }
  for (auto& [sequence, chunk] : chunks) Finish(*chunk.fetch, cancelled);
  chunks.clear();
  for (auto& peer : peers) {
    if (peer == nullptr) continue;
    for (auto& fetch : peer->waiting) Finish(*fetch, cancelled);
    peer->waiting.clear();
    if (peer->ep != nullptr) Close(std::exchange(peer->ep, nullptr));
  }
  for (const auto& [ep, unused] : accepted) Close(ep);
  accepted.clear();
  for (ucp_conn_request_h request : std::exchange(conn_requests, {})) ucp_listener_reject(listener, request);
  const absl::Time give_up = absl::Now() + absl::Seconds(5);
  while ((ops_in_flight > 0 || !deferred.empty()) && absl::Now() < give_up) {
    ucp_worker_progress(worker);
    for (auto& work : std::exchange(deferred, {})) work();
  }
  if (ops_in_flight > 0) LogWarning("peers: %d UCX operations still in flight at exit", ops_in_flight);
}

// The public face.

PeerNetwork::PeerNetwork(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

absl::StatusOr<std::unique_ptr<PeerNetwork>> PeerNetwork::Start(PeerOptions options, std::vector<ServedTable> tables) {
  if (options.peers.size() < 2 || options.part >= options.peers.size()) {
    return absl::InvalidArgumentError(absl::StrCat("--peers: ", options.peers.size(), " addresses for part ",
                                                   options.part, " (one address per part, at least 2)"));
  }
  if (options.token.empty()) return absl::InvalidArgumentError("--peer-token-file: an empty token");
  if (tables.empty()) return absl::InvalidArgumentError("peers: no node types");
  options.part_rows.resize(tables.size());
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->tables = std::move(tables);
  GNND_RETURN_IF_ERROR(impl->Init());
  Impl* running = impl.get();
  impl->thread = std::thread([running] { running->Run(); });
  return std::unique_ptr<PeerNetwork>(new PeerNetwork(std::move(impl)));
}

PeerNetwork::~PeerNetwork() {
  impl_->stopping.store(true);
  impl_->Wake();
  impl_->thread.join();
}

std::shared_ptr<RowFetch> PeerNetwork::Fetch(uint32_t part, int type, std::vector<int64_t> rows) {
  auto fetch = std::make_shared<RowFetch>();
  fetch->part_ = part;
  fetch->type_ = type;
  fetch->started_ = absl::Now();
  fetch->deadline_ = fetch->started_ + impl_->options.timeout;
  fetch->bytes_ = rows.size() * impl_->tables[type].row_bytes;
  fetch->pool_ = impl_->buffers;
  fetch->data_ = impl_->buffers->Take(fetch->bytes_);
  fetch->rows_ = std::move(rows);
  if (fetch->rows_.empty() || part == impl_->options.part || part >= impl_->peers.size()) {
    fetch->done_ = true;
    if (!fetch->rows_.empty()) {
      fetch->status_ = absl::InvalidArgumentError(absl::StrCat("peers: part ", part, " is not a peer"));
    }
    return fetch;
  }
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->submitted.push_back(fetch);
  }
  impl_->Wake();
  return fetch;
}

absl::StatusOr<std::span<const std::byte>> PeerNetwork::Wait(RowFetch& fetch) {
  std::unique_lock<std::mutex> lock(fetch.mutex_);
  fetch.changed_.wait(lock, [&] { return fetch.done_; });
  if (!fetch.status_.ok()) return fetch.status_;
  return std::span<const std::byte>(fetch.data_.data.get(), fetch.bytes_);
}

std::vector<PeerStats> PeerNetwork::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->published_stats;
}

ServedStats PeerNetwork::served() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->served_stats;
}

const PeerOptions& PeerNetwork::options() const { return impl_->options; }

}  // namespace gnnd
