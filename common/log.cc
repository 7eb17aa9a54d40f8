#include "common/log.h"

#include <cstdio>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gnnd {

void LogLine(LogLevel level, absl::string_view message) {
  const char tag = level == LogLevel::kInfo ? 'I' : level == LogLevel::kWarning ? 'W' : 'E';
  std::string line =
      absl::StrFormat("%c%s %.*s\n", tag, absl::FormatTime("%Y-%m-%d %H:%M:%E3S", absl::Now(), absl::LocalTimeZone()),
                      static_cast<int>(message.size()), message.data());
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace gnnd
