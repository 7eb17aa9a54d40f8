// A C++ trainer for the end-to-end tests: reads whole epochs from a running gnnd through the C++
// client and checks every batch, byte for byte, against the reference sampler run here on the same
// dataset directory.
//   trainer_check --address unix:/path --dataset NAME --dir DATASET_DIR [--batch-size B] [--fanouts 5,3]
//                 [--seed S] [--epochs N] [--rank r --world-size W] [--hold-after K] [--no-shuffle]
//                 [--slots-may-grow]
// Prints "checked N batches in S slots" and exits 0 when every batch matched; 1 on a mismatch, 2 on an error.
// --hold-after K stops releasing after K batches and sleeps (a trainer that never releases).
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "client/cpp/client.h"
#include "common/base/flags.h"
#include "common/batch/seeds.h"
#include "common/dataset/dataset.h"
#include "kernels/cpu/sampler.h"

ABSL_FLAG(std::string, address, "unix:/tmp/gnnd.sock", "gnnd address");
ABSL_FLAG(std::string, dataset, "", "dataset name in gnnd");
ABSL_FLAG(std::string, dir, "", "the same dataset's directory, for the reference");
ABSL_FLAG(std::string, split, "train", "split");
ABSL_FLAG(int64_t, batch_size, 256, "batch size");
ABSL_FLAG(std::vector<std::string>, fanouts, std::vector<std::string>({"5", "3"}), "fanouts");
ABSL_FLAG(uint64_t, seed, 0, "seed");
ABSL_FLAG(int, epochs, 1, "epochs to read");
ABSL_FLAG(int32_t, rank, 0, "rank");
ABSL_FLAG(int32_t, world_size, 1, "world size");
ABSL_FLAG(int64_t, hold_after, -1, "stop releasing after this many batches and sleep");
ABSL_FLAG(bool, no_shuffle, false, "seeds in split order");
ABSL_FLAG(bool, slots_may_grow, false, "slots sized by the batches (OpenSession.slots_may_grow)");

namespace gnnd {
namespace {

// A client call that failed: its status on stderr (the load test reads it), exit code 2.
int Failed(const absl::Status& status) {
  std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
  return 2;
}

bool Same(const HomogeneousView& a, const HomogeneousView& b, size_t row) {
  if (a.num_nodes() != b.num_nodes() || a.num_edges() != b.num_edges() || a.num_seeds() != b.num_seeds()) return false;
  const int64_t n = a.num_nodes(), e = a.num_edges();
  return std::memcmp(a.num_nodes_per_hop, b.num_nodes_per_hop, 4 * (a.num_hops + 1)) == 0 &&
         std::memcmp(a.num_edges_per_hop, b.num_edges_per_hop, 4 * a.num_hops) == 0 &&
         std::memcmp(a.node_ids, b.node_ids, 8 * n) == 0 && std::memcmp(a.edge_src, b.edge_src, 4 * e) == 0 &&
         std::memcmp(a.edge_dst, b.edge_dst, 4 * e) == 0 && std::memcmp(a.features, b.features, row * n) == 0 &&
         std::memcmp(a.labels, b.labels, 8 * a.num_seeds()) == 0;
}

int Run() {
  auto dir = DatasetDir::Open(absl::GetFlag(FLAGS_dir));
  if (!dir.ok()) return std::fprintf(stderr, "%s\n", std::string(dir.status().message()).c_str()), 2;
  std::vector<int32_t> fanouts;
  for (const std::string& f : absl::GetFlag(FLAGS_fanouts)) {
    int32_t v;
    if (!absl::SimpleAtoi(f, &v)) return 2;
    fanouts.push_back(v);
  }
  v1::OpenSession open;
  open.set_dataset(absl::GetFlag(FLAGS_dataset));
  open.set_split(absl::GetFlag(FLAGS_split));
  open.set_batch_size(absl::GetFlag(FLAGS_batch_size));
  for (int32_t f : fanouts) open.add_fanouts(f);
  open.set_seed(absl::GetFlag(FLAGS_seed));
  open.set_rank(absl::GetFlag(FLAGS_rank));
  open.set_world_size(absl::GetFlag(FLAGS_world_size));
  open.set_no_shuffle(absl::GetFlag(FLAGS_no_shuffle));
  open.set_slots_may_grow(absl::GetFlag(FLAGS_slots_may_grow));

  auto client = client::Client::Connect(absl::GetFlag(FLAGS_address));
  if (!client.ok()) return std::fprintf(stderr, "%s\n", std::string(client.status().message()).c_str()), 2;
  auto session = (*client)->OpenSession(open);
  if (!session.ok()) return std::fprintf(stderr, "%s\n", std::string(session.status().message()).c_str()), 2;

  const GraphData graph{dir->manifest(), dir->arrays(), dir->schema()};
  auto capacity = ComputeHomogeneousCapacity(SamplingSpec::OneRelation(open.batch_size(), fanouts), graph.num_nodes(),
                                             graph.manifest.num_edges(), graph.MaxInDegree());
  HomogeneousBuffer expected(
      HomogeneousLayout::Make(*capacity, static_cast<int>(fanouts.size()), FeatureRowBytes(graph.manifest)));
  CpuSampler reference(graph, {.fanouts = {fanouts}}, open.seed());
  const ArrayId split = *SplitArrayId(open.split());
  std::span<const int64_t> ids(static_cast<const int64_t*>(graph.arrays[split]), ArrayShape(graph.manifest, split)[0]);
  const SeedScheduleSpec schedule{open.seed(),       !open.no_shuffle(), false,
                                  open.batch_size(), open.rank(),        std::max(1, open.world_size())};

  int64_t checked = 0;
  for (int epoch = 0; epoch < absl::GetFlag(FLAGS_epochs); ++epoch) {
    if (absl::Status started = epoch > 0 ? (*session)->StartEpoch(epoch) : absl::OkStatus(); !started.ok())
      return Failed(started);
    EpochSeeds seeds(ids, schedule, epoch);
    int64_t steps = 0;
    for (;;) {
      auto batch = (*session)->Next();
      if (!batch.ok()) return Failed(batch.status());
      if (!batch->has_value()) break;
      const client::Batch& b = **batch;
      if (static_cast<int>(b.epoch) != epoch || b.step != steps) {
        std::fprintf(stderr, "got epoch %d step %d, expected %d/%d\n", int(b.epoch), int(b.step), epoch, int(steps));
        return 1;
      }
      reference.Sample(epoch, seeds.batch_index(b.step), seeds.batch(b.step), expected.view());
      if (!Same(b.view, expected.view(), FeatureRowBytes(graph.manifest))) {
        std::fprintf(stderr, "epoch %d step %d differs from the reference\n", epoch, int(b.step));
        return 1;
      }
      ++checked;
      ++steps;
      if (checked == absl::GetFlag(FLAGS_hold_after)) {
        std::printf("holding after %d batches\n", int(checked));
        std::fflush(stdout);
        ::pause();
      }
      if (absl::Status released = (*session)->Release(b.slot); !released.ok()) return Failed(released);
    }
    if (steps != seeds.num_steps()) {
      std::fprintf(stderr, "epoch %d ended after %d of %d steps\n", epoch, int(steps), int(seeds.num_steps()));
      return 1;
    }
  }
  std::printf("checked %d batches in %d slots\n", int(checked), (*session)->num_slots());
  return 0;
}

}  // namespace
}  // namespace gnnd

int main(int argc, char** argv) {
  gnnd::NormalizeFlagNames(argc, argv);
  absl::ParseCommandLine(argc, argv);
  return gnnd::Run();
}
