// The host's part of a host_gather batch (server/sessions/host_row_gather.h): a sampled batch's rows gathered on
// T threads, as gnnd's producer threads do for a GPU session with open.producer "host_gather".
//   host_gather_bench --dataset DIR [--batch_size 1024] [--fanouts 15,10,5] [--batches 20] [--threads 1,2,4,8,16]
// Prints one markdown row per thread count: rows a batch, row bytes, the median batch's ms, batches/s and GB/s of
// rows (the batch's graphs are sampled first, once, and gathered once untimed; the same batches at every thread
// count, one at a time).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "common/base/thread_pool.h"
#include "common/dataset/dataset.h"
#include "kernels/cpu/sampler.h"
#include "server/sessions/host_row_gather.h"

ABSL_FLAG(std::string, dataset, "", "dataset directory (e.g. gnnctl generate --preset products)");
ABSL_FLAG(int64_t, batch_size, 1024, "seeds per batch");
ABSL_FLAG(std::vector<std::string>, fanouts, std::vector<std::string>({"15", "10", "5"}), "fanouts per hop");
ABSL_FLAG(int, batches, 20, "batches gathered per thread count");
ABSL_FLAG(std::vector<std::string>, threads, std::vector<std::string>({"1", "2", "4", "8", "16"}), "thread counts");

namespace gnnd {
namespace {

int Main() {
  auto dataset = DatasetDir::Open(absl::GetFlag(FLAGS_dataset));
  if (!dataset.ok()) {
    std::fprintf(stderr, "%s\n", dataset.status().ToString().c_str());
    return 1;
  }
  const GraphData graph{dataset->manifest(), dataset->arrays(), dataset->schema()};
  std::vector<int32_t> fanouts;
  for (const std::string& f : absl::GetFlag(FLAGS_fanouts)) {
    int32_t k = 0;
    if (!absl::SimpleAtoi(f, &k)) return 2;
    fanouts.push_back(k);
  }
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  const SamplingSpec spec = SamplingSpec::OneRelation(batch_size, fanouts);
  auto capacity = ComputeBatchCapacity(spec, graph.schema, graph.MaxInDegrees());
  if (!capacity.ok()) {
    std::fprintf(stderr, "%s\n", capacity.status().ToString().c_str());
    return 1;
  }
  const BatchLayout layout = BatchLayout::Make(*capacity, spec, graph.schema);
  const int count = absl::GetFlag(FLAGS_batches);
  std::vector<std::vector<std::byte>> buffers(count, std::vector<std::byte>(layout.total_bytes));
  CpuSampler sampler(graph, spec, 1);
  const int64_t num_nodes = graph.schema.node_types[0].num_nodes;
  int64_t rows = 0;
  for (int b = 0; b < count; ++b) {
    std::vector<int64_t> seeds(batch_size);
    for (int64_t i = 0; i < batch_size; ++i) seeds[i] = (i * 7919 + b * 104729) % num_nodes;
    const BatchView view = BatchView::At(buffers[b].data(), layout);
    sampler.SampleGraph(0, b, seeds, view);
    rows += view.num_nodes(0);
  }
  const size_t row_bytes = graph.schema.node_types[0].feature_row_bytes();
  auto gather_all = [&](TaskRunner& pool, std::vector<double>* seconds) {
    HostRowGather gather(graph, {});
    for (int b = 0; b < count; ++b) {
      std::promise<void> done;
      const auto start = std::chrono::steady_clock::now();
      gather.Start(BatchView::At(buffers[b].data(), layout), pool, [&] { done.set_value(); });
      done.get_future().wait();
      if (seconds) seconds->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  };
  {  // untimed: the features' pages mapped in
    auto warm = ThreadPool::Create(4, "warm-up");
    if (!warm.ok()) return 1;
    gather_all(**warm, nullptr);
  }
  std::printf(
      "| threads | rows a batch | row bytes | ms a batch (median) | batches/s | GB/s |\n|---|---|---|---|---|---|\n");
  for (const std::string& t : absl::GetFlag(FLAGS_threads)) {
    int threads = 0;
    if (!absl::SimpleAtoi(t, &threads) || threads < 1) return 2;
    auto pool = ThreadPool::Create(threads, "gathers");
    if (!pool.ok()) return 1;
    std::vector<double> seconds;
    const auto all = std::chrono::steady_clock::now();
    gather_all(**pool, &seconds);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - all).count();
    std::sort(seconds.begin(), seconds.end());
    std::printf("| %d | %lld | %zu | %.2f | %.1f | %.1f |\n", threads, static_cast<long long>(rows / count), row_bytes,
                seconds[seconds.size() / 2] * 1e3, count / total, static_cast<double>(rows * row_bytes) / total / 1e9);
  }
  return 0;
}

}  // namespace
}  // namespace gnnd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return gnnd::Main();
}
