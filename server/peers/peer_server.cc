#include <netdb.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "server/peers/peer_network_impl.h"

namespace gnnd {

using peer_network_internal::kMaxAcceptedPerPeer;
using peer_network_internal::UcsError;

namespace {

std::string Describe(const sockaddr_storage& address) {
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&address), sizeof(address), host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "an unknown address";
  }
  return absl::StrCat(host, ":", port);
}

}  // namespace

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
    // A refused peer's connection is closed once it has the answer (flushed: it reaches the peer first).
    Send(ep, peer_wire::kWelcome, &welcome, sizeof(welcome), body, 0, [this, ep, refused](ucs_status_t) {
      if (refused && accepted.erase(ep) > 0) Close(ep, /*flush=*/true);
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

}  // namespace gnnd
