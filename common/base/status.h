// Status plumbing shared by every module: absl::Status / absl::StatusOr cross module lines, and these
// two macros keep the early returns short. (Abseil does not export its own versions of them.)
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#define GNND_CONCAT_INNER(a, b) a##b
#define GNND_CONCAT(a, b) GNND_CONCAT_INNER(a, b)

#define GNND_RETURN_IF_ERROR(expr)                \
  do {                                            \
    if (::absl::Status _st = (expr); !_st.ok()) { \
      return _st;                                 \
    }                                             \
  } while (0)

#define GNND_ASSIGN_OR_RETURN(lhs, rexpr) GNND_ASSIGN_OR_RETURN_IMPL(GNND_CONCAT(_statusor_, __LINE__), lhs, rexpr)

#define GNND_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                               \
  if (!tmp.ok()) return std::move(tmp).status();    \
  lhs = std::move(tmp).value()

namespace gnnd {

// An absl::Status for a failed system call: "<what>: <strerror(errno)>", code from errno.
absl::Status ErrnoStatus(int err, absl::string_view what);

// `text` in single quotes for a message, cut to its first `max` bytes with its length said ("'abc...'
// (10240 bytes)"): a name from a peer may be any length, and a status message travels in gRPC metadata.
std::string Quoted(absl::string_view text, size_t max = 100);

}  // namespace gnnd
