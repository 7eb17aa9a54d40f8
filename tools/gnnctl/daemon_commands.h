// gnnctl's commands that talk to a running gnnd: status, datasets, load, unload, stats.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gnnd/v1/service.pb.h"

namespace gnnd::gnnctl {

// command is one of status | datasets | load | unload | stats; args are its positional arguments.
// wait_seconds > 0: until gnnd serves at `address` (a script that just started it), at most that long.
absl::Status RunDaemonCommand(const std::string& address, const std::string& command,
                              const std::vector<std::string>& args, const v1::LoadDatasetRequest& load = {},
                              double watch_seconds = 0, double wait_seconds = 0);
bool IsDaemonCommand(const std::string& command);

}  // namespace gnnd::gnnctl
