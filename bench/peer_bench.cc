// Rows fetched from a peer per second (server/peers/peer_network.h): a child process serves part 1's table, this
// process (part 0) fetches random rows of it as a producer does, `batch_rows` rows a fetch with `in_flight` fetches
// outstanding. The transport is UCX's choice (UCX_TLS=tcp or shm to pin it); bench/peer_bench.sh runs it beside
// ucx_perftest's active-message bandwidth at the same message size.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <random>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "server/peers/peer_network.h"

ABSL_FLAG(int64_t, table_rows, 1 << 20, "rows the serving part holds");
ABSL_FLAG(uint64_t, row_bytes, 512, "bytes a row");
ABSL_FLAG(int64_t, batch_rows, 65536, "rows a fetch asks for (a batch's remote rows from one peer)");
ABSL_FLAG(int, in_flight, 4, "fetches outstanding (batches sampled ahead)");
ABSL_FLAG(int, fetches, 200, "fetches a repetition makes");
ABSL_FLAG(int, repetitions, 5, "repetitions: the median is reported");
ABSL_FLAG(int, port, 17700, "first of the two loopback ports");
ABSL_FLAG(bool, shared_memory, false, "PeerOptions::shared_memory: shared memory between the two processes");

namespace gnnd {
namespace {

PeerOptions Options(uint32_t part) {
  PeerOptions options;
  const int port = absl::GetFlag(FLAGS_port);
  options.peers = {absl::StrCat("127.0.0.1:", port), absl::StrCat("127.0.0.1:", port + 1)};
  options.part = part;
  options.token = "peer-bench-token-of-16-bytes";
  options.dataset_id = "peer-bench";
  options.part_rows = {{0, absl::GetFlag(FLAGS_table_rows)}};
  options.timeout = absl::Seconds(60);
  options.shared_memory = absl::GetFlag(FLAGS_shared_memory);
  return options;
}

int Serve() {
  const uint64_t row_bytes = absl::GetFlag(FLAGS_row_bytes);
  std::vector<std::byte> table(absl::GetFlag(FLAGS_table_rows) * row_bytes);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<std::byte>(i * 2654435761u >> 24);
  auto network =
      PeerNetwork::Start(Options(1), {ServedTable{table.data(), absl::GetFlag(FLAGS_table_rows), row_bytes}});
  if (!network.ok()) {
    std::fprintf(stderr, "serve: %s\n", std::string(network.status().message()).c_str());
    return 1;
  }
  pause();  // until the parent's SIGTERM
  return 0;
}

int Fetch() {
  const uint64_t row_bytes = absl::GetFlag(FLAGS_row_bytes);
  const int64_t table_rows = absl::GetFlag(FLAGS_table_rows), batch_rows = absl::GetFlag(FLAGS_batch_rows);
  std::vector<std::byte> own(row_bytes);
  auto network = PeerNetwork::Start(Options(0), {ServedTable{own.data(), 0, row_bytes}});
  if (!network.ok()) {
    std::fprintf(stderr, "fetch: %s\n", std::string(network.status().message()).c_str());
    return 1;
  }
  std::mt19937_64 random(1);
  const auto batch = [&] {
    std::vector<int64_t> rows(batch_rows);
    for (int64_t& r : rows) r = static_cast<int64_t>(random() % table_rows);
    return rows;
  };
  for (int attempt = 0;; ++attempt) {  // connected (the child listens a moment after the fork)
    auto probe = (*network)->Fetch(1, 0, {0});
    if (PeerNetwork::Wait(*probe).ok()) break;
    if (attempt == 30) {
      std::fprintf(stderr, "fetch: the serving process does not answer\n");
      return 1;
    }
  }
  std::vector<double> rates;
  for (int rep = 0; rep < absl::GetFlag(FLAGS_repetitions); ++rep) {
    std::vector<std::vector<int64_t>> batches;
    for (int f = 0; f < absl::GetFlag(FLAGS_fetches); ++f) batches.push_back(batch());
    std::deque<std::shared_ptr<RowFetch>> outstanding;
    const auto start = std::chrono::steady_clock::now();
    size_t next = 0;
    while (next < batches.size() || !outstanding.empty()) {
      while (next < batches.size() && static_cast<int>(outstanding.size()) < absl::GetFlag(FLAGS_in_flight)) {
        outstanding.push_back((*network)->Fetch(1, 0, std::move(batches[next++])));
      }
      if (auto rows = PeerNetwork::Wait(*outstanding.front()); !rows.ok()) {
        std::fprintf(stderr, "fetch: %s\n", std::string(rows.status().message()).c_str());
        return 1;
      }
      outstanding.pop_front();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(batches.size()) * batch_rows / seconds);
  }
  std::sort(rates.begin(), rates.end());
  const double median = rates[rates.size() / 2];
  std::printf(
      "row_bytes %lu batch_rows %ld in_flight %d: %.3g rows/s, %.3g GB/s of rows (median of %zu; min %.3g max %.3g)\n",
      row_bytes, batch_rows, absl::GetFlag(FLAGS_in_flight), median, median * row_bytes / 1e9, rates.size(),
      rates.front(), rates.back());
  return 0;
}

}  // namespace
}  // namespace gnnd

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  gnnd::PreparePeerEnvironment();
  const pid_t child = fork();
  if (child == 0) return gnnd::Serve();
  const int rc = gnnd::Fetch();
  kill(child, SIGTERM);
  waitpid(child, nullptr, 0);
  return rc;
}
