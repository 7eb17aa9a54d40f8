// gnnctl partition: a dataset split into parts that several gnnd instances serve together (proto/gnnd/v1/
// dataset.proto, Partition). Every part keeps the whole structure, labels, splits, times and attributes (MLPerf's
// rules allow graph caching: each node samples locally), and the feature rows of the nodes it owns; each featured
// type's owner map (T.owner.npy: each node's part, T.owner_row.npy: its row there) is the same in every part.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace gnnd::dataset {

struct PartitionSpec {
  uint32_t parts = 2;
  // "random": each node's part a hash of (seed, its global id), MLPerf's reference method; "range": contiguous id
  // ranges of each type, part p holding ids [p n / parts, (p + 1) n / parts); "metis": METIS's k-way partition of
  // the structure (every relation, undirected, all types in one graph; fewer neighborhoods split), its seed `seed`.
  std::string method = "random";
  uint64_t seed = 0;
  int threads = 1;
};

// Each node's part under a random or range `spec` (node `id` of a type of `num_nodes`, `global` its id across types).
uint32_t OwnerOf(const PartitionSpec& spec, int64_t id, int64_t num_nodes, int64_t global);

// Writes OUT/part-0 ... OUT/part-(N-1) from the dataset at `dataset_dir` (a whole one): files it keeps are hard
// links where the file system allows, copies otherwise; OUT is written under a temporary name and renamed when
// every part has been validated, so a failed run leaves nothing. Returns one summary line per part.
absl::StatusOr<std::string> PartitionDataset(const std::string& dataset_dir, const std::string& out_dir,
                                             const PartitionSpec& spec);

}  // namespace gnnd::dataset
