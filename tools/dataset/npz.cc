#include "tools/dataset/npz.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/base/status.h"
#include "common/dataset/npy.h"

namespace gnnd::dataset {
namespace {

// The file is renamed over `path` at the end: only a new or regular file may be there (never a device, a
// FIFO, a directory or a link, which the rename would replace, run as root even /dev/null).
absl::Status CheckWritableTarget(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, absl::StrCat("stat ", path));
  }
  if (S_ISREG(st.st_mode)) return absl::OkStatus();
  const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISLNK(st.st_mode)  ? "a symbolic link"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : "not a regular file";
  return absl::InvalidArgumentError(
      absl::StrCat(path, " is ", what, ": the output must be a new or regular file (it is replaced whole)"));
}

}  // namespace

absl::Status WriteNpz(const std::string& path, const std::vector<NpzArray>& arrays) {
  GNND_RETURN_IF_ERROR(CheckWritableTarget(path));
  // A temporary file of our own beside it (created exclusively), renamed over it when complete.
  std::string temp = path + ".XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("create a temporary file beside ", path));
  const mode_t umask = ::umask(0);  // the mode a new file would have had (mkstemp makes it 0600)
  ::umask(umask);
  (void)::fchmod(fd, 0666 & ~umask);
  ::close(fd);
  int error = 0;
  zip_t* archive = zip_open(temp.c_str(), ZIP_TRUNCATE, &error);
  if (archive == nullptr) {
    std::remove(temp.c_str());
    return absl::PermissionDeniedError(absl::StrCat("cannot create ", temp));
  }
  // libzip reads the buffers at zip_close(), so they must outlive it.
  std::vector<std::string> members;
  members.reserve(arrays.size());
  for (const NpzArray& a : arrays) {
    GNND_ASSIGN_OR_RETURN(std::string header, FormatNpyHeader(a.dtype, a.shape));
    size_t bytes = DTypeSize(a.dtype);
    for (int64_t d : a.shape) bytes *= static_cast<size_t>(d);
    members.push_back(header);
    members.back().append(static_cast<const char*>(a.data), bytes);
    zip_source_t* source = zip_source_buffer(archive, members.back().data(), members.back().size(), 0);
    const zip_int64_t index =
        source == nullptr ? -1 : zip_file_add(archive, (a.name + ".npy").c_str(), source, ZIP_FL_OVERWRITE);
    if (index < 0) {
      if (source != nullptr) zip_source_free(source);
      const std::string message = zip_strerror(archive);
      zip_discard(archive);
      std::remove(temp.c_str());
      return absl::InternalError(absl::StrCat(path, ": ", message));
    }
    zip_set_file_compression(archive, static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0);
  }
  if (zip_close(archive) != 0) {
    const std::string message = zip_strerror(archive);
    zip_discard(archive);
    std::remove(temp.c_str());
    return absl::InternalError(absl::StrCat(path, ": ", message));
  }
  GNND_RETURN_IF_ERROR(CheckWritableTarget(path));  // still: it may have changed while the file was written
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int rename_error = errno;
    std::remove(temp.c_str());
    return ErrnoStatus(rename_error, absl::StrCat("rename to ", path));
  }
  return absl::OkStatus();
}

}  // namespace gnnd::dataset
