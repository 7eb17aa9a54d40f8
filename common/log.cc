#include "common/log.h"

#include <cstdio>

#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gnnd {
namespace {

void AppendPair(std::string& line, absl::string_view key, absl::string_view value) {
  const bool quote = value.empty() || value.find_first_of(" =\"\\\n\t") != absl::string_view::npos;
  absl::StrAppend(&line, " ", key, "=");
  if (!quote) return absl::StrAppend(&line, value);
  absl::StrAppend(&line, "\"", absl::StrReplaceAll(value, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}}), "\"");
}

}  // namespace

void LogLine(LogLevel level, absl::string_view message, const LogFields& fields) {
  std::string line = absl::StrCat("time=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()));
  AppendPair(line, "level", level == LogLevel::kInfo ? "info" : level == LogLevel::kWarning ? "warning" : "error");
  for (const auto& [key, value] : fields) AppendPair(line, key, value);
  AppendPair(line, "msg", message);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace gnnd
