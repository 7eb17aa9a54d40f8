#include "client/gnnctl/sample.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/gnnctl/npz.h"
#include "common/batch.h"
#include "common/dataset.h"
#include "common/parallel.h"
#include "common/seeds.h"
#include "common/status.h"
#include "kernels/cpu/sampler.h"

namespace gnnd::gnnctl {

absl::StatusOr<std::string> SampleToNpz(const SampleRequest& request, const std::string& out_npz) {
  const SamplingSpec sampling{request.batch_size, request.fanouts};
  GNND_RETURN_IF_ERROR(CheckSamplingSpec(sampling));
  const SeedScheduleSpec schedule{request.seed,       request.shuffle, request.drop_last,
                                  request.batch_size, request.rank,    request.world_size};
  GNND_RETURN_IF_ERROR(CheckSeedScheduleSpec(schedule));
  GNND_ASSIGN_OR_RETURN(ArrayId split, SplitArrayId(request.split));
  GNND_ASSIGN_OR_RETURN(DatasetDir dataset, DatasetDir::Open(request.dataset_dir));
  GNND_RETURN_IF_ERROR(dataset.Validate(DefaultThreads()));
  const v1::DatasetManifest& m = dataset.manifest();
  const GraphData graph{m, dataset.arrays()};

  const auto* split_ids = static_cast<const int64_t*>(graph.arrays[split]);
  const int64_t split_size = ArrayShape(m, split)[0];
  EpochSeeds seeds(std::span<const int64_t>(split_ids, split_size), schedule, request.epoch);
  if (request.step < 0 || request.step >= seeds.num_steps()) {
    return absl::OutOfRangeError(absl::StrCat("step = ", request.step, " (epoch ", request.epoch, " of split '",
                                              request.split, "' has ", seeds.num_steps(), " steps for this rank)"));
  }
  GNND_ASSIGN_OR_RETURN(BatchCapacity capacity,
                        ComputeBatchCapacity(sampling, m.num_nodes(), m.num_edges(), graph.MaxInDegree()));
  BatchBuffer buffer(BatchLayout::Make(capacity, static_cast<int>(request.fanouts.size()), FeatureRowBytes(m)));
  BatchView batch = buffer.view();
  CpuSampler sampler(graph, request.fanouts, request.seed);
  sampler.Sample(request.epoch, seeds.batch_index(request.step), seeds.batch(request.step), batch);

  const int64_t hops = static_cast<int64_t>(request.fanouts.size());
  const int64_t nodes = batch.num_nodes(), edges = batch.num_edges();
  GNND_RETURN_IF_ERROR(
      WriteNpz(out_npz, {
                            {"node_ids", DType::kInt64, {nodes}, batch.node_ids},
                            {"num_nodes_per_hop", DType::kInt32, {hops + 1}, batch.num_nodes_per_hop},
                            {"edge_src", DType::kInt32, {edges}, batch.edge_src},
                            {"edge_dst", DType::kInt32, {edges}, batch.edge_dst},
                            {"num_edges_per_hop", DType::kInt32, {hops}, batch.num_edges_per_hop},
                            {"features", ArrayDType(m, ArrayId::kFeatures), {nodes, m.feature_dim()}, batch.features},
                            {"labels", DType::kInt64, {batch.num_seeds()}, batch.labels},
                        }));
  return absl::StrFormat("%s: step %d of %d, %d seeds, %d nodes, %d edges", out_npz, request.step, seeds.num_steps(),
                         batch.num_seeds(), nodes, edges);
}

}  // namespace gnnd::gnnctl
