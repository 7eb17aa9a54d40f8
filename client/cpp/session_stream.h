// A session's gRPC stream, read and written by two background threads: the reader queues gnnd's events
// as they arrive (BatchReady is there before the trainer asks) and the writer sends the trainer's
// requests in order. A trainer's Next and Release then only take and queue messages; a blocking gRPC
// read or write on its own thread costs it tens of microseconds per batch.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "gnnd/v1/service.grpc.pb.h"

namespace gnnd::client {

class SessionStream {
 public:
  using Stream = grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionEvent>;
  // Starts both threads on `stream`, which must outlive Join().
  explicit SessionStream(Stream* stream);
  ~SessionStream() { Join(); }
  SessionStream(const SessionStream&) = delete;
  SessionStream& operator=(const SessionStream&) = delete;

  // The next event, waiting for it; false once nothing is queued and the stream ended (gnnd closed
  // it, the context was cancelled) or a write failed.
  bool Take(v1::SessionEvent* event);
  // Queues a request; false if a write already failed (the stream is broken).
  bool Put(v1::SessionRequest request);
  // Half-closes the stream once the queued requests are written: gnnd then ends the session.
  void CloseWrites();
  // Whether gnnd's side of the stream ended within `timeout` (its status is then what Finish returns).
  bool ReadEndedWithin(std::chrono::milliseconds timeout);
  // Waits for both threads. Cancel the stream's context first, or the reader waits for gnnd.
  void Join();

 private:
  void ReadLoop();
  void WriteLoop();

  Stream* stream_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<v1::SessionEvent> events_;
  std::deque<v1::SessionRequest> requests_;
  bool read_ended_ = false, write_failed_ = false, writes_closing_ = false, stopping_ = false;
  std::thread reader_, writer_;
};

}  // namespace gnnd::client
