// Command-line spelling: the CLIs document flags with hyphens (--batch-size) while Abseil flags are
// named with underscores. NormalizeFlagNames rewrites "--a-b[=v]" to "--a_b[=v]" in place before
// absl::ParseCommandLine, so both spellings work.
#pragma once

namespace gnnd {

void NormalizeFlagNames(int argc, char** argv);

}  // namespace gnnd
