#include "server/sessions/host_row_gather.h"

#include <algorithm>
#include <atomic>

#include "kernels/cpu/sampler.h"

namespace gnnd {

// One batch's gather: its pieces (an array's rows, copied by ranges), cut into chunks the tasks take in turn.
struct HostRowGather::Job {
  struct Piece {
    int64_t rows = 0;
    std::function<void(int64_t begin, int64_t end)> copy;
  };
  struct Chunk {
    size_t piece = 0;
    int64_t begin = 0, end = 0;
  };
  std::vector<Piece> pieces;
  std::vector<Chunk> chunks;
  std::atomic<size_t> next_chunk{0};
  std::atomic<int> tasks_left{0};
  std::function<void()> done;
};

HostRowGather::HostRowGather(const GraphData& graph, std::vector<std::shared_ptr<const std::vector<bool>>> held,
                             int64_t chunk_rows)
    : graph_(graph), held_(std::move(held)), chunk_rows_(std::max<int64_t>(chunk_rows, 1)) {}

HostRowGather::~HostRowGather() { Wait(); }

void HostRowGather::Wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return in_flight_ == 0; });
}

void HostRowGather::Finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--in_flight_ == 0) idle_.notify_all();
}

void HostRowGather::Start(const BatchView& view, TaskRunner& workers, std::function<void()> done) {
  auto job = std::make_shared<Job>();
  job->done = std::move(done);
  const DatasetSchema& schema = graph_.schema;
  for (size_t t = 0; t < view.types.size(); ++t) {
    const BatchView::Type& type = view.types[t];
    const NodeTypeSchema& node_type = schema.node_types[t];
    const int64_t nodes = view.num_nodes(static_cast<int>(t));
    const int64_t* ids = type.node_ids;
    const void* features = node_type.features >= 0 ? graph_.arrays.data[node_type.features] : nullptr;
    if (type.features != nullptr && features != nullptr) {
      // A batch larger than its slot's rows (slots sized by the batches) gets what fits: it is not delivered.
      const std::vector<bool>* held = t < held_.size() ? held_[t].get() : nullptr;
      const size_t row_bytes = node_type.feature_row_bytes();
      auto* to = static_cast<std::byte*>(type.features);
      job->pieces.push_back({std::min(nodes, type.feature_rows), [=](int64_t begin, int64_t end) {
                               CopyRows(features, ids + begin, end - begin, row_bytes, to + begin * row_bytes,
                                        held);  // the tier's rows are the GPU's
                             }});
    }
    for (const BatchView::EdgeRows& rows : type.attrs) {
      const void* table = graph_.arrays.data[rows.array];
      job->pieces.push_back({nodes, [=](int64_t begin, int64_t end) {
                               CopyRows(table, ids + begin, end - begin, rows.row_bytes,
                                        static_cast<std::byte*>(rows.data) + begin * rows.row_bytes);
                             }});
    }
    if (type.labels != nullptr && node_type.labels >= 0) {
      const auto* labels = static_cast<const int64_t*>(graph_.arrays.data[node_type.labels]);
      int64_t* to = type.labels;
      job->pieces.push_back({type.num_nodes_per_hop[0], [=](int64_t begin, int64_t end) {
                               for (int64_t i = begin; i < end; ++i) to[i] = labels[ids[i]];
                             }});
    }
  }
  for (size_t r = 0; r < view.relations.size(); ++r) {
    const BatchView::Relation& edges = view.relations[r];
    if (edges.e_id == nullptr) continue;
    const int relation = static_cast<int>(r);
    job->pieces.push_back({view.num_edges(relation), [this, edges, relation](int64_t begin, int64_t end) {
                             GatherEdgeRows(graph_, edges, relation, begin, end);
                           }});
  }
  for (size_t p = 0; p < job->pieces.size(); ++p) {
    for (int64_t begin = 0; begin < job->pieces[p].rows; begin += chunk_rows_) {
      job->chunks.push_back({p, begin, std::min(begin + chunk_rows_, job->pieces[p].rows)});
    }
  }
  const int tasks = std::clamp(static_cast<int>(job->chunks.size()), 1, std::max(workers.threads(), 1));
  job->tasks_left = tasks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++in_flight_;
  }
  for (int k = 0; k < tasks; ++k) {
    workers.Post([this, job] {
      for (size_t c; (c = job->next_chunk.fetch_add(1)) < job->chunks.size();) {
        const Job::Chunk& chunk = job->chunks[c];
        job->pieces[chunk.piece].copy(chunk.begin, chunk.end);
      }
      if (job->tasks_left.fetch_sub(1) == 1) {  // the last task: every chunk is written
        job->done();
        Finished();
      }
    });
  }
}

}  // namespace gnnd
