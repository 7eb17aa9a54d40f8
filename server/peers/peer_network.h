// The nodes serving the other parts of a partitioned dataset (gnnctl partition): this gnnd serves its part's
// feature rows to them and fetches the rows they own, over UCX (TCP or shared memory here; InfiniBand, RoCE
// where a site's UCX has them). Rows move as active messages of many rows each, many in flight: a row at a time
// costs a round trip (issue 59's ucx_perftest figures), and the owner checks every row a peer asks for.
//
// Each gnnd listens on its own address and connects to every other part's. A connection is used once the
// other side has accepted this node's hello: the shared token and the partition's dataset id; a node
// without the token, or serving another partition, is refused naming which. One thread owns the UCX worker and
// does all of its calls; other threads hand it fetches and wait on them. A fetch that its peer does not answer
// within the timeout, or whose connection drops, fails with UNAVAILABLE naming the peer; the peer is then
// reconnected (a restarted gnnd is found again).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/peers/buffer_pool.h"
#include "server/peers/peer_wire.h"

namespace gnnd {

struct PeerOptions {
  std::vector<std::string> peers;  // "HOST:PORT" of each part's gnnd, by part
  std::string listen;              // "HOST:PORT" where this part listens; empty: peers[part]
  std::string token;               // the shared secret every part's gnnd holds
  std::string dataset_id;          // the partition's id: a peer serving another partition is refused
  uint32_t part = 0;
  absl::Duration timeout = absl::Seconds(10);  // a fetch unanswered this long fails, naming its peer
  // Let UCX move rows through shared memory between gnnd instances of one host. Debian's UCX 1.13 then does not
  // report lost connections (its shared-memory transports lack peer failure detection): a dead peer is found by
  // the timeout. Off: every connection detects a lost peer at once, and instances of one host use TCP.
  bool shared_memory = false;
  // Rows each part serves of each node type ([type][part]), from the ownership map: a peer whose tables
  // differ is refused.
  std::vector<std::vector<int64_t>> part_rows;
};

struct PeerStats {
  uint32_t part = 0;
  std::string address;
  std::string state;  // "connected", "connecting", "down" or "refused"
  std::string error;  // why it is not connected, or the last failure
  uint64_t rows = 0, bytes = 0, fetches = 0, failures = 0, connects = 0;
  double fetch_seconds = 0;  // summed from each fetch's start to its rows
};

// What this node served to its peers.
struct ServedStats {
  uint64_t requests = 0, rows = 0, bytes = 0, refused = 0;
};

// Rows asked of one peer; PeerNetwork::Wait gives them (rows.size() * row_bytes bytes, in order).
class RowFetch {
 public:
  ~RowFetch() {
    if (pool_ != nullptr) pool_->Give(std::move(data_));
  }

 private:
  friend class PeerNetwork;
  uint32_t part_ = 0;
  int type_ = 0;
  std::vector<int64_t> rows_;  // rows of the peer's table
  std::shared_ptr<BufferPool> pool_;
  BufferPool::Buffer data_;  // every byte up to bytes_ is a row's once the fetch is done
  size_t bytes_ = 0;
  absl::Time started_, deadline_;
  int chunks_left_ = 0;  // the network thread's
  std::mutex mutex_;
  std::condition_variable changed_;
  bool done_ = false;
  absl::Status status_;
};

class PeerNetwork {
 public:
  // Listens, starts the network thread and connects to the other parts (who may come up later). `tables` by node
  // type; they outlive the network. INVALID_ARGUMENT for a malformed address or part; UNAVAILABLE when UCX
  // cannot start or listen (the address in use).
  static absl::StatusOr<std::unique_ptr<PeerNetwork>> Start(PeerOptions options, std::vector<ServedTable> tables);
  // Fails the fetches in flight (CANCELLED) and closes every connection.
  ~PeerNetwork();
  PeerNetwork(const PeerNetwork&) = delete;
  PeerNetwork& operator=(const PeerNetwork&) = delete;

  // Starts fetching rows `rows` of node type `type` from part `part` (another part's rows, by their row in it).
  std::shared_ptr<RowFetch> Fetch(uint32_t part, int type, std::vector<int64_t> rows);
  // Blocks until `fetch` is done (at most the timeout after it started): its rows, or the error naming the peer.
  static absl::StatusOr<std::span<const std::byte>> Wait(RowFetch& fetch);

  // As of the network thread's last turn (within a tenth of a second).
  std::vector<PeerStats> stats() const;
  ServedStats served() const;
  const PeerOptions& options() const;

  struct Impl;

 private:
  explicit PeerNetwork(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A restarted gnnd takes its peer port again at once, its old connections in TIME_WAIT or not: sets UCX's
// environment for that unless the site's sets it. Call before threads start (it changes the environment).
void PreparePeerEnvironment();

}  // namespace gnnd
