// The messages between the gnnd instances serving one partitioned dataset's parts (UCX active messages:
// a fixed header, then data). Everything a peer sends is checked before use: sizes against what the header
// says, strings by length, rows against the table.
#pragma once

#include <cstdint>

namespace gnnd::peer_wire {

inline constexpr char kMagic[8] = {'g', 'n', 'n', 'd', 'p', 'e', 'e', 'r'};
inline constexpr uint32_t kVersion = 1;

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

}  // namespace gnnd::peer_wire
