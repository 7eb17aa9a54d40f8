#include "server/prometheus.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace gnnd {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

std::string Format(const Labels& labels) {
  if (labels.empty()) return "";
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string value = absl::StrReplaceAll(labels[i].second, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
    absl::StrAppend(&out, i ? "," : "", labels[i].first, "=\"", value, "\"");
  }
  return out + "}";
}

// One metric family: HELP and TYPE once, then its samples.
class Family {
 public:
  Family(std::string& out, const std::string& name, const std::string& type, const std::string& help)
      : out_(out), name_(name) {
    absl::StrAppend(&out_, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  }
  // Counters and byte counts exactly; seconds with every digit a double has.
  void Sample(uint64_t value, const Labels& labels = {}, const std::string& suffix = "") {
    absl::StrAppend(&out_, name_, suffix, Format(labels), " ", value, "\n");
  }
  void Sample(double value, const Labels& labels = {}, const std::string& suffix = "") {
    absl::StrAppend(&out_, name_, suffix, Format(labels), " ", absl::StrFormat("%.17g", value), "\n");
  }

 private:
  std::string& out_;
  const std::string name_;
};

Labels Where(const std::string& dataset, const std::string& device) {
  return {{"dataset", dataset}, {"device", device}};
}

// Datasets whose features stay on storage (feature_cache): the cache's rows by outcome, the reads.
void AppendFeatureCacheMetrics(const v1::Stats& stats, std::string& out) {
  std::vector<std::pair<std::string, v1::FeatureCacheStats>> caches;
  for (const v1::DatasetInfo& d : stats.datasets()) {
    for (const v1::FeatureCacheStats& c : d.feature_caches()) caches.emplace_back(d.name(), c);
  }
  if (caches.empty()) return;
  Family rows(out, "gnnd_feature_cache_rows_total", "counter",
              "Feature rows of a dataset on storage by the tier that served them: hit (the host cache, cached or "
              "read ahead), miss (read by the gather itself), gpu_tier (the GPU hot tier, for GPU sessions).");
  Family prefetched(out, "gnnd_feature_prefetched_rows_total", "counter", "Feature rows read ahead of their gather.");
  Family bypassed(out, "gnnd_feature_bypassed_rows_total", "counter",
                  "Of the missed feature rows, those read straight into their batch (worth less than any cached row).");
  Family warmed(out, "gnnd_feature_warmed_rows_total", "counter",
                "Feature rows read when the cache opened (its hottest rows).");
  Family bytes(out, "gnnd_feature_read_bytes_total", "counter", "Bytes read from feature files on storage.");
  Family reads(out, "gnnd_feature_reads_total", "counter", "Reads submitted to feature files on storage.");
  Family seconds(out, "gnnd_feature_read_seconds_total", "counter", "Seconds spent reading, summed over batches.");
  Family resident(out, "gnnd_feature_cache_resident_rows", "gauge", "Rows in a dataset's storage cache.");
  Family capacity(out, "gnnd_feature_cache_capacity_rows", "gauge", "Rows a dataset's storage cache holds at most.");
  Family window(out, "gnnd_feature_look_ahead_batches", "gauge",
                "Batches sampled ahead and not yet gathered (all sessions of the dataset).");
  Family depth(out, "gnnd_feature_queue_depth", "gauge", "Reads in flight per gather, at most.");
  for (const auto& [name, c] : caches) {
    Labels dataset = {{"dataset", name}};
    if (!c.node_type().empty()) dataset.emplace_back("node_type", c.node_type());  // a typed dataset's table
    Labels hit = dataset, miss = dataset, gpu_tier = dataset;
    hit.emplace_back("outcome", "hit");
    miss.emplace_back("outcome", "miss");
    gpu_tier.emplace_back("outcome", "gpu_tier");
    rows.Sample(c.hits(), hit);
    rows.Sample(c.misses(), miss);
    rows.Sample(c.gpu_tier_rows(), gpu_tier);
    prefetched.Sample(c.prefetched(), dataset);
    bypassed.Sample(c.bypassed(), dataset);
    warmed.Sample(c.warmed(), dataset);
    bytes.Sample(c.bytes_read(), dataset);
    reads.Sample(c.reads(), dataset);
    seconds.Sample(c.read_seconds(), dataset);
    resident.Sample(static_cast<uint64_t>(c.resident_rows()), dataset);
    capacity.Sample(static_cast<uint64_t>(c.capacity_rows()), dataset);
    window.Sample(static_cast<uint64_t>(c.window()), dataset);
    depth.Sample(static_cast<uint64_t>(c.queue_depth()), dataset);
  }
}

// A part of a partitioned dataset: its peers' state, the rows and bytes fetched from each and the time it took,
// the rows served to them.
void AppendPeerMetrics(const v1::Stats& stats, std::string& out) {
  std::vector<const v1::DatasetInfo*> parts;
  for (const v1::DatasetInfo& d : stats.datasets()) {
    if (d.has_partition()) parts.push_back(&d);
  }
  if (parts.empty()) return;
  Family up(out, "gnnd_peer_up", "gauge", "1 if this part's connection to the peer serving another part is up.");
  Family rows(out, "gnnd_peer_fetched_rows_total", "counter", "Feature rows fetched from a peer.");
  Family bytes(out, "gnnd_peer_fetched_bytes_total", "counter", "Bytes of feature rows fetched from a peer.");
  Family seconds(out, "gnnd_peer_fetch_seconds_total", "counter",
                 "Seconds from each fetch's start to its rows, summed over a peer's fetches.");
  Family failures(out, "gnnd_peer_fetch_failures_total", "counter", "Fetches from a peer that failed.");
  Family connects(out, "gnnd_peer_connects_total", "counter", "Connection attempts to a peer.");
  Family served(out, "gnnd_peer_served_rows_total", "counter", "Feature rows this part served to its peers.");
  Family refused(out, "gnnd_peer_refused_total", "counter", "Peer connections refused (token, partition).");
  Family batch_rows(out, "gnnd_partition_batch_rows_total", "counter",
                    "Feature rows of batches by where they came from: local (this part), remote (a peer) or "
                    "remote_cache (kept from an earlier fetch).");
  Family cache_rows(out, "gnnd_partition_remote_cache_rows", "gauge",
                    "Rows fetched from peers the remote cache holds now (remote_cache).");
  Family cache_evictions(out, "gnnd_partition_remote_cache_evictions_total", "counter",
                         "Rows the remote cache evicted for newer ones.");
  Family waited(out, "gnnd_partition_wait_seconds_total", "counter", "Seconds gathers waited for peers' rows.");
  for (const v1::DatasetInfo* d : parts) {
    const v1::PartitionStats& p = d->partition();
    const Labels dataset = {{"dataset", d->name()}};
    for (const v1::PeerStats& peer : p.peers()) {
      const Labels labels = {{"dataset", d->name()}, {"peer", absl::StrCat(peer.part())}, {"address", peer.address()}};
      up.Sample(uint64_t{peer.state() == "connected"}, labels);
      rows.Sample(peer.rows(), labels);
      bytes.Sample(peer.bytes(), labels);
      seconds.Sample(peer.fetch_seconds(), labels);
      failures.Sample(peer.failures(), labels);
      connects.Sample(peer.connects(), labels);
    }
    served.Sample(p.rows_served(), dataset);
    refused.Sample(p.peers_refused(), dataset);
    batch_rows.Sample(p.local_rows(), {{"dataset", d->name()}, {"source", "local"}});
    batch_rows.Sample(p.remote_rows(), {{"dataset", d->name()}, {"source", "remote"}});
    batch_rows.Sample(p.cached_rows(), {{"dataset", d->name()}, {"source", "remote_cache"}});
    cache_rows.Sample(static_cast<uint64_t>(p.remote_cache_resident_rows()), dataset);
    cache_evictions.Sample(p.remote_cache_evictions(), dataset);
    waited.Sample(p.wait_seconds(), dataset);
  }
}

}  // namespace

std::string RenderPrometheus(const v1::Stats& stats) {
  std::string out;
  Family(out, "gnnd_uptime_seconds", "gauge", "Seconds since gnnd started.").Sample(stats.uptime_seconds());
  // The instance as a label of its own series ("instance" is Prometheus's target label).
  Family(out, "gnnd_info", "gauge", "This gnnd; gnnd_instance names it among the gnnd of its host.")
      .Sample(uint64_t{1}, {{"gnnd_instance", stats.instance()}});

  Family batches(out, "gnnd_batches_total", "counter", "Batches delivered to trainers.");
  for (const v1::ServedTotals& t : stats.totals()) batches.Sample(t.batches(), Where(t.dataset(), t.device()));
  Family bytes(out, "gnnd_bytes_total", "counter", "Bytes of batch arrays delivered to trainers.");
  for (const v1::ServedTotals& t : stats.totals()) bytes.Sample(t.bytes(), Where(t.dataset(), t.device()));
  Family opened(out, "gnnd_sessions_opened_total", "counter", "Sessions opened.");
  for (const v1::ServedTotals& t : stats.totals()) opened.Sample(t.sessions_opened(), Where(t.dataset(), t.device()));

  std::map<std::pair<std::string, std::string>, std::pair<int, int>> open;  // -> sessions, slots held
  for (const v1::ServedTotals& t : stats.totals()) open[{t.dataset(), t.device()}];
  for (const v1::SessionStats& s : stats.sessions()) {
    auto& [sessions, held] = open[{s.dataset(), s.device()}];
    ++sessions;
    held += static_cast<int>(s.slots_held());
  }
  Family sessions(out, "gnnd_sessions", "gauge", "Open sessions.");
  for (const auto& [key, value] : open)
    sessions.Sample(static_cast<uint64_t>(value.first), Where(key.first, key.second));
  Family held(out, "gnnd_slots_held", "gauge", "Slots whose batch a trainer holds now.");
  for (const auto& [key, value] : open) held.Sample(static_cast<uint64_t>(value.second), Where(key.first, key.second));

  const v1::AdmissionStats& a = stats.admission();
  Family(out, "gnnd_slot_bytes", "gauge", "Bytes of slots of all open sessions.").Sample(a.slot_bytes());
  Family(out, "gnnd_slot_bytes_limit", "gauge", "max_total_slot_bytes.").Sample(a.max_total_slot_bytes());
  Family(out, "gnnd_sessions_limit", "gauge", "max_sessions.").Sample(a.max_sessions());

  Family dataset_bytes(out, "gnnd_dataset_bytes", "gauge", "Shared memory of each loaded dataset.");
  for (const v1::DatasetInfo& d : stats.datasets()) dataset_bytes.Sample(d.bytes(), {{"dataset", d.name()}});
  Family orders(out, "gnnd_dataset_time_order_bytes", "gauge",
                "Host memory of each dataset's time orders (the temporal rule's, built on first use).");
  for (const v1::DatasetInfo& d : stats.datasets()) orders.Sample(d.time_order_bytes(), {{"dataset", d.name()}});
  AppendFeatureCacheMetrics(stats, out);
  AppendPeerMetrics(stats, out);

  Family stage(out, "gnnd_stage_seconds", "histogram",
               "Seconds per batch: sample and gather (CPU backend), produce (a whole batch), release_wait "
               "(held by the trainer).");
  for (const v1::StageHistogram& h : stats.histograms()) {
    Labels labels = {{"stage", h.stage()}, {"dataset", h.dataset()}, {"device", h.device()}};
    uint64_t cumulative = 0;
    for (int i = 0; i < h.counts_size(); ++i) {
      cumulative += h.counts(i);
      Labels with_le = labels;
      with_le.emplace_back("le", i < h.bounds_size() ? absl::StrCat(h.bounds(i)) : "+Inf");
      stage.Sample(cumulative, with_le, "_bucket");
    }
    stage.Sample(h.sum(), labels, "_sum");
    stage.Sample(h.count(), labels, "_count");
  }

  Family(out, "gnnd_registered_bytes", "gauge", "Host memory registered for the GPUs' zero-copy reads.")
      .Sample(stats.registered_bytes());
  Family gpu_used(out, "gnnd_gpu_memory_used_bytes", "gauge", "GPU memory in use, by every process.");
  for (const v1::GpuMemory& g : stats.gpus()) gpu_used.Sample(g.used_bytes(), {{"gpu", absl::StrCat(g.device())}});
  Family gpu_total(out, "gnnd_gpu_memory_total_bytes", "gauge", "GPU memory.");
  for (const v1::GpuMemory& g : stats.gpus()) gpu_total.Sample(g.total_bytes(), {{"gpu", absl::StrCat(g.device())}});
  Family gpu_placed(out, "gnnd_gpu_placed_bytes", "gauge", "gnnd's copies of datasets' CSC in GPU memory.");
  for (const v1::GpuMemory& g : stats.gpus()) gpu_placed.Sample(g.placed_bytes(), {{"gpu", absl::StrCat(g.device())}});
  return out;
}

}  // namespace gnnd
