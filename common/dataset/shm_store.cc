#include "common/dataset/shm_store.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/interprocess/mapped_region.hpp>
#include <boost/interprocess/shared_memory_object.hpp>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/base/file_io.h"
#include "common/base/log.h"
#include "common/base/parallel.h"
#include "common/base/status.h"
#include "common/base/vocabulary.h"

namespace gnnd {
namespace bip = boost::interprocess;
namespace {

constexpr char kShmMagic[8] = {'G', 'N', 'N', 'D', 'S', 'H', 'M', '1'};
constexpr uint32_t kStateLoading = 0;
constexpr uint32_t kStateReady = 1;
constexpr size_t kCopyChunk = 64 << 20;

// The start of the meta segment; the serialized manifest follows it.
struct MetaHeader {
  char magic[8];
  std::atomic<uint32_t> state;
  int32_t loader_pid;
  uint64_t loader_start_time;  // /proc/<pid>/stat field 22, to tell a reused pid apart
  uint64_t manifest_bytes;
};
static_assert(std::atomic<uint32_t>::is_always_lock_free);

uint64_t ProcessStartTime(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::stringstream text;
  text << in.rdbuf();
  const std::string stat = text.str();
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 22) return std::strtoull(field.c_str(), nullptr, 10);
  }
  return 0;
}

bool LoaderAlive(const MetaHeader& meta) {
  if (::kill(meta.loader_pid, 0) != 0 && errno == ESRCH) return false;
  const uint64_t start = ProcessStartTime(meta.loader_pid);
  return start == 0 || start == meta.loader_start_time;
}

absl::Status FromBoost(const bip::interprocess_exception& e, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", e.what());
  switch (e.get_error_code()) {
    case bip::not_found_error:
      return absl::NotFoundError(message);
    case bip::already_exists_error:
      return absl::AlreadyExistsError(message);
    case bip::security_error:
      return absl::PermissionDeniedError(message);
    case bip::out_of_space_error:
    case bip::out_of_memory_error:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

bip::permissions Permissions(mode_t mode) {
  bip::permissions p;
  p.set_permissions(mode);
  return p;
}

// An existing segment, open read-only: opening never blocks (a FIFO anyone may make in /dev/shm would
// hang a plain open) and never follows a link, and anything but a regular file is refused, naming it.
struct OpenSegment {
  FileDescriptor fd;
  struct stat st;
};

absl::StatusOr<OpenSegment> OpenExisting(const std::string& segment) {
  const int fd = ::shm_open(("/" + segment).c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0);
  if (fd < 0) {
    if (errno == ELOOP) {
      return absl::PermissionDeniedError(absl::StrCat(segment, ": a symbolic link, not a segment: refusing it"));
    }
    return ErrnoStatus(errno, absl::StrCat("open ", segment));
  }
  OpenSegment open{FileDescriptor(fd), {}};
  if (::fstat(fd, &open.st) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", segment));
  if (!S_ISREG(open.st.st_mode)) {
    return absl::PermissionDeniedError(absl::StrFormat("%s: not a segment (file type %o, owner uid %d): refusing it",
                                                       segment, open.st.st_mode & S_IFMT, open.st.st_uid));
  }
  return open;
}

// PERMISSION_DENIED unless the open segment belongs to this process's uid and no one else may write it.
absl::Status CheckOwnSegment(const struct stat& st, const std::string& segment) {
  if (st.st_uid != ::geteuid()) {
    return absl::PermissionDeniedError(
        absl::StrCat(segment, ": owned by uid ", st.st_uid, ", not by uid ", ::geteuid(), ": refusing to use it"));
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "%s: writable by group or others (mode %04o): refusing to use it", segment, st.st_mode & 07777));
  }
  return absl::OkStatus();
}

// Whether the set's meta segment is this process's own (see CheckOwnSegment); NOT_FOUND if absent.
absl::Status CheckOwnSet(const std::string& instance, const std::string& name) {
  const std::string segment = ShmSegmentName(instance, name, "meta");
  GNND_ASSIGN_OR_RETURN(const OpenSegment open, OpenExisting(segment));
  return CheckOwnSegment(open.st, segment);
}

// A read-only mapping of `bytes` of an open segment, unmapped when it goes away.
class ReadOnlyMapping {
 public:
  static absl::StatusOr<ReadOnlyMapping> Map(int fd, size_t bytes, const std::string& segment) {
    ReadOnlyMapping m;
    if (bytes == 0) return m;
    void* address = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (address == MAP_FAILED) return ErrnoStatus(errno, absl::StrCat("map ", segment));
    m.address_ = address;
    m.bytes_ = bytes;
    return m;
  }
  ReadOnlyMapping(ReadOnlyMapping&& other) noexcept
      : address_(std::exchange(other.address_, nullptr)), bytes_(other.bytes_) {}
  ReadOnlyMapping& operator=(ReadOnlyMapping&&) = delete;
  ~ReadOnlyMapping() {
    if (address_ != nullptr) ::munmap(address_, bytes_);
  }
  const void* address() const { return address_; }

 private:
  ReadOnlyMapping() = default;
  void* address_ = nullptr;
  size_t bytes_ = 0;
};

// Reads the state of an existing meta segment.
absl::StatusOr<ShmDatasetInfo> ReadInfo(const std::string& instance, const std::string& name) {
  absl::StatusOr<OpenSegment> open = OpenExisting(ShmSegmentName(instance, name, "meta"));
  if (!open.ok()) {
    return absl::Status(open.status().code(),
                        absl::StrCat("shared memory set '", name, "': ", open.status().message()));
  }
  ShmDatasetInfo info{name, ShmState::kStale, 0, open->st.st_uid, instance};
  if (static_cast<size_t>(open->st.st_size) < sizeof(MetaHeader)) return info;  // died before writing the header
  GNND_ASSIGN_OR_RETURN(const ReadOnlyMapping header, ReadOnlyMapping::Map(open->fd.get(), sizeof(MetaHeader), name));
  const auto* meta = static_cast<const MetaHeader*>(header.address());
  info.loader_pid = meta->loader_pid;
  if (std::memcmp(meta->magic, kShmMagic, sizeof(kShmMagic)) != 0) return info;
  info.loader_alive = LoaderAlive(*meta);
  if (meta->state.load(std::memory_order_acquire) == kStateReady) {
    info.state = ShmState::kReady;
  } else if (info.loader_alive) {
    info.state = ShmState::kLoading;
  }
  return info;
}

absl::Status CheckCancelled(const std::atomic<bool>* cancelled) {
  if (cancelled == nullptr || !cancelled->load()) return absl::OkStatus();
  return absl::CancelledError("the load was cancelled (gnnd is stopping)");
}

// Copies the element data of an .npy file into `dst` with parallel preads, chunk by chunk until cancelled.
absl::Status ReadInto(const NpyFile& file, char* dst, size_t bytes, int threads, const std::atomic<bool>* cancelled) {
  const int fd = file.fd();  // the file that was checked, not whatever its name points at now
  std::mutex mutex;
  absl::Status first_error;
  ParallelFor(static_cast<int64_t>(bytes), kCopyChunk, threads, [&](int64_t begin, int64_t end) {
    absl::Status s = CheckCancelled(cancelled);
    if (s.ok()) {
      s = PreadFully(fd, dst + begin, end - begin, static_cast<off_t>(file.header().data_offset + begin), file.path());
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (first_error.ok()) first_error = s;
  });
  return first_error;
}

}  // namespace

// A segment this process made (region) or attached (mapping).
struct ShmDataset::Segment {
  bip::mapped_region region;
  std::optional<ReadOnlyMapping> mapping;
  const void* address() const { return mapping ? mapping->address() : region.get_address(); }
};

std::string ShmSegmentName(absl::string_view instance, absl::string_view dataset, absl::string_view suffix) {
  return absl::StrCat(InstancePrefix(instance), ".", dataset, ".", suffix);
}

absl::Status ShmDataset::CheckName(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 100 && std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("dataset name ", Quoted(name), " is invalid: use 1 to 100 of A-Z a-z 0-9 _ -"));
}

ShmDataset::~ShmDataset() = default;

std::vector<ShmDatasetInfo> ShmDataset::List() {
  std::vector<ShmDatasetInfo> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    // PREFIX.NAME.meta or PREFIX.NAME.staged.meta, PREFIX "gnnd" (the default instance) or "gnnd-INSTANCE".
    const std::string file = entry.path().filename();
    const std::vector<std::string> parts = absl::StrSplit(file, '.');
    if (parts.size() < 3 || parts.back() != "meta") continue;
    std::string instance;
    if (parts[0] == kDefaultInstance) {
      instance = kDefaultInstance;
    } else if (absl::StartsWith(parts[0], "gnnd-")) {
      instance = parts[0].substr(5);
    }
    if (!CheckInstanceName(instance, "instance").ok()) continue;
    const std::string name = file.substr(parts[0].size() + 1, file.size() - parts[0].size() - 6);
    if (absl::StatusOr<ShmDatasetInfo> info = ReadInfo(instance, name); info.ok()) {
      out.push_back(*info);
    } else if (struct stat st; ::stat(entry.path().c_str(), &st) == 0) {
      out.push_back({name, ShmState::kUnreadable, 0, st.st_uid, instance});  // listed, not hidden
    }
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return std::tie(a.instance, a.name) < std::tie(b.instance, b.name); });
  return out;
}

absl::Status ShmDataset::Remove(const std::string& name, const std::string& instance) {
  GNND_RETURN_IF_ERROR(CheckInstanceName(instance, "instance"));
  absl::string_view dataset = name;
  (void)absl::ConsumeSuffix(&dataset, ".staged");
  GNND_RETURN_IF_ERROR(CheckName(std::string(dataset)));
  bool any = false;
  absl::Status failed;
  auto unlink = [&](const std::string& segment) {
    if (::shm_unlink(("/" + segment).c_str()) == 0) {
      any = true;
    } else if (errno != ENOENT && failed.ok()) {
      failed = ErrnoStatus(errno, absl::StrCat("remove ", segment));
    }
  };
  // Every array segment of the set, whatever its schema (a typed set names its arrays after its types):
  // gnnd.NAME.*, less the staged set's gnnd.NAME.staged.* (no node type is named "staged").
  const std::string prefix = ShmSegmentName(instance, name, ""), staged = ShmSegmentName(instance, name, "staged."),
                    meta = ShmSegmentName(instance, name, "meta");
  std::vector<std::string> segments;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string file = entry.path().filename();
    if (absl::StartsWith(file, prefix) && !absl::StartsWith(file, staged) && file != meta) segments.push_back(file);
  }
  for (const std::string& segment : segments) unlink(segment);
  unlink(meta);  // last, so a set is never seen ready with arrays missing
  GNND_RETURN_IF_ERROR(failed);
  if (!any) {
    return absl::NotFoundError(
        absl::StrCat("no dataset '", name, "' in shared memory",
                     instance == kDefaultInstance ? "" : absl::StrCat(" (instance '", instance, "')")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ShmDataset>> ShmDataset::Load(const std::string& dataset_name, const DatasetDir& source,
                                                             const ShmLoadOptions& options) {
  GNND_RETURN_IF_ERROR(CheckName(dataset_name));
  const std::string& instance = options.instance;
  GNND_RETURN_IF_ERROR(CheckInstanceName(instance, "instance"));
  const std::string name = options.staging ? StagedName(dataset_name) : dataset_name;  // the set's
  const v1::DatasetManifest& manifest = source.manifest();
  const DatasetSchema& schema = source.schema();
  const std::string meta_name = ShmSegmentName(instance, name, "meta");
  const int threads = options.threads > 0 ? options.threads : DefaultThreads();
  auto dataset = std::unique_ptr<ShmDataset>(new ShmDataset());
  dataset->name_ = name;
  dataset->dataset_ = dataset_name;
  dataset->instance_ = instance;
  dataset->manifest_ = manifest;
  dataset->schema_ = schema;
  dataset->arrays_ = DatasetArrays(schema);
  dataset->on_storage_ = options.on_storage;
  const auto stays_on_storage = [&](size_t i) {
    return std::find(options.on_storage.begin(), options.on_storage.end(), static_cast<int>(i)) !=
           options.on_storage.end();
  };

  // 1. Claim the name: create the meta segment exclusively.
  std::string serialized;
  manifest.SerializeToString(&serialized);
  MetaHeader* meta = nullptr;
  for (int attempt = 0;; ++attempt) {
    try {
      bip::shared_memory_object shm(bip::create_only, meta_name.c_str(), bip::read_write,
                                    Permissions(options.permissions));
      shm.truncate(static_cast<bip::offset_t>(sizeof(MetaHeader) + serialized.size()));
      auto segment = std::make_unique<Segment>(Segment{bip::mapped_region(shm, bip::read_write)});
      meta = static_cast<MetaHeader*>(segment->region.get_address());
      dataset->segments_.push_back(std::move(segment));
      break;
    } catch (const bip::interprocess_exception& e) {
      if (e.get_error_code() != bip::already_exists_error || attempt > 1) {
        return FromBoost(e, absl::StrCat("create ", meta_name));
      }
    }
    if (absl::Status own = CheckOwnSet(instance, name); absl::IsPermissionDenied(own)) {
      // Another user's (or a writable) set in our name: replace it, if we may remove it.
      LogWarning("replacing the shared-memory set '%s': %s", name, own.message());
      if (absl::Status removed = Remove(name, instance); !removed.ok() && !absl::IsNotFound(removed)) {
        return absl::Status(removed.code(), absl::StrCat(removed.message(), " (", own.message(), ")"));
      }
      continue;
    }
    GNND_ASSIGN_OR_RETURN(ShmDatasetInfo existing, ReadInfo(instance, name));
    if (existing.state == ShmState::kReady && options.staging) {  // left by a gnnd that stopped before publishing
      LogWarning("removing the staged shared-memory set '%s' left by an earlier load", name);
      (void)Remove(name, instance);
      continue;
    }
    if (existing.state == ShmState::kReady) {
      return absl::AlreadyExistsError(
          absl::StrCat("dataset '", name, "' is already in shared memory; unload it first"));
    }
    if (existing.state == ShmState::kLoading) {
      return absl::UnavailableError(absl::StrCat("dataset '", name, "' is being loaded by pid ", existing.loader_pid));
    }
    LogWarning("removing a stale shared-memory set '%s' (its load by pid %d never finished)", name,
               existing.loader_pid);
    (void)Remove(name, instance);
  }
  // From here on, any failure removes every segment of this name.
  absl::Cleanup remove_on_error = [&] {
    dataset->segments_.clear();
    (void)Remove(name, instance);
  };
  std::memcpy(meta->magic, kShmMagic, sizeof(kShmMagic));
  meta->loader_pid = ::getpid();
  meta->loader_start_time = ProcessStartTime(::getpid());
  meta->manifest_bytes = serialized.size();
  std::memcpy(reinterpret_cast<char*>(meta + 1), serialized.data(), serialized.size());
  meta->state.store(kStateLoading, std::memory_order_release);

  if (options.huge_pages) {
    std::ifstream setting("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
    std::string modes((std::istreambuf_iterator<char>(setting)), {});
    dataset->stats_.huge_pages_active = absl::StrContains(modes, "[advise]") || absl::StrContains(modes, "[always]") ||
                                        absl::StrContains(modes, "[within_size]") ||
                                        absl::StrContains(modes, "[force]");
    if (!dataset->stats_.huge_pages_active) {
      LogWarning("huge pages requested but shmem transparent huge pages are off (shmem_enabled: %s)",
                 absl::StripAsciiWhitespace(modes));
    }
  }

  // 2. Copy every array into its own segment.
  size_t total = 0, done = 0;
  for (size_t i = 0; i < schema.arrays.size(); ++i) total += stays_on_storage(i) ? 0 : schema.arrays[i].bytes();
  const auto copy_start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < schema.arrays.size(); ++i) {
    const ArraySchema& array = schema.arrays[i];
    const std::string segment_name = ShmSegmentName(instance, name, array.name);
    const size_t bytes = array.bytes();
    if (stays_on_storage(i)) continue;
    try {
      bip::shared_memory_object::remove(segment_name.c_str());  // debris of a crashed load
      bip::shared_memory_object shm(bip::create_only, segment_name.c_str(), bip::read_write,
                                    Permissions(options.permissions));
      shm.truncate(static_cast<bip::offset_t>(bytes));
      if (bytes == 0) {
        dataset->arrays_.data[i] = meta;  // any valid pointer: nothing is read
        continue;
      }
      auto segment = std::make_unique<Segment>(Segment{bip::mapped_region(shm, bip::read_write)});
      char* dst = static_cast<char*>(segment->region.get_address());
      if (options.huge_pages) ::madvise(dst, bytes, MADV_HUGEPAGE);
      // pread into the segment: measured faster than memcpy from a mapping of the file (no faults on
      // the source side).
      GNND_RETURN_IF_ERROR(ReadInto(source.file(i), dst, bytes, threads, options.cancelled));
      dataset->arrays_.data[i] = dst;
      dataset->segments_.push_back(std::move(segment));
    } catch (const bip::interprocess_exception& e) {
      return FromBoost(e, absl::StrCat("create ", segment_name, " (", bytes, " bytes)"));
    }
    done += bytes;
    if (options.on_array_loaded) options.on_array_loaded(array.name, done, total);
  }
  const auto copy_end = std::chrono::steady_clock::now();
  dataset->stats_.bytes = total;
  dataset->stats_.copy_seconds = std::chrono::duration<double>(copy_end - copy_start).count();

  // 3. Validate the copy, then mark the set ready: the last write.
  GNND_RETURN_IF_ERROR(CheckCancelled(options.cancelled));
  if (options.validate) {
    GNND_RETURN_IF_ERROR(ValidateArrays(schema, dataset->arrays_, threads));
    dataset->stats_.validate_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - copy_end).count();
  }
  meta->state.store(kStateReady, std::memory_order_release);
  std::move(remove_on_error).Cancel();
  return dataset;
}

absl::StatusOr<std::unique_ptr<ShmDataset>> ShmDataset::Attach(const std::string& name, bool any_owner,
                                                               const std::string& instance) {
  GNND_RETURN_IF_ERROR(CheckName(name));
  GNND_RETURN_IF_ERROR(CheckInstanceName(instance, "instance"));
  GNND_ASSIGN_OR_RETURN(ShmDatasetInfo info, ReadInfo(instance, name));
  if (info.state == ShmState::kLoading) {
    return absl::UnavailableError(absl::StrCat("dataset '", name, "' is still being loaded by pid ", info.loader_pid));
  }
  if (info.state == ShmState::kStale) {
    return absl::FailedPreconditionError(
        absl::StrCat("dataset '", name, "' in shared memory is stale: its load by pid ", info.loader_pid,
                     " never finished; load it again (that removes the stale set) or unload it"));
  }
  auto dataset = std::unique_ptr<ShmDataset>(new ShmDataset());
  dataset->name_ = name;
  dataset->dataset_ = name;
  dataset->instance_ = instance;
  std::string segment_name = ShmSegmentName(instance, name, "meta");
  GNND_ASSIGN_OR_RETURN(OpenSegment meta_open, OpenExisting(segment_name));
  // Every segment this process's own, no one else may write it: else refused, or (any_owner) remembered.
  const auto check_own = [&](const struct stat& st) -> absl::Status {
    absl::Status own = CheckOwnSegment(st, segment_name);
    if (own.ok() || !any_owner) return own;
    if (dataset->not_own_.empty())
      dataset->not_own_ = std::string(absl::StripSuffix(own.message(), ": refusing to use it"));
    return absl::OkStatus();
  };
  GNND_RETURN_IF_ERROR(check_own(meta_open.st));
  const size_t meta_size = static_cast<size_t>(meta_open.st.st_size);
  if (meta_size < sizeof(MetaHeader)) return absl::DataLossError(absl::StrCat(segment_name, ": no header"));
  GNND_ASSIGN_OR_RETURN(ReadOnlyMapping meta_mapping,
                        ReadOnlyMapping::Map(meta_open.fd.get(), meta_size, segment_name));
  const auto* meta = static_cast<const MetaHeader*>(meta_mapping.address());
  if (meta->manifest_bytes > meta_size - sizeof(MetaHeader) ||
      !dataset->manifest_.ParseFromArray(meta + 1, static_cast<int>(meta->manifest_bytes))) {
    return absl::DataLossError(absl::StrCat(segment_name, ": manifest does not parse"));
  }
  absl::StatusOr<DatasetSchema> schema = DatasetSchema::FromManifest(dataset->manifest_);
  if (!schema.ok()) return absl::DataLossError(absl::StrCat(segment_name, ": ", schema.status().message()));
  dataset->schema_ = *std::move(schema);
  dataset->arrays_ = DatasetArrays(dataset->schema_);
  dataset->segments_.push_back(std::make_unique<Segment>());
  dataset->segments_.back()->mapping.emplace(std::move(meta_mapping));
  for (size_t i = 0; i < dataset->schema_.arrays.size(); ++i) {
    const ArraySchema& array = dataset->schema_.arrays[i];
    segment_name = ShmSegmentName(instance, name, array.name);
    const size_t bytes = array.bytes();
    GNND_ASSIGN_OR_RETURN(const OpenSegment open, OpenExisting(segment_name));
    GNND_RETURN_IF_ERROR(check_own(open.st));
    if (static_cast<size_t>(open.st.st_size) != bytes) {
      return absl::DataLossError(
          absl::StrCat(segment_name, ": ", open.st.st_size, " bytes, the manifest implies ", bytes));
    }
    if (bytes == 0) {
      dataset->arrays_.data[i] = dataset->segments_.front()->address();
      continue;
    }
    GNND_ASSIGN_OR_RETURN(ReadOnlyMapping mapping, ReadOnlyMapping::Map(open.fd.get(), bytes, segment_name));
    dataset->arrays_.data[i] = mapping.address();
    dataset->segments_.push_back(std::make_unique<Segment>());
    dataset->segments_.back()->mapping.emplace(std::move(mapping));
  }
  return dataset;
}

absl::Status ShmDataset::Publish() {
  if (name_ == dataset_) return absl::OkStatus();
  std::vector<std::string> suffixes;
  for (size_t i = 0; i < schema_.arrays.size(); ++i) {
    if (std::find(on_storage_.begin(), on_storage_.end(), static_cast<int>(i)) == on_storage_.end()) {
      suffixes.push_back(schema_.arrays[i].name);
    }
  }
  suffixes.emplace_back("meta");  // last: see the header
  for (const std::string& suffix : suffixes) {
    const std::string from = absl::StrCat("/dev/shm/", ShmSegmentName(instance_, name_, suffix));
    const std::string to = absl::StrCat("/dev/shm/", ShmSegmentName(instance_, dataset_, suffix));
    // Never over a segment someone else made in the meantime (/dev/shm is everyone's).
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) != 0) {
      const int error = errno;
      for (const std::string& done : suffixes) {  // back to the staged names, all of them
        if (done == suffix) break;
        (void)::rename(absl::StrCat("/dev/shm/", ShmSegmentName(instance_, dataset_, done)).c_str(),
                       absl::StrCat("/dev/shm/", ShmSegmentName(instance_, name_, done)).c_str());
      }
      if (error == EEXIST) {
        return absl::FailedPreconditionError(
            absl::StrCat("publish the staged set '", name_, "': ", to, " exists (remove the old copy first)"));
      }
      return ErrnoStatus(error, absl::StrCat("rename ", from, " to ", to));
    }
  }
  name_ = dataset_;
  return absl::OkStatus();
}

}  // namespace gnnd
