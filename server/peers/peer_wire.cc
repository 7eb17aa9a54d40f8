#include "server/peers/peer_wire.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace gnnd::peer_wire {

absl::StatusOr<uint32_t> JudgeHello(const void* header, size_t header_bytes, absl::string_view data, const Self& self) {
  Hello hello = {};
  if (header_bytes == sizeof(hello)) std::memcpy(&hello, header, sizeof(hello));
  if (header_bytes != sizeof(hello) || std::memcmp(hello.magic, kMagic, sizeof(hello.magic)) != 0 ||
      hello.version != kVersion || uint64_t{hello.dataset_id_bytes} + hello.token_bytes != data.size()) {
    return absl::InvalidArgumentError("not a gnnd peer's hello (or another protocol version)");
  }
  const absl::string_view id = data.substr(0, hello.dataset_id_bytes);
  const absl::string_view token = data.substr(hello.dataset_id_bytes);
  // Compared in time independent of where they differ.
  unsigned char differ = token.size() != self.token.size();
  for (size_t i = 0; i < token.size() && i < self.token.size(); ++i) differ |= token[i] ^ self.token[i];
  if (differ != 0) return absl::PermissionDeniedError("wrong peer token (--peer-token-file)");
  if (id != self.dataset_id) {
    return absl::FailedPreconditionError(absl::StrCat("another dataset: this node serves partition '", self.dataset_id,
                                                      "', the peer '", id.substr(0, 128), "'"));
  }
  if (hello.part >= self.num_parts || hello.part == self.part) {
    return absl::InvalidArgumentError(absl::StrCat("part ", hello.part, " is not another part of ", self.num_parts));
  }
  return hello.part;
}

absl::StatusOr<uint64_t> RequestedBytes(const Request& request, size_t ids_bytes, std::span<const ServedTable> tables) {
  if (ids_bytes != uint64_t{request.count} * sizeof(int64_t) || request.count > kMaxRequestRows) {
    return absl::InvalidArgumentError(absl::StrCat("a request of ", ids_bytes, " bytes for ", request.count,
                                                   " rows (at most ", kMaxRequestRows, ")"));
  }
  if (request.type >= tables.size() || tables[request.type].rows == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("node type ", request.type, " has no rows here"));
  }
  return uint64_t{request.count} * tables[request.type].row_bytes;
}

absl::Status GatherRequested(const Request& request, const void* ids, std::span<const ServedTable> tables,
                             std::byte* out) {
  const ServedTable& table = tables[request.type];
  for (uint32_t i = 0; i < request.count; ++i) {
    int64_t row;
    std::memcpy(&row, static_cast<const char*>(ids) + i * sizeof(row), sizeof(row));
    if (row < 0 || row >= table.num_rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", row, " of node type ", request.type, " is not one of this part's ", table.num_rows));
    }
    std::memcpy(out + i * table.row_bytes, table.rows + row * table.row_bytes, table.row_bytes);
  }
  return absl::OkStatus();
}

}  // namespace gnnd::peer_wire
