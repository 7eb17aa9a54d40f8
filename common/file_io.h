// Whole-buffer file I/O that retries short transfers and EINTR, with errors naming the file.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace gnnd {

absl::Status WriteFully(int fd, const void* data, size_t size, absl::string_view path);
// Reads exactly `size` bytes at `offset`; a file that ends first is DATA_LOSS.
absl::Status PreadFully(int fd, void* data, size_t size, off_t offset, absl::string_view path);

}  // namespace gnnd
