// `gnnctl generate --preset mag | igbh`: synthetic typed graphs with the node types, relations and counts
// of ogbn-mag and IGBH (scaled by --scale). Sources are drawn with a power-law skew (a few hubs, a long
// tail), papers cite papers of their own class with probability `homophily`, and papers' features are
// their class center plus Gaussian noise, as in the homogeneous generator. Every value is a pure function of
// the seed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/dataset/synthetic.h"

namespace gnnd::dataset {

struct TypedSyntheticSpec {
  struct Type {
    std::string name;
    int64_t num_nodes = 0;
    int64_t feature_dim = 0;  // 0: no features
    int32_t num_classes = 0;  // 0: no labels
    double labeled_fraction = 0;
    double train_fraction = 0, valid_fraction = 0;  // of the labeled; the rest is test
  };
  struct Relation {
    std::string src, name, dst;
    int64_t num_edges = 0;
  };
  std::string preset;
  std::vector<Type> types;
  std::vector<Relation> relations;
  double homophily = 0.8;  // of a same-type relation into the labeled type
};

// mag (ogbn-mag: 1.9 M nodes, 21 M edges at scale 1) | igbh (IGBH-Full: 547 M nodes, 5.8 B edges); false
// when `preset` is neither.
bool IsTypedPreset(const std::string& preset);
absl::StatusOr<TypedSyntheticSpec> TypedPresetSpec(const std::string& preset, double scale);

// With options.feature_dtype (e.g. float8_e4m3fn for IGBH as MLPerf's top submissions store it).
absl::Status GenerateTyped(const TypedSyntheticSpec& spec, const GenerateOptions& options, const std::string& out_dir);

}  // namespace gnnd::dataset
