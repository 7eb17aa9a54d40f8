// Row buffers reused instead of allocated per fetch or answer: a fresh buffer of megabytes costs a page fault per
// 4 KiB page at its first write, a fifth of a fetch's time (bench/peer_bench.cc under perf). Capacities are powers of
// two, so a buffer serves every later request of its class. Thread-safe.
#pragma once

#include <bit>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace gnnd {

class BufferPool {
 public:
  struct Buffer {
    std::unique_ptr<std::byte[]> data;  // not zeroed
    size_t capacity = 0;
  };
  // Keeps at most `max_spare_bytes` of buffers given back.
  explicit BufferPool(size_t max_spare_bytes) : max_spare_bytes_(max_spare_bytes) {}

  // A buffer of at least `bytes`: a spare one of its class, or a new one.
  Buffer Take(size_t bytes) {
    const size_t capacity = std::bit_ceil(std::max<size_t>(bytes, 4096));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = spare_.find(capacity); it != spare_.end()) {
        Buffer buffer{std::move(it->second), capacity};
        spare_.erase(it);
        spare_bytes_ -= capacity;
        return buffer;
      }
    }
    return {std::make_unique_for_overwrite<std::byte[]>(capacity), capacity};
  }
  // Back to the spares, unless they would exceed the bound.
  void Give(Buffer buffer) {
    if (buffer.data == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (spare_bytes_ + buffer.capacity > max_spare_bytes_) return;
    spare_bytes_ += buffer.capacity;
    spare_.emplace(buffer.capacity, std::move(buffer.data));
  }

 private:
  const size_t max_spare_bytes_;
  std::mutex mutex_;
  std::multimap<size_t, std::unique_ptr<std::byte[]>> spare_;  // by capacity
  size_t spare_bytes_ = 0;
};

}  // namespace gnnd
