// `gnnctl sample`: one batch, produced exactly as a trainer would receive it, written to an .npz so
// anyone can inspect it (and compare backends) with numpy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dataset/dataset.h"
#include "common/dataset/graph.h"
#include "common/wire/open_request.h"

namespace gnnd::gnnctl {

struct SampleRequest {
  std::string dataset_dir;
  std::string split = kDefaultSplit;
  int64_t batch_size = 1024;
  std::vector<int32_t> fanouts;
  uint64_t seed = 0;
  uint64_t epoch = 0;
  int64_t step = 0;
  int32_t rank = 0;
  int32_t world_size = 1;
  bool shuffle = true;
  bool drop_last = false;
  std::string device = "cpu";  // "cpu" or "cuda:N" (CSC copied to GPU memory, features read zero-copy)
  // Typed datasets: the node type of the seeds (empty: the one type with splits); `fanouts` then applies
  // to every relation.
  std::string node_type;
  // A link batch: the positives from this edge split of the graph (empty: a node batch), of the relation
  // `edge_type` names in a typed dataset (empty: the one with the split), negatives by `neg_sampling` (none, binary or
  // triplet; neg_amount per positive, strict: never an edge), seed-edge exclusion by `exclude` (none, self or reverse).
  std::string edge_split;
  std::string edge_type;
  std::string neg_sampling = "none";
  int32_t neg_amount = 1;
  bool strict = false;
  std::string exclude = "none";
  // LABOR-0 instead of the uniform rule (OpenSession.labor, layer_dependency, batch_dependency).
  bool labor = false;
  bool layer_dependency = false;
  int64_t batch_dependency = 0;
  // More of the open request: OpenSession fields in protobuf text format, each replacing what the fields
  // above set for it.
  std::string open_fields;
};

// Samples the request's batch on the chosen backend and writes its arrays (names as in the batch layout)
// to `out_npz`; returns a one-line description.
absl::StatusOr<std::string> SampleToNpz(const SampleRequest& request, const std::string& out_npz);
// The link batch of a request with an edge_split (sample_link.cc).
absl::StatusOr<std::string> SampleLinkToNpz(const SampleRequest& request, const GraphData& graph,
                                            const SessionShape& shape, const std::string& out_npz);

}  // namespace gnnd::gnnctl
