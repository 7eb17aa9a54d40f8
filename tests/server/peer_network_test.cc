// Nodes of a partitioned dataset in one process, over UCX on loopback: rows fetched are the owner's, a peer
// without the token or serving another dataset is refused naming which, a dead peer fails fetches with
// UNAVAILABLE in bounded time and is found again when it comes back, and PartRows assembles a batch's rows from
// its own memory and its peers'.
#include "server/peers/peer_network.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "server/peers/part_rows.h"

namespace gnnd {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kRowBytes = 24;

const bool environment_prepared = [] {
  PreparePeerEnvironment();
  return true;
}();

// A free TCP port on loopback (bound and released: the listener takes it next).
uint16_t FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

// Row r of part p: bytes that name both.
std::vector<std::byte> PartTable(uint32_t part, int64_t rows) {
  std::vector<std::byte> table(rows * kRowBytes);
  for (int64_t r = 0; r < rows; ++r) {
    for (uint64_t b = 0; b < kRowBytes; ++b) {
      table[r * kRowBytes + b] = static_cast<std::byte>((part * 131 + r * 7 + b) & 0xff);
    }
  }
  return table;
}

struct Cluster {
  std::vector<std::string> addresses;
  std::vector<int64_t> rows;  // per part
  std::vector<std::vector<std::byte>> tables;
  std::vector<std::unique_ptr<PeerNetwork>> nodes;

  explicit Cluster(std::vector<int64_t> part_rows) : rows(std::move(part_rows)) {
    for (uint32_t p = 0; p < rows.size(); ++p) {
      addresses.push_back(absl::StrCat("127.0.0.1:", FreePort()));
      tables.push_back(PartTable(p, rows[p]));
    }
    nodes.resize(rows.size());
  }
  PeerOptions Options(uint32_t part, std::string token = "secret-token", std::string id = "dataset-1") const {
    PeerOptions options;
    options.peers = addresses;
    options.part = part;
    options.token = std::move(token);
    options.dataset_id = std::move(id);
    options.timeout = absl::Seconds(2);
    options.part_rows = {rows};
    return options;
  }
  std::vector<ServedTable> Tables(uint32_t part) const {
    return {ServedTable{tables[part].data(), rows[part], kRowBytes}};
  }
  absl::Status Start(uint32_t part, PeerOptions options) {
    absl::StatusOr<std::unique_ptr<PeerNetwork>> node = PeerNetwork::Start(std::move(options), Tables(part));
    if (!node.ok()) return node.status();
    nodes[part] = std::move(*node);
    return absl::OkStatus();
  }
  // Fetches `rows` of `from` through node `by`, waiting for the connection up to `patience`.
  absl::StatusOr<std::vector<std::byte>> Fetch(uint32_t by, uint32_t from, std::vector<int64_t> rows) {
    std::shared_ptr<RowFetch> fetch = nodes[by]->Fetch(from, 0, std::move(rows));
    absl::StatusOr<std::span<const std::byte>> got = PeerNetwork::Wait(*fetch);
    if (!got.ok()) return got.status();
    return std::vector<std::byte>(got->begin(), got->end());
  }
  std::vector<std::byte> Expected(uint32_t part, const std::vector<int64_t>& rows) const {
    std::vector<std::byte> out;
    for (int64_t r : rows) {
      out.insert(out.end(), tables[part].begin() + r * kRowBytes, tables[part].begin() + (r + 1) * kRowBytes);
    }
    return out;
  }
};

TEST(PeerNetwork, EveryNodeFetchesEveryOtherPartsRows) {
  Cluster cluster({5000, 3000, 4000});
  for (uint32_t p = 0; p < 3; ++p) ASSERT_TRUE(cluster.Start(p, cluster.Options(p)).ok());
  std::mt19937_64 random(7);
  for (uint32_t by = 0; by < 3; ++by) {
    for (uint32_t from = 0; from < 3; ++from) {
      if (by == from) continue;
      std::vector<int64_t> rows(20000);  // several request messages, rows repeated and out of order
      for (int64_t& r : rows) r = static_cast<int64_t>(random() % cluster.rows[from]);
      absl::StatusOr<std::vector<std::byte>> got = cluster.Fetch(by, from, rows);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(*got == cluster.Expected(from, rows)) << by << " from " << from;
    }
  }
  std::vector<PeerStats> stats = cluster.nodes[0]->stats();
  for (int wait = 0; wait < 50 && (stats.empty() || stats[0].rows < 20000); ++wait) {  // published each turn
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stats = cluster.nodes[0]->stats();
  }
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].part, 1u);
  EXPECT_EQ(stats[0].state, "connected");
  EXPECT_EQ(stats[0].rows, 20000u);
  EXPECT_EQ(stats[0].bytes, 20000u * kRowBytes);
  EXPECT_GT(cluster.nodes[1]->served().rows, 0u);
}

TEST(PeerNetwork, ARowThePartDoesNotHoldFailsNamingIt) {
  Cluster cluster({10, 10});
  for (uint32_t p = 0; p < 2; ++p) ASSERT_TRUE(cluster.Start(p, cluster.Options(p)).ok());
  absl::StatusOr<std::vector<std::byte>> got = cluster.Fetch(0, 1, {3, 10});
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("row 10 of node type 0 is not one of this part's 10"));
  EXPECT_THAT(got.status().message(), HasSubstr("peer 1 (" + cluster.addresses[1] + ")"));
  EXPECT_TRUE(cluster.Fetch(0, 1, {9}).ok());  // the connection still serves
}

TEST(PeerNetwork, APeerWithoutTheTokenIsRefused) {
  Cluster cluster({10, 10});
  ASSERT_TRUE(cluster.Start(0, cluster.Options(0)).ok());
  ASSERT_TRUE(cluster.Start(1, cluster.Options(1, "another-token")).ok());
  absl::StatusOr<std::vector<std::byte>> got = cluster.Fetch(1, 0, {1});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("wrong peer token"));
  EXPECT_GE(cluster.nodes[0]->served().refused, 1u);
  EXPECT_EQ(cluster.nodes[0]->served().rows, 0u);
}

TEST(PeerNetwork, APeerServingAnotherDatasetIsRefused) {
  Cluster cluster({10, 10});
  ASSERT_TRUE(cluster.Start(0, cluster.Options(0)).ok());
  ASSERT_TRUE(cluster.Start(1, cluster.Options(1, "secret-token", "dataset-2")).ok());
  absl::StatusOr<std::vector<std::byte>> got = cluster.Fetch(1, 0, {1});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("another dataset"));
  EXPECT_THAT(got.status().message(), HasSubstr("dataset-2"));
}

TEST(PeerNetwork, APeerWhoseTablesDifferFromTheMapIsRefused) {
  Cluster cluster({10, 10});
  ASSERT_TRUE(cluster.Start(0, cluster.Options(0)).ok());
  PeerOptions options = cluster.Options(1);
  options.part_rows = {{11, 10}};  // its map says part 0 holds 11 rows
  ASSERT_TRUE(cluster.Start(1, options).ok());
  absl::StatusOr<std::vector<std::byte>> got = cluster.Fetch(1, 0, {1});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("serves 10 rows of 24 bytes of node type 0 where the ownership map "
                                                "says 11 of 24"));
}

TEST(PeerNetwork, ADeadPeerFailsFetchesInBoundedTimeAndIsFoundAgain) {
  Cluster cluster({100, 100});
  for (uint32_t p = 0; p < 2; ++p) ASSERT_TRUE(cluster.Start(p, cluster.Options(p)).ok());
  ASSERT_TRUE(cluster.Fetch(1, 0, {1, 2, 3}).ok());
  cluster.nodes[0].reset();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::byte>> got = cluster.Fetch(1, 0, {1});
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("peer 0 (" + cluster.addresses[0] + ")"));
  EXPECT_LT(waited, 10.0);  // the timeout is 2 s
  ASSERT_TRUE(cluster.Start(0, cluster.Options(0)).ok());
  absl::StatusOr<std::vector<std::byte>> again;
  for (int attempt = 0; attempt < 10; ++attempt) {  // reconnects every second
    again = cluster.Fetch(1, 0, {7, 8});
    if (again.ok()) break;
  }
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(*again == cluster.Expected(0, {7, 8}));
}

TEST(PeerNetwork, ManyThreadsFetchAtOnceWhileNodesStop) {
  Cluster cluster({1000, 1000, 1000});
  for (uint32_t p = 0; p < 3; ++p) ASSERT_TRUE(cluster.Start(p, cluster.Options(p)).ok());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 random(t);
      for (int i = 0; i < 50; ++i) {
        const uint32_t from = 1 + random() % 2;
        std::vector<int64_t> rows(1 + random() % 300);
        for (int64_t& r : rows) r = static_cast<int64_t>(random() % 1000);
        std::shared_ptr<RowFetch> fetch = cluster.nodes[0]->Fetch(from, 0, rows);
        absl::StatusOr<std::span<const std::byte>> got = PeerNetwork::Wait(*fetch);
        if (got.ok() && std::vector<std::byte>(got->begin(), got->end()) == cluster.Expected(from, rows)) ++ok;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ok.load(), 8 * 50);
  // Fetches in flight when the node itself stops end (CANCELLED or done), none hangs.
  std::vector<std::shared_ptr<RowFetch>> pending;
  for (int i = 0; i < 20; ++i) pending.push_back(cluster.nodes[0]->Fetch(1, 0, {1, 2, 3}));
  cluster.nodes[0].reset();
  for (auto& fetch : pending) {
    absl::StatusOr<std::span<const std::byte>> got = PeerNetwork::Wait(*fetch);
    if (!got.ok()) EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled) << got.status();
  }
}

// 12 nodes over 3 parts: node v owned by part v % 3, row v / 3 there; part 1's rows as PartRows reads them.
struct TwelveNodes {
  Cluster cluster{{4, 4, 4}};
  std::vector<int32_t> owner;
  std::vector<int64_t> owner_row;
  std::shared_ptr<PeerNetwork> network;

  TwelveNodes() {
    for (uint32_t p = 0; p < 3; ++p) EXPECT_TRUE(cluster.Start(p, cluster.Options(p)).ok());
    for (int v = 0; v < 12; ++v) {
      owner.push_back(v % 3);
      owner_row.push_back(v / 3);
    }
    network = std::move(cluster.nodes[1]);
  }
  PartRows Part1(std::unique_ptr<RemoteRowCache> cache = nullptr) {
    return PartRows(network, 0, cluster.tables[1].data(), kRowBytes, owner, owner_row, std::move(cache));
  }
  // The rows of nodes `ids`, as their owners hold them.
  std::vector<std::byte> Expected(const std::vector<int64_t>& ids) {
    std::vector<std::byte> expected;
    for (int64_t v : ids) {
      const auto row = cluster.Expected(owner[v], {owner_row[v]});
      expected.insert(expected.end(), row.begin(), row.end());
    }
    return expected;
  }
};

TEST(PartRows, ABatchIsItsOwnRowsAndItsPeersInOrder) {
  TwelveNodes nodes;
  PartRows rows = nodes.Part1();
  const std::vector<int64_t> ids = {11, 0, 4, 7, 3, 1, 10};
  const std::vector<std::byte> expected = nodes.Expected(ids);
  std::vector<std::byte> out(ids.size() * kRowBytes);
  const uint64_t ticket = rows.Announce(ids);
  ASSERT_TRUE(rows.Gather(ticket, ids, out.data()).ok());
  EXPECT_TRUE(out == expected);
  EXPECT_EQ(rows.stats().local_rows, 4u);  // 4, 7, 1, 10
  EXPECT_EQ(rows.stats().remote_rows, 3u);
  // Not announced (a ticket withdrawn): asked at the gather.
  const uint64_t withdrawn = rows.Announce(ids);
  rows.Withdraw(withdrawn);
  std::fill(out.begin(), out.end(), std::byte{0});
  ASSERT_TRUE(rows.Gather(withdrawn, ids, out.data()).ok());
  EXPECT_TRUE(out == expected);
}

TEST(PartRows, RowsKeptInTheRemoteCacheAreNotFetchedAgain) {
  TwelveNodes nodes;
  PartRows rows = nodes.Part1(std::make_unique<RemoteRowCache>(8, kRowBytes, /*shards=*/1));
  const std::vector<int64_t> first = {11, 0, 4, 7, 3};  // 11, 0 and 3 owned elsewhere
  std::vector<std::byte> out(first.size() * kRowBytes);
  ASSERT_TRUE(rows.Gather(rows.Announce(first), first, out.data()).ok());
  EXPECT_TRUE(out == nodes.Expected(first));
  EXPECT_EQ(rows.stats().remote_rows, 3u);
  EXPECT_EQ(rows.stats().cached_rows, 0u);
  EXPECT_EQ(rows.stats().cache.resident_rows, 3);
  // The owners gone, the rows kept still serve a batch that reads only them and this part's rows.
  nodes.cluster.nodes[0].reset();
  nodes.cluster.nodes[2].reset();
  const std::vector<int64_t> second = {3, 1, 11, 0};
  out.assign(second.size() * kRowBytes, std::byte{0});
  const uint64_t ticket = rows.Announce(second);
  ASSERT_TRUE(rows.Gather(ticket, second, out.data()).ok());
  EXPECT_TRUE(out == nodes.Expected(second));
  EXPECT_EQ(rows.stats().remote_rows, 3u);
  EXPECT_EQ(rows.stats().cached_rows, 3u);
  EXPECT_EQ(rows.stats().local_rows, 3u);  // 4, 7, 1
  // A row never fetched needs its owner: UNAVAILABLE.
  const std::vector<int64_t> third = {0, 2};
  out.assign(third.size() * kRowBytes, std::byte{0});
  const absl::Status status = rows.Gather(rows.Announce(third), third, out.data());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

}  // namespace
}  // namespace gnnd
