#include "kernels/cuda/batch_graphs.h"

#include "common/base/cuda_check.h"
#include "common/base/status.h"

namespace gnnd::cuda {
namespace {

// Captures what `enqueue` launches on `stream` as an executable graph. Thread-local capture mode: other
// threads' CUDA calls (other sessions) go on as usual meanwhile.
absl::StatusOr<cudaGraphExec_t> Capture(cudaStream_t stream, const BatchGraphs::Enqueue& enqueue) {
  GNND_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "start capturing a batch");
  const absl::Status enqueued = enqueue();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!enqueued.ok() && graph != nullptr) cudaGraphDestroy(graph);  // a launch failed: what was captured
  GNND_RETURN_IF_ERROR(enqueued);
  GNND_CUDA(ended, "capture a batch");
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  GNND_CUDA(made, "instantiate a batch's graph");
  return exec;
}

}  // namespace

absl::StatusOr<BatchGraphs::Phases> BatchGraphs::For(const void* out, cudaStream_t stream, const Enqueue& sampling,
                                                     const Enqueue& gather) {
  if (stream != stream_) {
    Drop();
    stream_ = stream;
  }
  for (const Entry& e : entries_) {
    if (e.out == out) return e.phases;
  }
  GNND_ASSIGN_OR_RETURN(cudaGraphExec_t sampled, Capture(stream, sampling));
  auto gathered = Capture(stream, gather);
  if (!gathered.ok()) {
    cudaGraphExecDestroy(sampled);
    return gathered.status();
  }
  entries_.push_back({out, {sampled, *gathered}});
  return entries_.back().phases;
}

absl::Status BatchGraphs::Run(const void* out, cudaStream_t stream, bool use_graphs, const Enqueue& sampling,
                              const Enqueue& gather, bool gather_rows, cudaEvent_t sampled, bool* sampling_enqueued) {
  if (!use_graphs || stream == nullptr) {
    GNND_RETURN_IF_ERROR(sampling());
    *sampling_enqueued = true;
    if (sampled != nullptr) GNND_CUDA(cudaEventRecord(sampled, stream), "record the end of sampling");
    return gather_rows ? gather() : absl::OkStatus();
  }
  GNND_ASSIGN_OR_RETURN(const Phases graphs, For(out, stream, sampling, gather));
  GNND_CUDA(cudaGraphLaunch(graphs.sampling, stream), "launch a batch's sampling");
  *sampling_enqueued = true;
  if (sampled != nullptr) GNND_CUDA(cudaEventRecord(sampled, stream), "record the end of sampling");
  if (gather_rows) GNND_CUDA(cudaGraphLaunch(graphs.gather, stream), "launch a batch's gather");
  return absl::OkStatus();
}

void BatchGraphs::Drop() {
  for (const Entry& e : entries_) {
    cudaGraphExecDestroy(e.phases.sampling);
    cudaGraphExecDestroy(e.phases.gather);
  }
  entries_.clear();
}

}  // namespace gnnd::cuda
