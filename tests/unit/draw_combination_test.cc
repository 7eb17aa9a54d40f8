// Which draw policies and batch shapes combine is decided by CheckDrawCombination alone: every pair is
// either accepted or refused with the options named, whatever the dataset.
#include <gtest/gtest.h>

#include <string>

#include "common/batch/spec.h"

namespace gnnd {
namespace {

struct Choice {
  bool weighted = false, temporal = false, labor = false, disjoint = false, induced = false;
};

SamplingSpec SpecOf(const Choice& c) {
  SamplingSpec spec = SamplingSpec::OneRelation(8, {2, 2});
  if (c.weighted) spec.edge_weights = {0};
  if (c.temporal) spec.time.edge_times = {0};
  spec.labor.active = c.labor;
  spec.disjoint = c.disjoint;
  spec.induced = c.induced;
  return spec;
}

TEST(DrawCombination, EachPolicyAloneAndTheShapesItAllows) {
  for (const Choice& c : {Choice{}, Choice{.weighted = true}, Choice{.temporal = true, .disjoint = true},
                          Choice{.labor = true}, Choice{.disjoint = true}, Choice{.weighted = true, .disjoint = true},
                          Choice{.induced = true}, Choice{.weighted = true, .induced = true}}) {
    EXPECT_TRUE(CheckDrawCombination(SpecOf(c)).ok()) << CheckDrawCombination(SpecOf(c));
  }
}

TEST(DrawCombination, RefusedPairsNameBothOptions) {
  const struct {
    Choice choice;
    absl::StatusCode code;
    std::string words;
  } cases[] = {
      {{.temporal = true}, absl::StatusCode::kInvalidArgument, "time_attr without disjoint"},
      {{.weighted = true, .temporal = true, .disjoint = true},
       absl::StatusCode::kUnimplemented,
       "weight_attr with time_attr: the weighted and temporal rules together are not built"},
      {{.weighted = true, .labor = true},
       absl::StatusCode::kUnimplemented,
       "labor with weight_attr: LABOR sampling with the weighted rule is not built"},
      {{.temporal = true, .labor = true, .disjoint = true},
       absl::StatusCode::kUnimplemented,
       "labor with time_attr: LABOR sampling with the temporal rule is not built"},
      {{.labor = true, .disjoint = true},
       absl::StatusCode::kUnimplemented,
       "labor with disjoint: LABOR sampling with disjoint subgraphs is not built"},
      {{.labor = true, .induced = true},
       absl::StatusCode::kUnimplemented,
       "induced with labor: induced subgraphs with LABOR sampling are not built"},
      {{.disjoint = true, .induced = true},
       absl::StatusCode::kUnimplemented,
       "induced with disjoint: induced subgraphs with disjoint subgraphs are not built"},
      {{.temporal = true, .disjoint = true, .induced = true},
       absl::StatusCode::kUnimplemented,
       "induced with time_attr: induced subgraphs with the temporal rule are not built"},
  };
  for (const auto& c : cases) {
    const absl::Status status = CheckDrawCombination(SpecOf(c.choice));
    EXPECT_EQ(status.code(), c.code) << status;
    EXPECT_NE(status.message().find(c.words), std::string::npos) << status;
  }
}

}  // namespace
}  // namespace gnnd
