// CPU backend throughput: whole epochs of sampling + feature/label gather through CpuProducer.
//   sampler_bench --dataset DIR [--batch_size 1024] [--fanouts 15,10,5] [--labor | --weight_attr NAME]
//                 [--benchmark_repetitions=3]
// Reports batches/s and sampled edges/s per producer thread count.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "common/batch/seeds.h"
#include "common/dataset/dataset.h"
#include "server/sessions/producer.h"

ABSL_FLAG(std::string, dataset, "", "dataset directory (e.g. gnnctl generate --preset products)");
ABSL_FLAG(int64_t, batch_size, 1024, "seeds per batch");
ABSL_FLAG(std::vector<std::string>, fanouts, std::vector<std::string>({"15", "10", "5"}), "fanouts per hop");
ABSL_FLAG(int64_t, max_steps, 100, "steps per iteration (a prefix of the epoch)");
ABSL_FLAG(bool, labor, false, "LABOR-0 batches instead of uniform ones");
ABSL_FLAG(int64_t, batch_dependency, 1, "with --labor: GraphBolt's batch_dependency (r_t moves over K batches)");
ABSL_FLAG(std::string, weight_attr, "", "the edge attribute weighting the draws (the weighted rule; e.g. edge_weight)");

namespace gnnd {
namespace {

struct Fixture {
  DatasetDir dataset;
  GraphData graph;
  HomogeneousLayout layout;
  SamplingSpec spec;
};
Fixture* fixture = nullptr;

void BM_CpuEpoch(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t batch_size = absl::GetFlag(FLAGS_batch_size);
  const auto& m = fixture->graph.manifest;
  std::span<const int64_t> train(static_cast<const int64_t*>(fixture->graph.arrays[ArrayId::kTrain]), m.num_train());
  std::vector<HomogeneousBuffer> buffers(2 * threads, HomogeneousBuffer(fixture->layout));
  const std::unique_ptr<ThreadPool> workers = *ThreadPool::Create(threads, "the producers");
  std::vector<HomogeneousView> slots;
  for (HomogeneousBuffer& b : buffers) slots.push_back(b.view());
  int64_t batches = 0, edges = 0, nodes = 0;
  uint64_t epoch = 0;
  for (auto _ : state) {
    EpochSeeds seeds(train, {.seed = 1, .batch_size = batch_size}, epoch++);
    CpuProducer producer(*CpuProducer::InMemory({&fixture->graph, fixture->spec, std::nullopt, 1, {}},
                                                {AsBatchViews(slots), {}, nullptr}, threads),
                         static_cast<int>(slots.size()), epoch, std::move(seeds), *workers, threads);
    for (int64_t step = 0; step < absl::GetFlag(FLAGS_max_steps); ++step) {
      auto ready = producer.Next();
      if (!ready) break;
      edges += slots[ready->slot].num_edges();
      nodes += slots[ready->slot].num_nodes();
      ++batches;
      producer.Release(ready->slot);
    }
  }
  state.counters["batches_per_s"] = benchmark::Counter(static_cast<double>(batches), benchmark::Counter::kIsRate);
  state.counters["edges_per_s"] = benchmark::Counter(static_cast<double>(edges), benchmark::Counter::kIsRate);
  state.counters["nodes_per_batch"] = benchmark::Counter(static_cast<double>(nodes) / std::max<int64_t>(batches, 1));
}
BENCHMARK(BM_CpuEpoch)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace gnnd

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_dataset);
  if (dir.empty()) {
    std::fprintf(stderr, "sampler_bench: give --dataset DIR\n");
    return 2;
  }
  auto dataset = gnnd::DatasetDir::Open(dir);
  if (!dataset.ok()) {
    std::fprintf(stderr, "sampler_bench: %s\n", std::string(dataset.status().message()).c_str());
    return 1;
  }
  std::vector<int32_t> fanouts;
  for (const std::string& f : absl::GetFlag(FLAGS_fanouts)) {
    int32_t value = 0;
    if (!absl::SimpleAtoi(f, &value)) return 2;
    fanouts.push_back(value);
  }
  gnnd::GraphData graph{dataset->manifest(), dataset->arrays(), dataset->schema()};
  gnnd::SamplingSpec spec = gnnd::SamplingSpec::OneRelation(absl::GetFlag(FLAGS_batch_size), fanouts);
  spec.labor = {.active = absl::GetFlag(FLAGS_labor),
                .dependency = {.batches = static_cast<uint64_t>(absl::GetFlag(FLAGS_batch_dependency))}};
  if (const std::string weight = absl::GetFlag(FLAGS_weight_attr); !weight.empty()) {
    const auto& attrs = graph.schema.relations[0].edge_attrs;
    const auto it = std::find_if(attrs.begin(), attrs.end(), [&](const auto& a) { return a.name == weight; });
    if (it == attrs.end()) {
      std::fprintf(stderr, "sampler_bench: no edge attribute '%s'\n", weight.c_str());
      return 2;
    }
    spec.edge_weights = {static_cast<int>(it - attrs.begin())};
  }
  auto capacity =
      gnnd::ComputeHomogeneousCapacity(spec, graph.num_nodes(), graph.manifest.num_edges(), graph.MaxInDegree());
  if (!capacity.ok()) return 2;
  const gnnd::HomogeneousLayout layout =
      gnnd::HomogeneousLayout::Make(*capacity, static_cast<int>(fanouts.size()), gnnd::FeatureRowBytes(graph.manifest));
  gnnd::fixture = new gnnd::Fixture{std::move(*dataset), {}, layout, spec};
  gnnd::fixture->graph = {gnnd::fixture->dataset.manifest(), gnnd::fixture->dataset.arrays(),
                          gnnd::fixture->dataset.schema()};
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
