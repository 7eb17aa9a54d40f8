// Builds a dataset directory atomically: everything is written into OUT_DIR.partial-<pid>, the manifest
// last, the result is opened and validated like any reader would, and only then renamed to OUT_DIR.
// A failed import leaves no OUT_DIR and no .partial-<pid> (removed on error, or on SIGINT, SIGTERM and SIGHUP
// where the program asked: RemoveWorkOnSignals); one killed outright leaves its .partial-<pid>, which the next
// writer of the same OUT_DIR removes once that pid no longer runs.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gnnd/v1/dataset.pb.h"

namespace gnnd {

class DatasetWriter {
 public:
  // Fails if OUT_DIR exists (unless it is an empty directory) or its parent is missing.
  static absl::StatusOr<DatasetWriter> Create(const std::string& out_dir);
  DatasetWriter(DatasetWriter&&) noexcept;
  DatasetWriter& operator=(DatasetWriter&&) = delete;
  ~DatasetWriter();

  // A path inside the work directory, e.g. Path("indptr.npy").
  std::string Path(absl::string_view file) const;
  const std::string& out_dir() const { return out_dir_; }
  const std::string& work_dir() const { return work_dir_; }

  // Removes files not part of a dataset (spools), writes the manifest, validates, renames into place.
  absl::Status Commit(v1::DatasetManifest manifest, int threads);

 private:
  DatasetWriter() = default;
  std::string out_dir_, work_dir_;
  bool committed_ = true;  // nothing to clean until Create() succeeds
};

// For a program that writes datasets (gnnctl): SIGINT, SIGTERM and SIGHUP remove the work directories of the
// writers alive, then end the program as the signal would. Call once, first thing, before any other thread.
absl::Status RemoveWorkOnSignals();

}  // namespace gnnd
