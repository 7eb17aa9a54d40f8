// `gnnctl generate`: synthetic graphs shaped like the OGB benchmarks. Structure is R-MAT (power-law
// degrees) over "ranks", crossed with planted classes: an edge's endpoints share a class with
// probability `homophily`. A node's features are its class center plus Gaussian noise, so a model does
// better from a node's neighborhood than from the node alone. Node ids are a seeded permutation of
// the generator's internal order, so hubs and classes are spread over the id range as in real data.
// Everything is a pure function of the seed (Philox counters), so output does not depend on threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "gnnd/v1/dataset.pb.h"
#include "tools/dataset/edge_attrs.h"

namespace gnnd::dataset {

struct SyntheticSpec {
  std::string preset;
  int64_t num_nodes = 0;
  int64_t num_edges = 0;  // edges drawn; duplicates and self-loops are then dropped
  int64_t feature_dim = 0;
  int32_t num_classes = 0;
  double labeled_fraction = 1.0;                  // of all nodes
  double train_fraction = 0, valid_fraction = 0;  // of labeled nodes; the rest is test
  double homophily = 0.8;                         // P(an edge's source is drawn from its destination's class)
  double class_separation = 2.5;                  // distance between class centers, in units of the feature noise
};

// tiny | products (2.4 M nodes, 62 M edges at scale 1) | papers (111 M nodes, 1.6 B edges); scale > 0
// multiplies node and edge counts.
absl::StatusOr<SyntheticSpec> PresetSpec(const std::string& preset, double scale);

struct GenerateOptions {
  uint64_t seed = 0;
  v1::FeatureDType feature_dtype = v1::FEATURE_DTYPE_FLOAT32;
  int threads = 1;
  bool add_reverse = false;  // typed presets: (t, rev_r, h) beside every relation (h, r, t), as import does
  // Typed presets: the relation (its key src___rel___dst) that gets edge splits for link prediction: 5 % of
  // its edges each for valid and test, held out of the graph, and the rest, in the graph, for train.
  std::string link_relation;
  // Edge attributes edge_weight (float32 in (0, 1]) and edge_feat (4 x float32 in [-1, 1)), drawn per edge
  // (typed presets: per relation, a function of the edge's endpoints), with the edge ids.
  bool edge_attrs = false;
  // Times for the temporal rule: node_time = the node's id within its type (times grow with the ids) and the
  // int64 edge attribute "time" = the later endpoint's time (an edge is no older than its endpoints).
  bool temporal = false;
  // Node attributes, per type: flag (bool, every third node) and rank (2 x int64, a function of the node).
  bool node_attrs = false;
};

// Writes the synthetic node attributes of `num_nodes` nodes (GenerateOptions::node_attrs) at `scratch(name)`
// paths; returns them as import inputs (type `type`).
absl::StatusOr<std::vector<NodeAttributeInput>> WriteSyntheticNodeAttributes(
    const std::function<std::string(absl::string_view)>& scratch, const std::string& type, int64_t num_nodes);

absl::Status Generate(const SyntheticSpec& spec, const GenerateOptions& options, const std::string& out_dir);

// The id permutation (exposed for tests): a bijection of [0, n).
uint64_t ScrambleId(uint64_t x, uint64_t n, uint64_t seed);
uint64_t UnscrambleId(uint64_t y, uint64_t n, uint64_t seed);

}  // namespace gnnd::dataset
