// gnnd: loads datasets into shared memory once and serves them until SIGTERM/SIGINT.
//   gnnd --dataset NAME=DATASET_DIR [--dataset NAME2=DIR2 ...] [--huge_pages] [--keep_segments]
//        [--exit_after_load]
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/dataset.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/parallel.h"
#include "common/shm_store.h"
#include "common/status.h"

ABSL_FLAG(std::vector<std::string>, dataset, {},
          "NAME=DATASET_DIR to load at start; repeat the flag (or separate with commas) for several");
ABSL_FLAG(bool, huge_pages, false, "back the segments with 2 MiB transparent huge pages");
ABSL_FLAG(bool, keep_segments, false, "leave the segments in /dev/shm at exit (for a fast restart)");
ABSL_FLAG(bool, exit_after_load, false, "load, print the summary and exit (segments removed unless kept)");
ABSL_FLAG(int, threads, 0, "threads for loading and validation (0: all cores)");

namespace gnnd {
namespace {

struct DatasetFlag {
  std::string name, dir;
};

// --dataset may repeat; absl keeps only the last occurrence, so collect them all from argv first.
std::vector<DatasetFlag> CollectDatasetFlags(int argc, char** argv, absl::Status* status) {
  std::vector<DatasetFlag> out;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--dataset" && i + 1 < argc) {
      value = argv[i + 1];
    } else if (absl::StartsWith(arg, "--dataset=")) {
      value = arg.substr(10);
    } else {
      continue;
    }
    for (absl::string_view item : absl::StrSplit(value, ',', absl::SkipEmpty())) {
      const size_t eq = item.find('=');
      if (eq == absl::string_view::npos || eq == 0 || eq + 1 == item.size()) {
        *status = absl::InvalidArgumentError(absl::StrCat("--dataset ", item, ": expected NAME=DATASET_DIR"));
        return {};
      }
      out.push_back({std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))});
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<ShmDataset>> LoadOne(const DatasetFlag& flag, const ShmLoadOptions& options) {
  GNND_RETURN_IF_ERROR(ShmDataset::CheckName(flag.name));
  GNND_ASSIGN_OR_RETURN(DatasetDir dir, DatasetDir::Open(flag.dir));
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<ShmDataset> loaded, ShmDataset::Load(flag.name, dir, options));
  const ShmLoadStats& s = loaded->load_stats();
  LogInfo("dataset '%s' loaded from %s: %.1f MiB copied in %.2f s (%.2f GB/s), validated in %.2f s%s", flag.name,
          flag.dir, s.bytes / 1048576.0, s.copy_seconds, s.bytes / 1e9 / std::max(s.copy_seconds, 1e-9),
          s.validate_seconds, s.huge_pages_active ? ", huge pages" : "");
  LogInfo("dataset '%s': %s", flag.name, DescribeDataset(loaded->manifest(), loaded->arrays()));
  return loaded;
}

int Run(int argc, char** argv) {
  absl::Status flag_status;
  const std::vector<DatasetFlag> flags = CollectDatasetFlags(argc, argv, &flag_status);
  NormalizeFlagNames(argc, argv);
  absl::ParseCommandLine(argc, argv);
  if (!flag_status.ok()) {
    LogError("%s", flag_status.message());
    return 2;
  }
  if (flags.empty()) {
    LogError("nothing to serve: give --dataset NAME=DATASET_DIR (make one with `gnnctl generate`)");
    return 2;
  }
  // Block the shutdown signals before any thread starts, then wait for them synchronously.
  sigset_t shutdown;
  sigemptyset(&shutdown);
  sigaddset(&shutdown, SIGINT);
  sigaddset(&shutdown, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &shutdown, nullptr);

  ShmLoadOptions options;
  options.huge_pages = absl::GetFlag(FLAGS_huge_pages);
  options.threads = absl::GetFlag(FLAGS_threads) > 0 ? absl::GetFlag(FLAGS_threads) : DefaultThreads();
  std::vector<std::unique_ptr<ShmDataset>> loaded;
  int exit_code = 0;
  for (const DatasetFlag& flag : flags) {
    absl::StatusOr<std::unique_ptr<ShmDataset>> dataset = LoadOne(flag, options);
    if (!dataset.ok()) {
      LogError("dataset '%s' (%s) not loaded: %s", flag.name, flag.dir, dataset.status().message());
      exit_code = 1;
      break;
    }
    loaded.push_back(std::move(*dataset));
  }
  if (exit_code == 0 && !absl::GetFlag(FLAGS_exit_after_load)) {
    LogInfo("serving %d dataset(s); SIGTERM or SIGINT stops", loaded.size());
    int signal = 0;
    sigwait(&shutdown, &signal);
    LogInfo("signal %d: shutting down", signal);
  }
  for (const auto& dataset : loaded) {
    if (absl::GetFlag(FLAGS_keep_segments)) {
      LogInfo("dataset '%s' left in shared memory (--keep_segments)", dataset->name());
    } else if (absl::Status s = ShmDataset::Remove(dataset->name()); !s.ok()) {
      LogWarning("removing dataset '%s': %s", dataset->name(), s.message());
    }
  }
  return exit_code;
}

}  // namespace
}  // namespace gnnd

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("gnnd --dataset NAME=DATASET_DIR [--dataset ...] [--huge_pages] [--keep_segments]");
  return gnnd::Run(argc, argv);
}
