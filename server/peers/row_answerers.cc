#include "server/peers/row_answerers.h"

#include <algorithm>

namespace gnnd {

RowAnswerers::RowAnswerers(int threads, std::vector<ServedTable> tables, std::shared_ptr<BufferPool> buffers,
                           std::function<void()> answered)
    : tables_(std::move(tables)), buffers_(std::move(buffers)), answered_(std::move(answered)) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { Run(); });
}

RowAnswerers::~RowAnswerers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    jobs_.clear();
  }
  job_ready_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void RowAnswerers::Submit(const void* connection, const peer_wire::Request& request, std::vector<int64_t> ids,
                          uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back({connection, request, std::move(ids), bytes});
  }
  job_ready_.notify_one();
}

std::vector<RowAnswerers::Answer> RowAnswerers::Take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(answers_, {});
}

void RowAnswerers::Run() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      job_ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Answer answer{job.connection, {job.request.sequence, 0, 0}, 0, nullptr, 0, nullptr};
    auto* buffer = new BufferPool::Buffer(buffers_->Take(job.bytes));
    std::shared_ptr<std::byte> rows(buffer->data.get(), [pool = buffers_, buffer](std::byte*) {
      pool->Give(std::move(*buffer));
      delete buffer;
    });
    if (absl::Status gathered = peer_wire::GatherRequested(job.request, job.ids.data(), tables_, rows.get());
        gathered.ok()) {
      answer.count = job.request.count;
      answer.rows = std::move(rows);
      answer.bytes = job.bytes;
    } else {
      answer.header.code = static_cast<int32_t>(gathered.code());
      answer.refusal = std::make_shared<const std::string>(gathered.message());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      answers_.push_back(std::move(answer));
    }
    answered_();
  }
}

}  // namespace gnnd
