#include "common/base/status.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace gnnd {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case ENOMEM:
      return absl::ResourceExhaustedError(message);
    case EINVAL:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

std::string Quoted(absl::string_view text, size_t max) {
  if (text.size() <= max) return absl::StrCat("'", text, "'");
  return absl::StrCat("'", text.substr(0, max), "...' (", text.size(), " bytes)");
}

}  // namespace gnnd
