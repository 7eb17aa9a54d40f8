#include "tools/gnnctl/daemon_commands.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/cpp/client.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"
#include "common/dataset/dataset.h"

namespace gnnd::gnnctl {
namespace {

std::string Mib(uint64_t bytes) { return absl::StrFormat("%.1f MiB", bytes / 1048576.0); }

// The nodes and edges of every type and relation of a dataset (a typed manifest keeps them per type).
std::pair<int64_t, int64_t> NodesAndEdges(const absl::StatusOr<DatasetSchema>& schema) {
  if (!schema.ok()) return {0, 0};
  int64_t edges = 0;
  for (const RelationSchema& r : schema->relations) edges += r.num_edges;
  return {schema->num_nodes, edges};
}

// One line: name, size, nodes, edges, feature dtypes (per type where typed), sessions, path.
void PrintDataset(const v1::DatasetInfo& d) {
  absl::StatusOr<DatasetSchema> schema = DatasetSchema::FromManifest(d.manifest());
  const auto [nodes, edges] = NodesAndEdges(schema);
  std::string dtypes;
  if (schema.ok()) {
    for (const NodeTypeSchema& t : schema->node_types) {
      const std::string dtype = t.feature_dim > 0 ? std::string(DTypeName(t.feature_dtype)) : "none";
      absl::StrAppend(&dtypes, dtypes.empty() ? "" : ",", schema->homogeneous() ? "" : t.name + ":", dtype);
    }
  }
  absl::PrintF("%s\t%s\t%d nodes\t%d edges\t%s\t%d session(s)\t%s\n", d.name(), Mib(d.bytes()), nodes, edges,
               schema.ok() ? dtypes : "?", d.sessions(), d.path());
  if (d.time_order_bytes() > 0) {
    absl::PrintF("  time orders: %d bytes (%s, temporal sampling's)\n", d.time_order_bytes(),
                 Mib(d.time_order_bytes()));
  }
  for (const v1::FeatureCacheStats& c : d.feature_caches()) {
    const uint64_t looked_up = c.hits() + c.misses();
    absl::PrintF(
        "  features on storage: %s%s\tcache %s (%d of %d rows, %d warmed at open)\thits %d misses %d (%.1f%% hit, "
        "%d read straight into their batch)\tGPU tier %d\tprefetched %d\t"
        "read %s in %d reads, %.2f s\tlook-ahead %d, %d batches announced\tqueue depth %d\t%s\n",
        c.node_type().empty() ? "" : c.node_type() + ": ", c.path(), Mib(c.capacity_bytes()), c.resident_rows(),
        c.capacity_rows(), c.warmed(), c.hits(), c.misses(), looked_up ? 100.0 * c.hits() / looked_up : 0.0,
        c.bypassed(), c.gpu_tier_rows(), c.prefetched(), Mib(c.bytes_read()), c.reads(), c.read_seconds(),
        c.look_ahead(), c.window(), c.queue_depth(), c.direct() ? "O_DIRECT" : "buffered");
  }
  if (d.has_partition()) {
    const v1::PartitionStats& p = d.partition();
    absl::PrintF(
        "  part %d of %d of partition %s\tbatch rows: %d own, %d fetched (waited %.2f s), %d from the remote cache "
        "(%d of %d rows held, %d evicted)\tserved %d rows (%s) in %d requests\t%d peer(s) refused\n",
        p.part(), p.num_parts(), p.dataset_id(), p.local_rows(), p.remote_rows(), p.wait_seconds(), p.cached_rows(),
        p.remote_cache_resident_rows(), p.remote_cache_capacity_rows(), p.remote_cache_evictions(), p.rows_served(),
        Mib(p.bytes_served()), p.requests_served(), p.peers_refused());
    for (const v1::PeerStats& peer : p.peers()) {
      absl::PrintF("  peer %d (%s)\t%s\tfetched %d rows (%s) in %d fetches, %.2f s\t%d failed\t%d connects%s\n",
                   peer.part(), peer.address(), peer.state(), peer.rows(), Mib(peer.bytes()), peer.fetches(),
                   peer.fetch_seconds(), peer.failures(), peer.connects(),
                   peer.error().empty() ? "" : absl::StrCat("\t", peer.error()));
    }
  }
}

// "[#########.........]  45%  array 1.2 GiB/2.6 GiB" on a terminal, a line per array otherwise.
void ShowProgress(const v1::LoadProgress& p) {
  const double fraction = p.bytes_total() ? static_cast<double>(p.bytes_done()) / p.bytes_total() : 1.0;
  if (::isatty(STDERR_FILENO)) {
    const int width = 30, filled = static_cast<int>(fraction * width);
    std::fprintf(stderr, "\r\033[K[%s%s] %3.0f%%  %s %s/%s%s", std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), 100 * fraction, p.array().c_str(),
                 Mib(p.bytes_done()).c_str(), Mib(p.bytes_total()).c_str(), p.done() ? "\n" : "");
  } else if (!p.done()) {
    std::fprintf(stderr, "loaded %s: %.0f%% (%s of %s)\n", p.array().c_str(), 100 * fraction,
                 Mib(p.bytes_done()).c_str(), Mib(p.bytes_total()).c_str());
  }
}

// The upper bound of the bucket holding quantile `q` of a stage histogram ("<= 2.5 ms").
std::string Quantile(const v1::StageHistogram& h, double q) {
  uint64_t seen = 0;
  for (int i = 0; i < h.counts_size(); ++i) {
    seen += h.counts(i);
    if (seen >= q * h.count()) {
      return i < h.bounds_size() ? absl::StrFormat("<= %.3g ms", h.bounds(i) * 1e3)
                                 : absl::StrFormat("> %.3g ms", h.bounds(h.bounds_size() - 1) * 1e3);
    }
  }
  return "-";
}

// Everything GetStats says; with `previous` (gnnctl stats --watch), rates since then.
void PrintStats(const v1::Stats& stats, const v1::Stats* previous) {
  absl::PrintF("uptime %.0f s, %d batches (%s) served, %d sessions opened\n", stats.uptime_seconds(), stats.batches(),
               Mib(stats.bytes()), stats.sessions_opened());
  if (previous != nullptr && stats.uptime_seconds() > previous->uptime_seconds()) {
    const double seconds = stats.uptime_seconds() - previous->uptime_seconds();
    absl::PrintF("now: %.1f batches/s, %.1f MiB/s\n", (stats.batches() - previous->batches()) / seconds,
                 (stats.bytes() - previous->bytes()) / seconds / 1048576.0);
  }
  const v1::AdmissionStats& a = stats.admission();
  absl::PrintF("in use: %d of max_sessions %d, %s of max_total_slot_bytes %s (one uid: %d%% of each)\n", a.sessions(),
               a.max_sessions(), Mib(a.slot_bytes()), Mib(a.max_total_slot_bytes()), a.uid_share_percent());
  for (const v1::SessionStats& s : stats.sessions()) {
    absl::PrintF(
        "session %d\t%s/%s\t%s (made by %s)\tpid %d uid %d\tepoch %d\t%d batches\t%s\tsampling %.2f s\twaiting %.2f s\t"
        "holds %d\tmemory %s\tslot %s (largest batch %s, %d times added)%s\n",
        s.session_id(), s.dataset(), s.split(), s.device(), s.producer(), s.peer_pid(), s.peer_uid(), s.epoch(),
        s.batches(), Mib(s.bytes()), s.sample_seconds(), s.wait_seconds(), s.slots_held(), Mib(s.memory_bytes()),
        Mib(s.slot_bytes()), Mib(s.largest_batch_bytes()), s.slots_added(),
        s.producer_choice().empty() ? "" : absl::StrCat("\tauto ", s.producer_choice()));
  }
  for (const v1::StageHistogram& h : stats.histograms()) {
    if (h.count() == 0) continue;
    absl::PrintF("stage %s\t%s on %s\t%d batches\tmean %.3f ms\tp50 %s\tp99 %s\n", h.stage(), h.dataset(), h.device(),
                 h.count(), h.sum() / h.count() * 1e3, Quantile(h, 0.5), Quantile(h, 0.99));
  }
  for (const v1::GpuMemory& g : stats.gpus()) {
    absl::PrintF("cuda:%d\t%s of %s in use (gnnd's CSC copies: %s)\n", g.device(), Mib(g.used_bytes()),
                 Mib(g.total_bytes()), Mib(g.placed_bytes()));
  }
  for (const v1::DatasetInfo& d : stats.datasets()) PrintDataset(d);
}

}  // namespace

bool IsDaemonCommand(const std::string& command) {
  return command == "status" || command == "datasets" || command == "load" || command == "unload" || command == "stats";
}

absl::Status RunDaemonCommand(const std::string& address, const std::string& command,
                              const std::vector<std::string>& args, const v1::LoadDatasetRequest& load,
                              double watch_seconds, double wait_seconds) {
  // Not a busy loop on gnnd, and a sleep that fits its clock.
  constexpr double kMinWatch = 0.1, kMaxWatch = 86400;
  if (watch_seconds != 0 && !(watch_seconds >= kMinWatch && watch_seconds <= kMaxWatch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--watch ", watch_seconds, ": refresh every 0.1 to 86400 seconds (0: once)"));
  }
  if (!(wait_seconds >= 0 && wait_seconds <= kMaxWatch)) {
    return absl::InvalidArgumentError(absl::StrCat("--wait ", wait_seconds, ": 0 to 86400 seconds"));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(wait_seconds);
  absl::StatusOr<std::unique_ptr<client::Client>> connected = client::Client::Connect(address);
  while (!connected.ok() && absl::IsUnavailable(connected.status()) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
    connected = client::Client::Connect(address);
  }
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<client::Client> client, std::move(connected));
  if (command == "status") {
    GNND_ASSIGN_OR_RETURN(std::string health, client->Health());
    GNND_ASSIGN_OR_RETURN(v1::Stats stats, client->GetStats());
    absl::PrintF("gnnd at %s (instance %s): %s, up %.0f s, %d dataset(s), %d open session(s), %d batches served\n",
                 address, stats.instance(), health, stats.uptime_seconds(), stats.datasets_size(),
                 stats.sessions_size(), stats.batches());
    for (const v1::DatasetInfo& d : stats.datasets()) {  // a part's peers: how many are up, the others by name
      if (!d.has_partition()) continue;
      std::string down;
      int up = 0;
      for (const v1::PeerStats& peer : d.partition().peers()) {
        if (peer.state() == "connected") {
          ++up;
        } else {
          absl::StrAppend(&down, "; peer ", peer.part(), " (", peer.address(), ") ", peer.state(),
                          peer.error().empty() ? "" : ": ", peer.error());
        }
      }
      absl::PrintF("  dataset %s: part %d of %d, %d of %d peers connected%s\n", d.name(), d.partition().part(),
                   d.partition().num_parts(), up, d.partition().peers_size(), down);
    }
    return absl::OkStatus();
  }
  if (command == "datasets") {
    GNND_ASSIGN_OR_RETURN(std::vector<v1::DatasetInfo> datasets, client->ListDatasets());
    for (const v1::DatasetInfo& d : datasets) PrintDataset(d);
    return absl::OkStatus();
  }
  if (command == "load") {
    if (args.size() != 2) return absl::InvalidArgumentError("load takes NAME and DATASET_DIR");
    // gnnd opens the path itself: make it absolute in case it runs elsewhere.
    std::string path = args[1];
    if (!path.empty() && path[0] != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof(cwd)) != nullptr) path = absl::StrCat(cwd, "/", path);
    }
    v1::LoadDatasetRequest request = load;
    request.set_name(args[0]);
    request.set_path(path);
    GNND_ASSIGN_OR_RETURN(v1::DatasetInfo info, client->LoadDataset(request, ShowProgress));
    const auto [nodes, edges] = NodesAndEdges(DatasetSchema::FromManifest(info.manifest()));
    absl::PrintF("loaded '%s' in %.2f s: %d nodes, %d edges, %s\n", info.name(), info.load_seconds(), nodes, edges,
                 Mib(info.bytes()));
    return absl::OkStatus();
  }
  if (command == "unload") {
    if (args.size() != 1) return absl::InvalidArgumentError("unload takes NAME");
    GNND_RETURN_IF_ERROR(client->UnloadDataset(args[0]));
    absl::PrintF("unloaded '%s'\n", args[0]);
    return absl::OkStatus();
  }
  GNND_ASSIGN_OR_RETURN(v1::Stats stats, client->GetStats());
  PrintStats(stats, nullptr);
  while (watch_seconds > 0) {  // until interrupted
    std::this_thread::sleep_for(std::chrono::duration<double>(watch_seconds));
    GNND_ASSIGN_OR_RETURN(v1::Stats next, client->GetStats());
    absl::PrintF(::isatty(STDOUT_FILENO) ? "\033[H\033[J" : "\n");
    PrintStats(next, &stats);
    std::fflush(stdout);
    stats = std::move(next);
  }
  return absl::OkStatus();
}

}  // namespace gnnd::gnnctl
