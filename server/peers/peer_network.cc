#include "server/peers/peer_network.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "server/config.h"
#include "server/peers/peer_wire.h"
#include "server/peers/row_answerers.h"

namespace gnnd {

void PreparePeerEnvironment() {
  // UCX reads its transports' settings from the environment only.
  setenv("UCX_TCP_CM_REUSEADDR", "y", /*overwrite=*/0);
  setenv("UCX_RDMA_CM_REUSEADDR", "y", /*overwrite=*/0);
}

namespace {

constexpr absl::Duration kReconnectAfter = absl::Seconds(1);
constexpr absl::Duration kRefusedRetryAfter = absl::Seconds(5);
constexpr uint64_t kChunkBytes = 1 << 20;  // rows per request message, by their bytes
constexpr uint32_t kMaxChunkRows = peer_wire::kMaxRequestRows;
constexpr size_t kMaxAcceptedPerPeer = 4;  // connections a listener keeps per other part

std::string Describe(const sockaddr_storage& address) {
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&address), sizeof(address), host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "an unknown address";
  }
  return absl::StrCat(host, ":", port);
}

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

}  // namespace

// Everything below runs on the network thread unless it says otherwise.
struct PeerNetwork::Impl {
  // A UCX operation in flight: what to do when it completes (with its status).
  struct Op {
    std::function<void(ucs_status_t)> done;
  };
  // A connection this node made to another part's gnnd.
  struct Peer {
    uint32_t part = 0;
    std::string address;
    sockaddr_storage sockaddr = {};
    ucp_ep_h ep = nullptr;
    enum class State { kDown, kConnecting, kConnected, kRefused } state = State::kDown;
    absl::Time next_attempt = absl::InfinitePast();
    std::string error;
    absl::StatusCode refusal = absl::StatusCode::kOk;
    std::deque<std::shared_ptr<RowFetch>> waiting;  // not yet sent: the peer is not connected
    PeerStats stats;
  };
  // One request message in flight: a part of a fetch.
  struct Chunk {
    std::shared_ptr<RowFetch> fetch;
    size_t first = 0, count = 0;
  };
  // A connection another node made to this one.
  struct Accepted {
    std::string address;
    bool welcomed = false;
    absl::Time opened;
  };

  PeerOptions options;
  std::vector<ServedTable> tables;
  // Fetches' and answers' rows (shared with the fetches, which may outlive the network).
  std::shared_ptr<BufferPool> buffers = std::make_shared<BufferPool>(size_t{256} << 20);
  absl::Time next_expiry_check = absl::InfinitePast();
  std::unique_ptr<RowAnswerers> answerers;  // gather the rows peers ask for
  bool stats_changed = false;               // published at the end of the loop's turn
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_listener_h listener = nullptr;
  int epoll_fd = -1, wake_fd = -1;
  std::thread thread;
  std::atomic<bool> stopping{false};
  int64_t ops_in_flight = 0;

  // Handed over by other threads.
  mutable std::mutex mutex;
  std::deque<std::shared_ptr<RowFetch>> submitted;
  std::vector<PeerStats> published_stats;
  ServedStats served_stats;

  std::vector<std::unique_ptr<Peer>> peers;  // by part; this part's is unused
  std::map<uint64_t, Chunk> chunks;          // by sequence number
  uint64_t next_sequence = 1;
  std::map<ucp_ep_h, Accepted> accepted;
  std::vector<ucp_conn_request_h> conn_requests;  // to accept or reject in the loop
  std::vector<std::function<void()>> deferred;    // work the AM callbacks leave for the loop

  ~Impl();
  absl::Status Init();
  void Run();
  void Wake() const {
    const uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof(one));
  }
  // UCX's peer failure detection excludes the shared-memory transports of Debian's UCX 1.13: shared memory is had
  // without it, a lost connection then found by the timeout.
  ucp_err_handling_mode_t ErrorMode() const {
    return options.shared_memory ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
  }
  std::string Name(uint32_t part) const { return absl::StrCat("peer ", part, " (", options.peers[part], ")"); }

  // Operations.
  void Track(ucs_status_ptr_t request, Op* op);
  // Sends header and data (which `owner` keeps alive until UCX is done with it).
  void Send(ucp_ep_h ep, unsigned id, const void* header, size_t header_bytes, std::shared_ptr<const void> owner,
            const void* data, size_t bytes, uint32_t flags, std::function<void(ucs_status_t)> done = nullptr);
  void Send(ucp_ep_h ep, unsigned id, const void* header, size_t header_bytes, std::shared_ptr<const std::string> data,
            uint32_t flags, std::function<void(ucs_status_t)> done = nullptr) {
    const std::string& bytes = *data;
    Send(ep, id, header, header_bytes, std::move(data), bytes.data(), bytes.size(), flags, std::move(done));
  }
  void Close(ucp_ep_h ep);

  // Client side.
  void Connect(Peer& peer);
  void Dropped(Peer& peer, const std::string& why, absl::StatusCode code, absl::Duration retry_after);
  void SendWaiting(Peer& peer);
  void Finish(RowFetch& fetch, absl::Status status);
  void ChunkDone(uint64_t sequence, absl::Status status);
  void ExpireDeadlines();
  Peer* PeerOf(ucp_ep_h ep) {
    for (auto& peer : peers) {
      if (peer != nullptr && peer->ep == ep && ep != nullptr) return peer.get();
    }
    return nullptr;
  }
  ucs_status_t OnWelcome(const void* header, size_t header_bytes, void* data, size_t bytes,
                         const ucp_am_recv_param_t* param);
  ucs_status_t OnRows(const void* header, size_t header_bytes, void* data, size_t bytes,
                      const ucp_am_recv_param_t* param);

  // Server side.
  void Accept(ucp_conn_request_h request);
  ucs_status_t OnHello(const void* header, size_t header_bytes, void* data, size_t bytes,
                       const ucp_am_recv_param_t* param);
  ucs_status_t OnRequest(const void* header, size_t header_bytes, void* data, size_t bytes,
                         const ucp_am_recv_param_t* param);
  // Sends answers to row requests whose connections are still open, counting them.
  void SendAnswers(std::vector<RowAnswerers::Answer> answers);
  void PublishStats();
};

namespace {

// AM callbacks: `arg` is the Impl, and every callback runs inside ucp_worker_progress on the network thread.
template <ucs_status_t (PeerNetwork::Impl::*Handler)(const void*, size_t, void*, size_t, const ucp_am_recv_param_t*)>
ucs_status_t Dispatch(void* arg, const void* header, size_t header_bytes, void* data, size_t bytes,
                      const ucp_am_recv_param_t* param) {
  return (static_cast<PeerNetwork::Impl*>(arg)->*Handler)(header, header_bytes, data, bytes, param);
}

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

void PeerNetwork::Impl::Close(ucp_ep_h ep) {
  auto* op = new Op{};
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.cb.send = &OpDone;
  param.user_data = op;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  Track(ucp_ep_close_nbx(ep, &param), op);
}

// Client side: connections to the other parts.

void PeerNetwork::Impl::Connect(Peer& peer) {
  ucp_ep_params_t params = {};
  params.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&peer.sockaddr);
  params.sockaddr.addrlen = sizeof(peer.sockaddr);
  params.err_mode = ErrorMode();
  params.err_handler.cb = [](void* arg, ucp_ep_h ep, ucs_status_t status) {
    auto* impl = static_cast<Impl*>(arg);
    impl->deferred.push_back([impl, ep, status] {
      if (Peer* peer = impl->PeerOf(ep)) {
        impl->Dropped(*peer, absl::StrCat("connection lost (", UcsError(status), ")"), absl::StatusCode::kUnavailable,
                      kReconnectAfter);
      }
    });
  };
  params.err_handler.arg = this;
  ++peer.stats.connects;
  if (ucs_status_t s = ucp_ep_create(worker, &params, &peer.ep); s != UCS_OK) {
    peer.ep = nullptr;
    Dropped(peer, absl::StrCat("cannot connect (", UcsError(s), ")"), absl::StatusCode::kUnavailable, kReconnectAfter);
    return;
  }
  peer.state = Peer::State::kConnecting;
  peer_wire::Hello hello = {};
  std::memcpy(hello.magic, peer_wire::kMagic, sizeof(hello.magic));
  hello.version = peer_wire::kVersion;
  hello.part = options.part;
  hello.dataset_id_bytes = static_cast<uint32_t>(options.dataset_id.size());
  hello.token_bytes = static_cast<uint32_t>(options.token.size());
  Send(peer.ep, peer_wire::kHello, &hello, sizeof(hello),
       std::make_shared<std::string>(options.dataset_id + options.token), UCP_AM_SEND_FLAG_EAGER);
}

void PeerNetwork::Impl::Dropped(Peer& peer, const std::string& why, absl::StatusCode code, absl::Duration retry_after) {
  const bool was_connected = peer.state == Peer::State::kConnected;
  if (peer.ep != nullptr) Close(std::exchange(peer.ep, nullptr));
  peer.state = code == absl::StatusCode::kUnavailable ? Peer::State::kDown : Peer::State::kRefused;
  stats_changed = true;
  peer.refusal = code;
  if (peer.error != why || was_connected) {
    LogWarning("peers: %s: %s; retrying every %s", Name(peer.part), why, absl::FormatDuration(retry_after));
  }
  peer.error = why;
  peer.next_attempt = absl::Now() + retry_after;
  // Requests sent on the lost connection fail now; fetches not sent yet wait for the next one (to their deadline),
  // unless the peer refused this node (a reconnect would not change that).
  const absl::Status failed(code, absl::StrCat(Name(peer.part), ": ", why));
  for (auto it = chunks.begin(); it != chunks.end();) {
    if (it->second.fetch->part_ == peer.part) {
      std::shared_ptr<RowFetch> fetch = it->second.fetch;
      it = chunks.erase(it);
      Finish(*fetch, failed);
    } else {
      ++it;
    }
  }
  if (peer.state == Peer::State::kRefused) {
    for (auto& fetch : peer.waiting) Finish(*fetch, failed);
    peer.waiting.clear();
  }
}

void PeerNetwork::Impl::Finish(RowFetch& fetch, absl::Status status) {
  {
    std::lock_guard<std::mutex> lock(fetch.mutex_);
    if (fetch.done_) return;
    fetch.done_ = true;
    fetch.status_ = std::move(status);
  }
  fetch.changed_.notify_all();
  stats_changed = true;
  PeerStats& stats = peers[fetch.part_]->stats;
  if (fetch.status_.ok()) {
    ++stats.fetches;
    stats.rows += fetch.rows_.size();
    stats.bytes += fetch.bytes_;
    stats.fetch_seconds += absl::ToDoubleSeconds(absl::Now() - fetch.started_);
  } else {
    ++stats.failures;
    stats.error = std::string(fetch.status_.message());
  }
}

void PeerNetwork::Impl::SendWaiting(Peer& peer) {
  while (!peer.waiting.empty()) {
    std::shared_ptr<RowFetch> fetch = std::move(peer.waiting.front());
    peer.waiting.pop_front();
    if (fetch->done_) continue;  // expired while waiting (only this thread sets done_)
    const uint64_t bytes_per_row = std::max<uint64_t>(tables[fetch->type_].row_bytes, 1);
    const size_t per_chunk = std::clamp<uint64_t>(kChunkBytes / bytes_per_row, 1, kMaxChunkRows);
    const size_t n = fetch->rows_.size();
    fetch->chunks_left_ = static_cast<int>((n + per_chunk - 1) / per_chunk);
    for (size_t first = 0; first < n; first += per_chunk) {
      const size_t count = std::min(per_chunk, n - first);
      const uint64_t sequence = next_sequence++;
      chunks[sequence] = Chunk{fetch, first, count};
      peer_wire::Request request = {sequence, static_cast<uint32_t>(fetch->type_), static_cast<uint32_t>(count)};
      auto ids = std::make_shared<std::string>(reinterpret_cast<const char*>(fetch->rows_.data() + first),
                                               count * sizeof(int64_t));
      Send(peer.ep, peer_wire::kRequest, &request, sizeof(request), std::move(ids), UCP_AM_SEND_FLAG_EAGER,
           [this, sequence, part = peer.part](ucs_status_t status) {
             if (status != UCS_OK && status != UCS_ERR_CANCELED && chunks.contains(sequence)) {
               if (Peer* p = peers[part].get(); p->state == Peer::State::kConnected) {
                 Dropped(*p, absl::StrCat("a request failed (", UcsError(status), ")"), absl::StatusCode::kUnavailable,
                         kReconnectAfter);
               }
             }
           });
    }
  }
}

void PeerNetwork::Impl::ChunkDone(uint64_t sequence, absl::Status status) {
  const auto it = chunks.find(sequence);
  if (it == chunks.end()) return;
  std::shared_ptr<RowFetch> fetch = std::move(it->second.fetch);
  chunks.erase(it);
  if (!status.ok()) {
    // The fetch fails as a whole; its other chunks' answers are dropped when they come.
    for (auto c = chunks.begin(); c != chunks.end();) {
      c = c->second.fetch == fetch ? chunks.erase(c) : std::next(c);
    }
    Finish(*fetch, std::move(status));
    return;
  }
  if (--fetch->chunks_left_ == 0) Finish(*fetch, absl::OkStatus());
}

void PeerNetwork::Impl::ExpireDeadlines() {
  const absl::Time now = absl::Now();
  const std::string after = absl::FormatDuration(options.timeout);
  for (auto& peer : peers) {
    if (peer == nullptr) continue;
    for (auto& fetch : peer->waiting) {
      if (!fetch->done_ && fetch->deadline_ <= now) {
        Finish(*fetch, absl::UnavailableError(absl::StrCat(Name(peer->part), ": not connected within ", after,
                                                           peer->error.empty() ? "" : " (", peer->error,
                                                           peer->error.empty() ? "" : ")")));
      }
    }
    std::erase_if(peer->waiting, [](const std::shared_ptr<RowFetch>& f) { return f->done_; });
  }
  for (const auto& [sequence, chunk] : chunks) {
    if (chunk.fetch->deadline_ <= now) {
      // It stopped answering: its connection is dropped (failing this fetch and every other sent to it).
      Dropped(*peers[chunk.fetch->part_], absl::StrCat("did not answer within ", after), absl::StatusCode::kUnavailable,
              kReconnectAfter);
      return;  // `chunks` changed; the next turn looks again
    }
  }
}

ucs_status_t PeerNetwork::Impl::OnWelcome(const void* header, size_t header_bytes, void* data, size_t bytes,
                                          const ucp_am_recv_param_t* param) {
  Peer* peer = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? PeerOf(param->reply_ep) : nullptr;
  if (peer == nullptr || peer->state != Peer::State::kConnecting || header_bytes != sizeof(peer_wire::Welcome) ||
      (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    return UCS_OK;  // not an answer to a hello of ours
  }
  peer_wire::Welcome welcome;
  std::memcpy(&welcome, header, sizeof(welcome));
  const std::string words(static_cast<const char*>(data), std::min<size_t>(bytes, 1024));
  std::string problem;
  absl::StatusCode code = absl::StatusCode::kFailedPrecondition;
  if (welcome.code != 0) {
    problem = absl::StrCat("refused this node: ", words);
    code = welcome.code > 0 && welcome.code <= 16 ? static_cast<absl::StatusCode>(welcome.code)
                                                  : absl::StatusCode::kPermissionDenied;
  } else if (welcome.version != peer_wire::kVersion || welcome.part != peer->part) {
    problem = absl::StrCat("answers as part ", welcome.part, " (protocol ", welcome.version, ")");
  } else if (welcome.num_tables != tables.size() || bytes != tables.size() * sizeof(peer_wire::TableShape)) {
    problem = absl::StrCat("serves ", welcome.num_tables, " node types, this part ", tables.size());
  } else {
    for (size_t t = 0; t < tables.size() && problem.empty(); ++t) {
      peer_wire::TableShape shape;
      std::memcpy(&shape, static_cast<const char*>(data) + t * sizeof(shape), sizeof(shape));
      const int64_t expected = options.part_rows[t].empty() ? 0 : options.part_rows[t][peer->part];
      if (shape.row_bytes != tables[t].row_bytes || shape.num_rows != expected) {
        problem = absl::StrCat("serves ", shape.num_rows, " rows of ", shape.row_bytes, " bytes of node type ", t,
                               " where the ownership map says ", expected, " of ", tables[t].row_bytes);
      }
    }
  }
  if (!problem.empty()) {
    deferred.push_back([this, peer, problem, code] { Dropped(*peer, problem, code, kRefusedRetryAfter); });
    return UCS_OK;
  }
  peer->state = Peer::State::kConnected;
  peer->error.clear();
  LogInfo("peers: connected to %s", Name(peer->part));
  stats_changed = true;
  deferred.push_back([this, peer] { SendWaiting(*peer); });
  return UCS_OK;
}

ucs_status_t PeerNetwork::Impl::OnRows(const void* header, size_t header_bytes, void* data, size_t bytes,
                                       const ucp_am_recv_param_t* param) {
  if (header_bytes != sizeof(peer_wire::Rows)) return UCS_OK;
  peer_wire::Rows rows;
  std::memcpy(&rows, header, sizeof(rows));
  const auto it = chunks.find(rows.sequence);
  Peer* peer = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ? PeerOf(param->reply_ep) : nullptr;
  if (it == chunks.end() || peer == nullptr || it->second.fetch->part_ != peer->part) return UCS_OK;  // stale
  const Chunk& chunk = it->second;
  const bool rendezvous = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  const uint64_t row_bytes = tables[chunk.fetch->type_].row_bytes;
  const std::string name = Name(peer->part);
  if (rows.code != 0) {
    const std::string words =
        rendezvous ? "" : std::string(static_cast<const char*>(data), std::min<size_t>(bytes, 1024));
    ChunkDone(rows.sequence, absl::InternalError(absl::StrCat(name, " could not send rows: ", words)));
    return UCS_OK;
  }
  if (bytes != chunk.count * row_bytes) {
    ChunkDone(rows.sequence, absl::DataLossError(absl::StrCat(name, " sent ", bytes, " bytes for ", chunk.count,
                                                              " rows of ", row_bytes)));
    return UCS_OK;
  }
  std::byte* out = chunk.fetch->data_.data.get() + chunk.first * row_bytes;
  if (!rendezvous) {
    std::memcpy(out, data, bytes);
    ChunkDone(rows.sequence, absl::OkStatus());
    return UCS_OK;
  }
  // A large answer: received straight into the fetch's rows (which the op keeps alive).
  const uint64_t sequence = rows.sequence;
  std::shared_ptr<RowFetch> fetch = chunk.fetch;
  deferred.push_back([this, data, out, bytes, sequence, fetch, name] {
    if (!chunks.contains(sequence)) {
      ucp_am_data_release(worker, data);
      return;
    }
    auto* op = new Op{[this, sequence, fetch, name](ucs_status_t status) {
      ChunkDone(sequence, status == UCS_OK
                              ? absl::OkStatus()
                              : absl::UnavailableError(absl::StrCat(name, ": receiving rows: ", UcsError(status))));
    }};
    ucp_request_param_t param = {};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am = &RecvDone;
    param.user_data = op;
    Track(ucp_am_recv_data_nbx(worker, data, out, bytes, &param), op);
  });
  return UCS_INPROGRESS;
}

// Server side: connections from the other parts.

void PeerNetwork::Impl::Accept(ucp_conn_request_h request) {
  ucp_conn_request_attr_t attr = {};
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  const std::string from =
      ucp_conn_request_query(request, &attr) == UCS_OK ? Describe(attr.client_address) : "an unknown address";
  if (accepted.size() >= kMaxAcceptedPerPeer * options.peers.size()) {
    LogWarning("peers: a connection from %s refused: %d connections open", from, accepted.size());
    ucp_listener_reject(listener, request);
    return;
  }
  ucp_ep_params_t params = {};
  params.field_mask =
      UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.conn_request = request;
  params.err_mode = ErrorMode();
  params.err_handler.cb = [](void* arg, ucp_ep_h ep, ucs_status_t /*status*/) {
    auto* impl = static_cast<Impl*>(arg);
    impl->deferred.push_back([impl, ep] {
      if (impl->accepted.erase(ep) > 0) impl->Close(ep);
    });
  };
  params.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  if (ucs_status_t s = ucp_ep_create(worker, &params, &ep); s != UCS_OK) {
    LogWarning("peers: a connection from %s failed: %s", from, UcsError(s));
    return;
  }
  accepted[ep] = Accepted{from, false, absl::Now()};
}

ucs_status_t PeerNetwork::Impl::OnHello(const void* header, size_t header_bytes, void* data, size_t bytes,
                                        const ucp_am_recv_param_t* param) {
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP)) return UCS_OK;
  const auto it = accepted.find(param->reply_ep);
  if (it == accepted.end() || it->second.welcomed) return UCS_OK;
  ucp_ep_h ep = param->reply_ep;
  const absl::string_view given(static_cast<const char*>(data),
                                (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) ? 0 : bytes);
  const absl::StatusOr<uint32_t> verdict = peer_wire::JudgeHello(
      header, header_bytes, given,
      {options.token, options.dataset_id, options.part, static_cast<uint32_t>(options.peers.size())});
  const absl::StatusCode code = verdict.status().code();
  const std::string why(verdict.status().message());
  peer_wire::Welcome welcome = {peer_wire::kVersion, options.part, static_cast<int32_t>(code),
                                static_cast<uint32_t>(tables.size())};
  auto body = std::make_shared<std::string>();
  if (code == absl::StatusCode::kOk) {
    it->second.welcomed = true;
    for (const ServedTable& table : tables) {
      const peer_wire::TableShape shape = {table.rows == nullptr ? 0 : table.num_rows, table.row_bytes};
      body->append(reinterpret_cast<const char*>(&shape), sizeof(shape));
    }
    LogInfo("peers: part %d connected from %s", *verdict, it->second.address);
  } else {
    *body = why;
    LogWarning("peers: a peer at %s refused: %s", it->second.address, why);
    std::lock_guard<std::mutex> lock(mutex);
    ++served_stats.refused;
  }
  deferred.push_back([this, ep, welcome, body, refused = code != absl::StatusCode::kOk] {
    if (!accepted.contains(ep)) return;
    // A refused peer's connection is closed once it has the answer.
    Send(ep, peer_wire::kWelcome, &welcome, sizeof(welcome), body, 0, [this, ep, refused](ucs_status_t) {
      if (refused && accepted.erase(ep) > 0) Close(ep);
    });
  });
  return UCS_OK;
}

ucs_status_t PeerNetwork::Impl::OnRequest(const void* header, size_t header_bytes, void* data, size_t bytes,
                                          const ucp_am_recv_param_t* param) {
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) || header_bytes != sizeof(peer_wire::Request)) {
    return UCS_OK;
  }
  const auto it = accepted.find(param->reply_ep);
  if (it == accepted.end()) return UCS_OK;
  peer_wire::Request request;
  std::memcpy(&request, header, sizeof(request));
  const absl::StatusOr<uint64_t> needed = it->second.welcomed && !(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
                                              ? peer_wire::RequestedBytes(request, bytes, tables)
                                              : absl::PermissionDeniedError("rows asked before a hello was accepted");
  if (needed.ok()) {  // gathered by an answerer, sent when it is ready (SendAnswers)
    std::vector<int64_t> ids(request.count);
    std::memcpy(ids.data(), data, bytes);
    answerers->Submit(param->reply_ep, request, std::move(ids), *needed);
    return UCS_OK;
  }
  RowAnswerers::Answer refused{param->reply_ep,
                               {request.sequence, static_cast<int32_t>(needed.status().code()), 0},
                               0,
                               nullptr,
                               0,
                               std::make_shared<const std::string>(needed.status().message())};
  deferred.push_back([this, refused] { SendAnswers({refused}); });
  return UCS_OK;
}

void PeerNetwork::Impl::SendAnswers(std::vector<RowAnswerers::Answer> answers) {
  uint64_t rows = 0, bytes = 0;
  for (RowAnswerers::Answer& answer : answers) {
    auto ep = static_cast<ucp_ep_h>(const_cast<void*>(answer.connection));
    rows += answer.count;
    bytes += answer.bytes;
    if (!accepted.contains(ep)) continue;  // the connection closed meanwhile
    if (answer.header.code == 0) {
      Send(ep, peer_wire::kRows, &answer.header, sizeof(answer.header), answer.rows, answer.rows.get(), answer.bytes,
           0);
    } else {
      Send(ep, peer_wire::kRows, &answer.header, sizeof(answer.header), answer.refusal, 0);
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  served_stats.requests += answers.size();
  served_stats.rows += rows;
  served_stats.bytes += bytes;
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

std::string PeerNetwork::PeerName(uint32_t part) const { return impl_->Name(part); }

}  // namespace gnnd
