#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "server/peers/peer_network_impl.h"

namespace gnnd {

using peer_network_internal::kChunkBytes;
using peer_network_internal::kReconnectAfter;
using peer_network_internal::kRefusedRetryAfter;
using peer_network_internal::RecvDone;
using peer_network_internal::UcsError;

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
        // Before its welcome the connection never was (a peer not listening yet, as when parts start one by one).
        const char* what = peer->state == Peer::State::kConnecting ? "cannot connect" : "connection lost";
        impl->Dropped(*peer, absl::StrCat(what, " (", UcsError(status), ")"), absl::StatusCode::kUnavailable,
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
    const size_t per_chunk = std::clamp<uint64_t>(kChunkBytes / bytes_per_row, 1, peer_wire::kMaxRequestRows);
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

}  // namespace gnnd
