// Leveled logging to stderr, one line per event in logfmt (key=value):
//   time=2026-11-22T03:42:27.804Z level=info event=session_opened session=3 dataset=products msg="..."
// Debian's Abseil (20220623) predates absl/log, so this formats with absl::StrFormat. Values with spaces,
// quotes, '=' or control bytes are quoted, with \" and \\ escaped and control bytes written as \n, \r, \t
// or \xHH: whatever a value holds (a trainer's dataset name, say), an event is one line and cannot forge
// another.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace gnnd {

enum class LogLevel { kInfo, kWarning, kError };

// Fields of an event, in order: {"session", "3"}, {"dataset", "products"}.
using LogFields = std::vector<std::pair<std::string, std::string>>;

void LogLine(LogLevel level, absl::string_view message, const LogFields& fields = {});
// `value` as it appears after `key=` in a line.
std::string LogfmtValue(absl::string_view value);

// A named event with fields (what log processors key on) and a message for people.
template <typename... Args>
void LogEvent(LogLevel level, absl::string_view event, LogFields fields, const absl::FormatSpec<Args...>& format,
              const Args&... args) {
  fields.insert(fields.begin(), {"event", std::string(event)});
  LogLine(level, absl::StrFormat(format, args...), fields);
}

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
