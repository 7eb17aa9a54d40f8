// The draw policy on the wire (common/wire/draw_request.h): OpenSession.draw and the API 1.x fields that alias
// it ask for the same session; a request gives the policy once; errors name the fields as the request spelled them.
#include "common/wire/draw_request.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_join.h"
#include "common/wire/open_request.h"
#include "google/protobuf/text_format.h"
#include "tests/unit/test_util.h"

namespace gnnd {
namespace {

v1::OpenSession Request(const std::string& fields) {
  v1::OpenSession open;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "dataset: 'd' split: 'train' batch_size: 16 fanouts: 4 fanouts: 3 num_slots: 1 " + fields, &open))
      << fields;
  return open;
}

TEST(DrawRequest, EachAliasNamesItsPolicy) {
  const struct {
    std::string aliases, draw;
  } cases[] = {
      {"", "uniform {}"},
      {"weight_attr: 'w'", "weighted { attr: 'w' }"},
      {"time_attr: 'time' temporal_strategy: 'last'", "temporal { attr: 'time' strategy: 'last' }"},
      {"time_attr: 'node_time'", "temporal { attr: 'node_time' }"},
      {"time_attr: 'time' time_window: 0", "temporal { attr: 'time' time_window: 0 }"},
      {"labor: true layer_dependency: true batch_dependency: 3",
       "labor { layer_dependency: true batch_dependency: 3 }"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<v1::DrawPolicy> aliased = DrawPolicyOf(Request(c.aliases));
    ASSERT_TRUE(aliased.ok()) << aliased.status();
    v1::DrawPolicy expected;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(c.draw, &expected));
    EXPECT_EQ(aliased->SerializeAsString(), expected.SerializeAsString()) << c.aliases;
    absl::StatusOr<v1::DrawPolicy> direct = DrawPolicyOf(Request("draw { " + c.draw + " }"));
    ASSERT_TRUE(direct.ok()) << direct.status();
    EXPECT_EQ(direct->SerializeAsString(), expected.SerializeAsString()) << c.draw;
  }
}

TEST(DrawRequest, ThePolicyIsGivenOnce) {
  const struct {
    std::string fields, words;
  } cases[] = {
      {"draw { weighted { attr: 'w' } } weight_attr: 'w'", "open.draw and open.weight_attr: give the draw policy once"},
      {"draw { uniform {} } labor: true", "open.draw and open.labor"},
      {"draw { labor {} } batch_dependency: 2", "open.draw and open.batch_dependency"},
      {"weight_attr: 'w' labor: true", "open.weight_attr and open.labor: two draw policies"},
      {"weight_attr: 'w' time_attr: 'time'", "open.weight_attr and open.time_attr: two draw policies"},
      {"batch_dependency: 4", "open.batch_dependency is LABOR's: set open.labor"},
      {"weight_attr: 'w' layer_dependency: true", "open.layer_dependency is LABOR's: set open.labor"},
      {"temporal_strategy: 'last'", "open.temporal_strategy is temporal sampling's: set open.time_attr"},
  };
  for (const auto& c : cases) {
    const absl::Status status = DrawPolicyOf(Request(c.fields)).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.fields;
    EXPECT_NE(status.message().find(c.words), std::string::npos) << status;
  }
}

// The session a request's draw gives, through the whole open check, as its spec's draw fields and slot size.
std::string SessionOf(const GraphData& graph, const v1::OpenSession& open) {
  absl::StatusOr<SessionShape> shape = CheckOpenRequest(open, graph, {graph.MaxInDegrees()}, {});
  if (!shape.ok()) return std::string(shape.status().message());
  const SamplingSpec& s = shape->sampling;
  return absl::StrCat("weights ", absl::StrJoin(s.edge_weights, ","), " times ", absl::StrJoin(s.time.edge_times, ","),
                      " node_level ", s.time.node_level, " strategy ", static_cast<int>(s.time.rule.strategy),
                      " window ", s.time.rule.window, " labor ", s.labor.active, " ", s.labor.dependency.layer, " ",
                      s.labor.dependency.batches, " disjoint ", s.disjoint, " bytes ", shape->slot_bytes);
}

TEST(DrawRequest, TheDrawMessageAndItsAliasesOpenTheSameSession) {
  for (bool typed : {false, true}) {
    const testing::GeneratedGraph g(typed, {.seed = 4, .threads = 2, .edge_attrs = true, .temporal = true});
    const std::string seeds = absl::StrCat(typed ? "node_type: 'paper' " : "", "edge_attrs { names: 'time' } ");
    const struct {
      std::string aliases, draw;
    } cases[] = {
        {"", "uniform {}"},
        {"weight_attr: 'edge_weight'", "weighted { attr: 'edge_weight' }"},
        {"time_attr: 'time' temporal_strategy: 'last'", "temporal { attr: 'time' strategy: 'last' }"},
        {"time_attr: 'node_time'", "temporal { attr: 'node_time' }"},
        {"time_attr: 'time' time_window: 7", "temporal { attr: 'time' time_window: 7 }"},
        {"labor: true batch_dependency: 3", "labor { batch_dependency: 3 }"},
    };
    for (const auto& c : cases) {
      const std::string aliased = SessionOf(g.graph(), Request(seeds + c.aliases));
      EXPECT_EQ(aliased, SessionOf(g.graph(), Request(seeds + "draw { " + c.draw + " }"))) << c.draw;
      EXPECT_NE(aliased.find("bytes"), std::string::npos) << c.aliases << ": " << aliased;
    }
  }
}

TEST(DrawRequest, ErrorsNameTheFieldsAsTheRequestSpelledThem) {
  const testing::GeneratedGraph g(false, {.seed = 4, .threads = 2, .edge_attrs = true, .temporal = true});
  const struct {
    std::string fields, words;
  } cases[] = {
      {"weight_attr: 'nope'", "open.weight_attr = 'nope': the dataset has no such edge attribute"},
      {"draw { weighted { attr: 'nope' } }",
       "open.draw.weighted.attr = 'nope': the dataset has no such edge attribute"},
      {"draw { weighted { attr: 'time' } }", "open.draw.weighted.attr = 'time': weights are one float32 an edge"},
      {"time_attr: 'edge_weight'", "open.time_attr = 'edge_weight': times are one int64 an edge"},
      {"draw { temporal { attr: 'time' strategy: 'first' } }",
       "open.draw.temporal.strategy = 'first' (must be uniform or last)"},
      {"draw { temporal {} }", "open.draw.temporal.attr is empty"},
      {"draw { temporal { attr: 'time' time_window: -1 } }", "open.draw.temporal.time_window = -1 (must be 0 or more"},
      {"time_attr: 'time' time_window: -2", "open.time_window = -2 (must be 0 or more"},
      {"time_window: 4", "open.time_window is temporal sampling's: set open.time_attr"},
      {"draw { labor { batch_dependency: -1 } }", "open.draw.labor.batch_dependency = -1 (must be 0 or more)"},
      {"draw { labor {} }", "open.draw.labor: the dataset has an edge attribute \"edge_weight\""},
      {"draw { labor {} } disjoint: true edge_attrs { names: 'time' }", "labor with disjoint"},
      {"seed_times: 5", "open.seed_times is temporal sampling's"},
  };
  for (const auto& c : cases) {
    const absl::Status status = CheckOpenRequest(Request(c.fields), g.graph(), {g.graph().MaxInDegrees()}, {}).status();
    EXPECT_FALSE(status.ok()) << c.fields;
    EXPECT_NE(status.message().find(c.words), std::string::npos) << c.fields << ": " << status;
  }
}

}  // namespace
}  // namespace gnnd
