#include "client/cpp/session_stream.h"

#include <utility>

namespace gnnd::client {

SessionStream::SessionStream(Stream* stream) : stream_(stream) {
  reader_ = std::thread([this] { ReadLoop(); });
  writer_ = std::thread([this] { WriteLoop(); });
}

void SessionStream::ReadLoop() {
  v1::SessionEvent event;
  while (stream_->Read(&event)) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(std::move(event));
    changed_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  read_ended_ = true;
  changed_.notify_all();
}

void SessionStream::WriteLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || writes_closing_ || !requests_.empty(); });
    if (requests_.empty()) {  // everything queued is written
      if (writes_closing_ && !stopping_) {
        lock.unlock();
        stream_->WritesDone();
      }
      return;
    }
    v1::SessionRequest request = std::move(requests_.front());
    requests_.pop_front();
    lock.unlock();
    const bool written = stream_->Write(request);
    lock.lock();
    if (!written) {
      write_failed_ = true;
      requests_.clear();
      changed_.notify_all();
      return;
    }
  }
}

bool SessionStream::Take(v1::SessionEvent* event) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !events_.empty() || read_ended_ || write_failed_; });
  if (events_.empty()) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

bool SessionStream::Put(v1::SessionRequest request) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (write_failed_) return false;
  requests_.push_back(std::move(request));
  changed_.notify_all();
  return true;
}

void SessionStream::CloseWrites() {
  std::lock_guard<std::mutex> lock(mutex_);
  writes_closing_ = true;
  changed_.notify_all();
}

bool SessionStream::ReadEndedWithin(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return read_ended_; });
}

void SessionStream::Join() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    changed_.notify_all();
  }
  if (writer_.joinable()) writer_.join();
  if (reader_.joinable()) reader_.join();
}

}  // namespace gnnd::client
