// Datasets in POSIX shared memory, one segment per array of the schema: /dev/shm/gnnd.<name>.<array>, plus
// gnnd.<name>.meta holding the manifest and the state ("gnnd-<instance>." instead of "gnnd." for a gnnd
// instance other than the default: several gnnd on one host never share a name). The meta segment is
// created first and exclusively (so two loaders of one name cannot race), says "loading" with the
// loader's pid, and is marked "ready" only after every array is written and validated: a set whose loader
// died is never mistaken for a complete one. Attach refuses anything not ready and names a stale set; the next load
// of that name removes it.
//
// A new copy of a dataset that is being served is loaded as a staged set, gnnd.<name>.staged.<array> (no
// dataset name has a dot), and published under the dataset's name once the old copy's segments are gone,
// so that a copy that fails to load never costs the one in use.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/base/vocabulary.h"
#include "common/dataset/dataset.h"

namespace gnnd {

struct ShmLoadOptions {
  // Permission bits of every segment (the umask does not apply).
  mode_t permissions = 0600;
  // Ask for 2 MiB transparent huge pages (madvise); needs shmem_enabled = advise, within_size or always.
  bool huge_pages = false;
  // Check every value after copying (ValidateArrays).
  bool validate = true;
  int threads = 0;  // 0: all cores
  // Load as the staged set of the name (see above): a ready staged set left by an earlier gnnd is replaced.
  bool staging = false;
  // Called after each array has been copied (progress reporting; tests use it to interrupt a load).
  std::function<void(const std::string& array, size_t bytes_done, size_t bytes_total)> on_array_loaded = nullptr;
  // The gnnd instance whose names the set takes (common/base/vocabulary.h).
  std::string instance = kDefaultInstance;
  // Schema positions of arrays that stay on storage (features read through a cache): no segment, a null
  // pointer in arrays(). Such a set is never attached by a later gnnd (it loads afresh: it is small).
  std::vector<int> on_storage = {};
  // Set (by another thread) to stop the load: it then ends CANCELLED and leaves nothing behind.
  const std::atomic<bool>* cancelled = nullptr;
};

struct ShmLoadStats {
  size_t bytes = 0;
  double copy_seconds = 0;
  double validate_seconds = 0;
  bool huge_pages_active = false;
};

// kUnreadable: this process may not open the set (another user's); `owner` says whose.
enum class ShmState { kLoading, kReady, kStale, kUnreadable };

struct ShmDatasetInfo {
  std::string name;
  ShmState state = ShmState::kLoading;
  pid_t loader_pid = 0;
  uid_t owner = 0;  // of the meta segment
  std::string instance = kDefaultInstance;
  bool loader_alive = false;  // the process that loaded it still runs (a ready set outlives its loader when kept)
};

class ShmDataset {
 public:
  ~ShmDataset();

  // Copies a dataset directory into fresh segments and marks the set ready. A stale set of the same
  // name is removed first, and so is a set that is not this process's own (another uid's, or writable by
  // group or others: its contents cannot be trusted); a ready one of its own or one still loading is an
  // error (ALREADY_EXISTS / UNAVAILABLE). On error nothing of this name is left behind.
  static absl::StatusOr<std::unique_ptr<ShmDataset>> Load(const std::string& name, const DatasetDir& source,
                                                          const ShmLoadOptions& options);
  // Maps a ready set read-only. Unless `any_owner`, every segment must be this process's own (its uid,
  // no group or other write): PERMISSION_DENIED otherwise. The manifest is checked and the segment sizes
  // matched against it; the arrays' values are not (ValidateArrays, before trusting them).
  static absl::StatusOr<std::unique_ptr<ShmDataset>> Attach(const std::string& name, bool any_owner = false,
                                                            const std::string& instance = kDefaultInstance);
  // Removes every segment of the set `name` (a dataset's name, or its staged set's "<name>.staged") of
  // `instance`, whatever its state. NOT_FOUND if there was none.
  static absl::Status Remove(const std::string& name, const std::string& instance = kDefaultInstance);
  // The sets present in /dev/shm, of every instance.
  static std::vector<ShmDatasetInfo> List();
  // Names are [A-Za-z0-9_-], 1 to 100 characters (they become file names).
  static absl::Status CheckName(const std::string& name);
  // The name of the staged set of dataset `name`.
  static std::string StagedName(const std::string& name) { return name + ".staged"; }

  // Renames a staged set's segments to the dataset's own names (arrays first, the meta segment last, so
  // the set is never seen ready with arrays missing). FAILED_PRECONDITION if a segment of that name
  // exists (remove the old copy's first); the set keeps its staged name then. The mappings are unchanged.
  absl::Status Publish();

  // The set's name: the dataset's, or its staged set's until Publish().
  const std::string& name() const { return name_; }
  const v1::DatasetManifest& manifest() const { return manifest_; }
  const DatasetSchema& schema() const { return schema_; }
  const DatasetArrays& arrays() const { return arrays_; }
  const ShmLoadStats& load_stats() const { return stats_; }
  // Attached with any_owner: why a segment is not this process's own to trust (another uid's, or writable
  // by group or others); empty if every one is.
  const std::string& not_own() const { return not_own_; }

 private:
  struct Segment;
  ShmDataset() = default;
  std::string name_;
  std::string dataset_;  // the dataset's name
  std::string instance_;
  v1::DatasetManifest manifest_;
  DatasetSchema schema_;
  DatasetArrays arrays_;
  std::vector<int> on_storage_;
  std::string not_own_;
  std::vector<std::unique_ptr<Segment>> segments_;
  ShmLoadStats stats_;
};

// "<instance prefix>.<name>.<suffix>": the shm_open name (the file under /dev/shm); "gnnd.<name>.<suffix>"
// for the default instance.
std::string ShmSegmentName(absl::string_view instance, absl::string_view dataset, absl::string_view suffix);

}  // namespace gnnd
