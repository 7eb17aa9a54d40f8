// The owner's side of its peers' row requests: each request's rows gathered on one of a few threads, the answers
// handed back to the network thread (PeerNetwork), which alone talks to UCX. A request's rows are random rows of a
// table far larger than the caches, so one thread's gather bounded what a part served (bench/runs/run-AY.md).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "server/peers/buffer_pool.h"
#include "server/peers/peer_wire.h"

namespace gnnd {

class RowAnswerers {
 public:
  struct Answer {
    const void* connection;  // the request's, as Submit was given it
    peer_wire::Rows header;
    uint32_t count = 0;               // rows (header.code 0)
    std::shared_ptr<std::byte> rows;  // a pooled buffer of `bytes` (header.code 0)
    size_t bytes = 0;
    std::shared_ptr<const std::string> refusal;  // the error's words (header.code not 0)
  };
  // `threads` gatherers over `tables` (which outlive this object); `answered` is called (from a gatherer) after each
  // answer is ready.
  RowAnswerers(int threads, std::vector<ServedTable> tables, std::shared_ptr<BufferPool> buffers,
               std::function<void()> answered);
  // Finishes the requests taken, drops the others, joins the threads.
  ~RowAnswerers();
  RowAnswerers(const RowAnswerers&) = delete;
  RowAnswerers& operator=(const RowAnswerers&) = delete;

  // Gathers the rows of `request` (checked by peer_wire::RequestedBytes: `bytes` of rows), ids[i] its i-th row.
  void Submit(const void* connection, const peer_wire::Request& request, std::vector<int64_t> ids, uint64_t bytes);
  // The answers ready so far.
  std::vector<Answer> Take();

 private:
  struct Job {
    const void* connection;
    peer_wire::Request request;
    std::vector<int64_t> ids;
    uint64_t bytes;
  };
  void Run();

  const std::vector<ServedTable> tables_;
  const std::shared_ptr<BufferPool> buffers_;
  const std::function<void()> answered_;
  std::mutex mutex_;
  std::condition_variable job_ready_;
  std::deque<Job> jobs_;
  std::vector<Answer> answers_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gnnd
