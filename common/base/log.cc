#include "common/base/log.h"

#include <algorithm>
#include <cstdio>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace gnnd {
namespace {

void AppendPair(std::string& line, absl::string_view key, absl::string_view value) {
  absl::StrAppend(&line, " ", key, "=", LogfmtValue(value));
}

}  // namespace

std::string LogfmtValue(absl::string_view value) {
  const auto plain = [](unsigned char c) { return c > ' ' && c != '=' && c != '"' && c != '\\' && c != 0x7f; };
  if (!value.empty() && std::all_of(value.begin(), value.end(), plain)) return std::string(value);
  std::string out = "\"";
  for (const unsigned char c : value) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < ' ' || c == 0x7f) {
          absl::StrAppendFormat(&out, "\\x%02x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

void LogLine(LogLevel level, absl::string_view message, const LogFields& fields) {
  std::string line = absl::StrCat("time=", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()));
  AppendPair(line, "level", level == LogLevel::kInfo ? "info" : level == LogLevel::kWarning ? "warning" : "error");
  for (const auto& [key, value] : fields) AppendPair(line, key, value);
  AppendPair(line, "msg", message);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace gnnd
