// Command-line spelling: the CLIs document flags with hyphens (--batch-size) while Abseil flags are
// named with underscores. NormalizeFlagNames rewrites "--a-b[=v]" to "--a_b[=v]" in place before
// absl::ParseCommandLine, so both spellings work.
#pragma once

#include <string>
#include <vector>

namespace gnnd {

void NormalizeFlagNames(int argc, char** argv);
// Removes every "--NAME=V", "--NAME V" (V a next argument holding a '=', as NAME=FILE) and bare "--NAME" (the
// value "") from argv (after NormalizeFlagNames; `argc` shrinks) and returns the values in order: a flag that
// may be given more than once, where absl::ParseCommandLine keeps the last. With `takes_value`, the next
// argument is always the value ("--NAME FILE").
std::vector<std::string> TakeRepeatedFlag(int& argc, char** argv, const char* name, bool takes_value = false);

}  // namespace gnnd
