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

TEST(Prometheus, RendersAPartsPeers) {
  v1::Stats stats;
  v1::DatasetInfo& d = *stats.add_datasets();
  d.set_name("igbh");
  v1::PartitionStats& p = *d.mutable_partition();
  p.set_rows_served(70);
  p.set_local_rows(5);
  p.set_remote_rows(9);
  p.set_cached_rows(4);
  p.set_remote_cache_resident_rows(3);
  v1::PeerStats& up = *p.add_peers();
  up.set_part(1);
  up.set_address("node1:7700");
  up.set_state("connected");
  up.set_rows(9000000000);
  v1::PeerStats& down = *p.add_peers();
  down.set_part(2);
  down.set_address("node2:7700");
  down.set_state("down");
  down.set_failures(3);
  const std::string text = RenderPrometheus(stats);
  EXPECT_TRUE(Has(text, R"(gnnd_peer_up{dataset="igbh",peer="1",address="node1:7700"} 1)")) << text;
  EXPECT_TRUE(Has(text, R"(gnnd_peer_up{dataset="igbh",peer="2",address="node2:7700"} 0)")) << text;
  EXPECT_TRUE(Has(text, R"(gnnd_peer_fetched_rows_total{dataset="igbh",peer="1",address="node1:7700"} 9000000000)"))
      << text;
  EXPECT_TRUE(Has(text, R"(gnnd_peer_fetch_failures_total{dataset="igbh",peer="2",address="node2:7700"} 3)")) << text;
  EXPECT_TRUE(Has(text, R"(gnnd_peer_served_rows_total{dataset="igbh"} 70)")) << text;
  EXPECT_TRUE(Has(text, R"(gnnd_partition_batch_rows_total{dataset="igbh",source="remote"} 9)")) << text;
  EXPECT_TRUE(Has(text, R"(gnnd_partition_batch_rows_total{dataset="igbh",source="remote_cache"} 4)")) << text;
  EXPECT_TRUE(Has(text, R"(gnnd_partition_remote_cache_rows{dataset="igbh"} 3)")) << text;
  EXPECT_EQ(RenderPrometheus(v1::Stats()).find("gnnd_peer"), std::string::npos);  // no part: no peer families
}

}  // namespace
}  // namespace gnnd
