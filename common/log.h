// Minimal leveled logging to stderr with a timestamp. Debian's Abseil (20220623) predates absl/log, so
// this formats with absl::StrFormat and writes one line per call.
#pragma once

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace gnnd {

enum class LogLevel { kInfo, kWarning, kError };

void LogLine(LogLevel level, absl::string_view message);

template <typename... Args>
void LogInfo(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(LogLevel::kInfo, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogWarning(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(LogLevel::kWarning, absl::StrFormat(format, args...));
}
template <typename... Args>
void LogError(const absl::FormatSpec<Args...>& format, const Args&... args) {
  LogLine(LogLevel::kError, absl::StrFormat(format, args...));
}

}  // namespace gnnd
