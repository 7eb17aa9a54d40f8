// Parsing protobuf text format (the manifest, the daemon config) with the first error's line and column.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace gnnd {

// Parses `text` into `message`; on failure INVALID_ARGUMENT "<what>: line L, column C: <problem>".
absl::Status ParseTextProto(const std::string& text, const std::string& what, google::protobuf::Message* message);
// Parses `text` as fields of `message`'s type and sets them in `message`: each field the text names replaces
// that field's value (a repeated field's values all; a field named with its default value too), the others are
// kept. Errors as ParseTextProto's; a string that is not valid UTF-8 is refused (gnnd could not read it).
absl::Status SetTextFields(const std::string& text, const std::string& what, google::protobuf::Message* message);

}  // namespace gnnd
