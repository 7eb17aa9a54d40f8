// What a peer of a partitioned dataset sends before and after its hello (server/peers/peer_wire.h): arbitrary
// bytes as a hello's header and data, and as a row request against a small table. A verdict or an error, never
// a read outside the message or the table.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "server/peers/peer_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gnnd;
  if (size < 1) return 0;
  const size_t split = std::min<size_t>(data[0], size - 1);  // header bytes, then the message's data
  const uint8_t* header = data + 1;
  const uint8_t* body = header + split;
  const size_t body_bytes = size - 1 - split;
  const peer_wire::Self self{"a-token-of-sixteen-bytes", "dataset-id", 1, 3};
  (void)peer_wire::JudgeHello(header, split, {reinterpret_cast<const char*>(body), body_bytes}, self);

  std::vector<std::byte> rows(7 * 12);
  const ServedTable tables[] = {{nullptr, 0, 12}, {rows.data(), 7, 12}};
  peer_wire::Request request = {};
  if (split < sizeof(request)) return 0;
  std::memcpy(&request, header, sizeof(request));
  const absl::StatusOr<uint64_t> bytes = peer_wire::RequestedBytes(request, body_bytes, tables);
  if (!bytes.ok()) return 0;
  std::vector<std::byte> out(*bytes);
  (void)peer_wire::GatherRequested(request, body, tables, out.data());
  return 0;
}
