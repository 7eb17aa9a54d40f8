#include "common/base/flags.h"

#include <cstring>

namespace gnnd {

void NormalizeFlagNames(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* arg = argv[i];
    if (std::strcmp(arg, "--") == 0) return;  // the rest is positional
    if (std::strncmp(arg, "--", 2) != 0) continue;
    for (char* c = arg + 2; *c != '\0' && *c != '='; ++c) {
      if (*c == '-') *c = '_';
    }
  }
}

std::vector<std::string> TakeRepeatedFlag(int& argc, char** argv, const char* name, bool takes_value) {
  const std::string flag = std::string("--") + name;
  std::vector<std::string> values;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strcmp(arg, "--") == 0) {  // the rest is positional
      while (i < argc) argv[out++] = argv[i++];
      break;
    }
    if (flag == arg) {
      const bool next_is_value =
          i + 1 < argc && (takes_value || (argv[i + 1][0] != '-' && std::strchr(argv[i + 1], '=') != nullptr));
      values.emplace_back(next_is_value ? argv[++i] : "");
    } else if (std::strncmp(arg, flag.c_str(), flag.size()) == 0 && arg[flag.size()] == '=') {
      values.emplace_back(arg + flag.size() + 1);
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  return values;
}

}  // namespace gnnd
