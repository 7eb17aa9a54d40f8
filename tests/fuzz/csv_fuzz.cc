// Fuzzes the text import path: lines from a plain or gzip file (OGB csv.gz, edge lists), split into
// fields and parsed as numbers, as the importers do.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/dataset/input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("csv-fuzz", 0);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  auto lines = gnnd::dataset::LineReader::Open(absl::StrCat("/proc/self/fd/", fd), "fuzz.csv.gz");
  if (!lines.ok()) return 0;
  absl::string_view line;
  for (int n = 0; n < 10000; ++n) {
    absl::StatusOr<bool> more = (*lines)->Next(&line);
    if (!more.ok() || !*more) break;
    for (char separator : {',', ' '}) {
      for (absl::string_view field : gnnd::dataset::SplitFields(line, separator)) {
        (void)gnnd::dataset::ParseInt(field, (*lines)->Where());
        (void)gnnd::dataset::ParseDouble(field, (*lines)->Where());
      }
    }
  }
  return 0;
}
