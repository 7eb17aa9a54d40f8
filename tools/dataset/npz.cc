#include "tools/dataset/npz.h"

#include <zip.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/npy.h"
#include "common/status.h"

namespace gnnd::dataset {

absl::Status WriteNpz(const std::string& path, const std::vector<NpzArray>& arrays) {
  const std::string temp = path + ".tmp";
  int error = 0;
  zip_t* archive = zip_open(temp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (archive == nullptr) return absl::PermissionDeniedError(absl::StrCat("cannot create ", temp));
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
  if (std::rename(temp.c_str(), path.c_str()) != 0) return ErrnoStatus(errno, absl::StrCat("rename to ", path));
  return absl::OkStatus();
}

}  // namespace gnnd::dataset
