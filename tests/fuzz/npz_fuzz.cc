// Fuzzes .npz reading (zip container, stored or deflated members, then the .npy inside), through a
// memory file as the importers open a path.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/dataset/input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("npz-fuzz", 0);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  const std::string path = absl::StrCat("/proc/self/fd/", fd);
  for (const char* member : {"a", "edge_index"}) {
    auto reader = gnnd::dataset::OpenNpzArray(path, member, "fuzz.npz");
    if (!reader.ok()) continue;
    std::vector<int64_t> values(static_cast<size_t>(std::min<int64_t>(reader->header().NumElements(), 1 << 16)));
    (void)reader->ReadInt64(values.data(), values.size());
  }
  return 0;
}
