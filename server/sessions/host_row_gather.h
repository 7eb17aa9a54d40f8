// The host's part of a batch whose graph the GPU sampled (open.producer "host_gather"): its rows, gathered from
// the dataset in host memory into the batch's host copy on a pool's threads, so that no SM does it. What the
// sampled graph names — each type's feature rows (less those a GPU hot tier fills), node attribute rows and the
// seeds' labels; each relation's edge attribute rows by the CSC positions sampling left in e_id, then e_id the
// stored ids — exactly as the CPU backend's gathers write them (kernels/cpu/sampler.h). A batch's rows are split
// into chunks, so one batch uses every thread the pool gives it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "common/base/thread_pool.h"
#include "common/batch/layout.h"
#include "common/dataset/graph.h"

namespace gnnd {

class HostRowGather {
 public:
  // Rows a chunk copies at most (about a megabyte of 128-byte rows: enough to outweigh a task's cost).
  static constexpr int64_t kChunkRows = 8192;

  // `graph` outlives this object. `held`: per node type, the feature rows a GPU hot tier fills (empty or null:
  // none), which are left unwritten. `chunk_rows`: rows a task copies at a time.
  HostRowGather(const GraphData& graph, std::vector<std::shared_ptr<const std::vector<bool>>> held,
                int64_t chunk_rows = kChunkRows);
  // Waits for the gathers in flight: they write into buffers their callers free after this.
  ~HostRowGather();
  HostRowGather(const HostRowGather&) = delete;
  HostRowGather& operator=(const HostRowGather&) = delete;

  // Gathers the rows of `view`, a batch whose graph is sampled (node ids and counts; e_id as CSC positions), on
  // `workers`; `done` runs on one of them once every row is written (the last thing the gather does).
  void Start(const BatchView& view, TaskRunner& workers, std::function<void()> done);
  // Returns once every gather started has finished.
  void Wait();

 private:
  struct Job;
  void Finished();

  const GraphData& graph_;
  std::vector<std::shared_ptr<const std::vector<bool>>> held_;
  int64_t chunk_rows_;
  std::mutex mutex_;
  std::condition_variable idle_;
  int in_flight_ = 0;  // gathers started and not finished
};

}  // namespace gnnd
