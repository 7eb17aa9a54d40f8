// The messages between the gnnd instances serving one partitioned dataset's parts (UCX active messages:
// a fixed header, then data). Everything a peer sends is checked before use: sizes against what the header
// says, strings by length, rows against the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gnnd {

// The feature rows a part serves of one node type (rows null: the type has none).
struct ServedTable {
  const std::byte* rows = nullptr;
  int64_t num_rows = 0;
  uint64_t row_bytes = 0;
};

}  // namespace gnnd

namespace gnnd::peer_wire {

inline constexpr char kMagic[8] = {'g', 'n', 'n', 'd', 'p', 'e', 'e', 'r'};
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kMaxRequestRows = 8192;  // ids a request carries at most: 64 KiB, sent eagerly

enum MessageId : unsigned {
  kHello = 1,    // a connecting node: Hello, data = dataset id then token
  kWelcome = 2,  // the answer: Welcome, data = num_tables TableShape (code 0) or the refusal's words
  kRequest = 3,  // rows asked: Request, data = count int64 rows of the table
  kRows = 4,     // the rows: Rows, data = count * row_bytes bytes (code 0) or the error's words
};

struct Hello {
  char magic[8];
  uint32_t version;
  uint32_t part;  // the connecting node's
  uint32_t dataset_id_bytes;
  uint32_t token_bytes;
};

struct Welcome {
  uint32_t version;
  uint32_t part;  // the accepting node's
  int32_t code;   // absl::StatusCode: 0 accepted
  uint32_t num_tables;
};

struct TableShape {
  int64_t num_rows;
  uint64_t row_bytes;
};

struct Request {
  uint64_t sequence;
  uint32_t type;
  uint32_t count;
};

struct Rows {
  uint64_t sequence;
  int32_t code;  // absl::StatusCode
  uint32_t reserved;
};

// Who this node is, as a hello is judged.
struct Self {
  absl::string_view token, dataset_id;
  uint32_t part = 0, num_parts = 0;
};
// A hello's verdict: OK with the part that said it, or the refusal's code and words (naming what differs,
// never the token).
absl::StatusOr<uint32_t> JudgeHello(const void* header, size_t header_bytes, absl::string_view data, const Self& self);

// The bytes a request's rows take, or why it is refused (ids that do not match the count, too many, a type
// without rows). `ids` is the request's data.
absl::StatusOr<uint64_t> RequestedBytes(const Request& request, size_t ids_bytes, std::span<const ServedTable> tables);
// Copies the requested rows (RequestedBytes of them) into `out`; INVALID_ARGUMENT naming a row the table lacks.
absl::Status GatherRequested(const Request& request, const void* ids, std::span<const ServedTable> tables,
                             std::byte* out);

}  // namespace gnnd::peer_wire
