// PeerNetwork's inside (server/peers/peer_network.h), shared by its three files: peer_network.cc (the UCX worker,
// its thread and the public face), peer_client.cc (connections to the other parts: hellos, fetches, deadlines) and
// peer_server.cc (connections from them: hellos judged, rows answered).
#pragma once

#include <sys/socket.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/peers/buffer_pool.h"
#include "server/peers/peer_network.h"
#include "server/peers/peer_wire.h"
#include "server/peers/row_answerers.h"

namespace gnnd {

namespace peer_network_internal {

inline constexpr absl::Duration kReconnectAfter = absl::Seconds(1);
inline constexpr absl::Duration kRefusedRetryAfter = absl::Seconds(5);
inline constexpr uint64_t kChunkBytes = 1 << 20;  // rows per request message, by their bytes
inline constexpr size_t kMaxAcceptedPerPeer = 4;  // connections a listener keeps per other part

std::string UcsError(ucs_status_t status);
// Completion callbacks of UCX operations whose user data is a PeerNetwork::Impl::Op.
void OpDone(void* request, ucs_status_t status, void* user_data);
void RecvDone(void* request, ucs_status_t status, size_t length, void* user_data);

}  // namespace peer_network_internal

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
  // Closes `ep` at once (force), or with `flush` once what was sent on it has reached the peer (a refusal's
  // answer: a forced close may reset the connection before the peer reads it).
  void Close(ucp_ep_h ep, bool flush = false);

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

}  // namespace gnnd
