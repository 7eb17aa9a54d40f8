// The Prometheus exposition of gnnd's Stats: exact counters, escaped labels, cumulative histogram buckets
// ending in +Inf with _sum and _count, open sessions and held slots summed per dataset and device.
#include "server/prometheus.h"

#include "gtest/gtest.h"
#include "server/stage_histograms.h"

namespace gnnd {
namespace {

bool Has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(Prometheus, RendersCountersGaugesAndHistograms) {
  v1::Stats stats;
  v1::ServedTotals& totals = *stats.add_totals();
  totals.set_dataset("pa\"p\\ers");
  totals.set_device("cuda:0");
  totals.set_batches(3);
  totals.set_bytes(12345678901234);  // beyond a float's digits: must stay exact
  totals.set_sessions_opened(2);
  for (uint32_t held : {1u, 2u}) {
    v1::SessionStats& s = *stats.add_sessions();
    s.set_dataset("pa\"p\\ers");
    s.set_device("cuda:0");
    s.set_slots_held(held);
  }
  StageHistograms histograms;
  StageHistograms::Cell& produce = histograms.Get("produce", "d", "cpu");
  for (double seconds : {0.00004, 0.003, 0.003, 20.0}) produce.Observe(seconds);
  histograms.AppendTo(stats);
  const std::string text = RenderPrometheus(stats);

  const std::string where = R"({dataset="pa\"p\\ers",device="cuda:0"})";
  EXPECT_TRUE(Has(text, "# TYPE gnnd_batches_total counter")) << text;
  EXPECT_TRUE(Has(text, "gnnd_batches_total" + where + " 3")) << text;
  EXPECT_TRUE(Has(text, "gnnd_bytes_total" + where + " 12345678901234")) << text;
  EXPECT_TRUE(Has(text, "gnnd_sessions" + where + " 2")) << text;
  EXPECT_TRUE(Has(text, "gnnd_slots_held" + where + " 3")) << text;
  EXPECT_TRUE(Has(text, "# TYPE gnnd_stage_seconds histogram")) << text;
  const std::string stage = R"(stage="produce",dataset="d",device="cpu")";
  EXPECT_TRUE(Has(text, "gnnd_stage_seconds_bucket{" + stage + R"(,le="5e-05"} 1)")) << text;
  EXPECT_TRUE(Has(text, "gnnd_stage_seconds_bucket{" + stage + R"(,le="0.0025"} 1)")) << text;
  EXPECT_TRUE(Has(text, "gnnd_stage_seconds_bucket{" + stage + R"(,le="0.005"} 3)")) << text;
  EXPECT_TRUE(Has(text, "gnnd_stage_seconds_bucket{" + stage + R"(,le="10"} 3)")) << text;
  EXPECT_TRUE(Has(text, "gnnd_stage_seconds_bucket{" + stage + R"(,le="+Inf"} 4)")) << text;
  EXPECT_TRUE(Has(text, "gnnd_stage_seconds_count{" + stage + "} 4")) << text;
  EXPECT_TRUE(Has(text, "gnnd_stage_seconds_sum{" + stage + "} 20.006039999999999")) << text;
}

}  // namespace
}  // namespace gnnd
