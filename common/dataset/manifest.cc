#include "common/dataset/manifest.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/base/file_io.h"
#include "common/base/status.h"
#include "common/base/text_proto.h"
#include "google/protobuf/text_format.h"

namespace gnnd {

absl::StatusOr<v1::DatasetManifest> ParseManifest(const std::string& text, const std::string& what) {
  v1::DatasetManifest manifest;
  GNND_RETURN_IF_ERROR(ParseTextProto(text, what, &manifest));
  return manifest;
}

absl::StatusOr<v1::DatasetManifest> ReadManifest(int fd) {
  GNND_ASSIGN_OR_RETURN(std::string text, ReadAll(fd, kMaxManifestBytes, kManifestFile));
  return ParseManifest(text, kManifestFile);
}

std::string ManifestToText(const v1::DatasetManifest& manifest) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(manifest, &text);
  return text;
}

absl::Status WriteManifest(const std::string& dir, const v1::DatasetManifest& manifest) {
  const std::string path = absl::StrCat(dir, "/", kManifestFile);
  const std::string temp = path + ".tmp";
  const std::string text =
      absl::StrCat("# gnnd dataset manifest (schema: proto/gnnd/v1/dataset.proto)\n", ManifestToText(manifest));
  ::unlink(temp.c_str());  // never written through: a link or a file left there is not ours
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("create ", temp));
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return ErrnoStatus(err, absl::StrCat("write ", temp));
  if (std::rename(temp.c_str(), path.c_str()) != 0) return ErrnoStatus(errno, absl::StrCat("rename ", temp));
  return absl::OkStatus();
}

}  // namespace gnnd
