#include "common/dataset/dataset_writer.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/base/log.h"
#include "common/base/status.h"
#include "common/dataset/dataset.h"
#include "common/dataset/manifest.h"

namespace gnnd {
namespace fs = std::filesystem;
namespace {

// Removes `out`.partial-<pid> directories (this user's) whose pid no longer runs: imports that were killed.
void RemoveKilledWork(const fs::path& out) {
  std::error_code ec;
  const std::string prefix = out.filename().string() + ".partial-";
  fs::path parent = out.parent_path();
  if (parent.empty()) parent = ".";
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    if (name.rfind(prefix, 0) != 0 || !absl::SimpleAtoi(name.substr(prefix.size()), &pid) || pid <= 0) continue;
    if (!entry.is_directory(ec) || entry.is_symlink(ec)) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // running (or not ours to ask): left alone
    fs::remove_all(entry.path(), ec);
  }
}

// The work directories of the writers alive (RemoveWorkOnSignals removes them).
std::mutex live_mutex;
std::set<std::string>* live = new std::set<std::string>;  // never destroyed: the signal thread may outlive main

void Track(const std::string& work_dir, bool alive) {
  std::lock_guard<std::mutex> lock(live_mutex);
  if (alive) {
    live->insert(work_dir);
  } else {
    live->erase(work_dir);
  }
}

}  // namespace

absl::Status RemoveWorkOnSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  if (const int e = pthread_sigmask(SIG_BLOCK, &signals, nullptr); e != 0) return ErrnoStatus(e, "block signals");
  std::thread([signals] {
    int caught = 0;
    if (sigwait(&signals, &caught) != 0) return;
    {
      std::lock_guard<std::mutex> lock(live_mutex);
      std::error_code ec;
      for (const std::string& dir : *live) {
        fs::remove_all(dir, ec);
        fs::remove_all(dir, ec);  // a file the import made meanwhile
      }
    }
    std::signal(caught, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
    raise(caught);
    _exit(128 + caught);
  }).detach();
  return absl::OkStatus();
}

absl::StatusOr<DatasetWriter> DatasetWriter::Create(const std::string& out_dir) {
  std::string out = out_dir;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  std::error_code ec;
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec))) {
    return absl::AlreadyExistsError(absl::StrCat(out, ": already exists (choose another output directory)"));
  }
  const fs::path parent = fs::absolute(out, ec).parent_path();
  if (!fs::is_directory(parent, ec)) {  // made as `mkdir -p` would (only the directories that are missing)
    fs::create_directories(parent, ec);
    if (ec)
      return absl::NotFoundError(
          absl::StrCat(parent.string(), ": cannot create the parent directory (", ec.message(), ")"));
  }
  DatasetWriter writer;
  writer.out_dir_ = out;
  writer.work_dir_ = absl::StrCat(out, ".partial-", ::getpid());
  RemoveKilledWork(out);
  Track(writer.work_dir_, true);
  fs::remove_all(writer.work_dir_, ec);
  if (!fs::create_directory(writer.work_dir_, ec)) {
    return absl::PermissionDeniedError(absl::StrCat("create ", writer.work_dir_, ": ", ec.message()));
  }
  writer.committed_ = false;
  return writer;
}

DatasetWriter::DatasetWriter(DatasetWriter&& other) noexcept
    : out_dir_(std::move(other.out_dir_)), work_dir_(std::move(other.work_dir_)), committed_(other.committed_) {
  other.committed_ = true;
}

DatasetWriter::~DatasetWriter() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(work_dir_, ec);
  Track(work_dir_, false);
}

std::string DatasetWriter::Path(absl::string_view file) const { return absl::StrCat(work_dir_, "/", file); }

absl::Status DatasetWriter::Commit(v1::DatasetManifest manifest, int threads) {
  if (manifest.format_version() == 0) manifest.set_format_version(kDatasetFormatVersion);
  GNND_ASSIGN_OR_RETURN(const DatasetSchema schema, DatasetSchema::FromManifest(manifest));
  absl::flat_hash_set<std::string> arrays;
  for (const ArraySchema& array : schema.arrays) arrays.insert(array.file());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(work_dir_, ec)) {
    if (!arrays.contains(entry.path().filename().string())) fs::remove_all(entry.path(), ec);  // scratch
  }
  GNND_RETURN_IF_ERROR(WriteManifest(work_dir_, manifest));
  GNND_ASSIGN_OR_RETURN(DatasetDir dataset, DatasetDir::Open(work_dir_));
  GNND_RETURN_IF_ERROR(dataset.Validate(threads));
  if (fs::is_directory(out_dir_, ec)) fs::remove(out_dir_, ec);  // the empty directory Create() allowed
  if (std::rename(work_dir_.c_str(), out_dir_.c_str()) != 0) {
    return ErrnoStatus(errno, absl::StrCat("rename ", work_dir_, " to ", out_dir_));
  }
  committed_ = true;
  Track(work_dir_, false);
  return absl::OkStatus();
}

}  // namespace gnnd
