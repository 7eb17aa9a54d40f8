#include "tools/dataset/input.h"

#include <zip.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/file_io.h"
#include "common/base/status.h"

namespace gnnd::dataset {
namespace {
constexpr size_t kBlock = 4 << 20;
}

absl::StatusOr<std::unique_ptr<LineReader>> LineReader::Open(const std::string& path, std::string display_name) {
  GNND_ASSIGN_OR_RETURN(FileDescriptor fd, OpenRegularFile(path, display_name));  // a FIFO would block
  gzFile file = gzdopen(fd.get(), "rb");
  if (file == nullptr) return ErrnoStatus(errno, absl::StrCat("open ", display_name));
  fd.release();  // gzclose closes it
  gzbuffer(file, 1 << 20);
  auto reader = std::unique_ptr<LineReader>(new LineReader());
  reader->file_ = file;
  reader->name_ = std::move(display_name);
  reader->buffer_.resize(kBlock);
  return reader;
}

LineReader::~LineReader() {
  if (file_ != nullptr) gzclose(file_);
}

std::string LineReader::Where() const { return absl::StrCat(name_, " line ", line_number_); }

absl::StatusOr<bool> LineReader::Next(absl::string_view* line) {
  carry_.clear();
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const void* newline = std::memchr(start, '\n', end_ - begin_);
    if (newline != nullptr) {
      const size_t length = static_cast<const char*>(newline) - start;
      begin_ += length + 1;
      ++line_number_;
      if (carry_.empty()) {
        *line = absl::string_view(start, length);
      } else {
        carry_.append(start, length);
        *line = carry_;
      }
      if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
      return true;
    }
    carry_.append(start, end_ - begin_);  // a line spanning blocks
    begin_ = end_ = 0;
    if (eof_) break;
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    if (n < 0) {
      int code;
      const char* message = gzerror(file_, &code);
      return absl::DataLossError(absl::StrCat(name_, ": read error after line ", line_number_, ": ", message));
    }
    if (n == 0) eof_ = true;
    end_ = static_cast<size_t>(n);
    bytes_read_ += n;
  }
  if (carry_.empty()) return false;
  ++line_number_;  // last line without a newline
  *line = carry_;
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  return true;
}

std::vector<absl::string_view> SplitFields(absl::string_view line, char separator) {
  std::vector<absl::string_view> fields;
  if (separator != ' ') {
    size_t start = 0;
    for (size_t i = 0; i <= line.size(); ++i) {
      if (i == line.size() || line[i] == separator) {
        fields.push_back(line.substr(start, i - start));
        start = i + 1;
      }
    }
    return fields;
  }
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

bool Exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

absl::StatusOr<int64_t> ParseInt(absl::string_view field, absl::string_view where) {
  while (!field.empty() && field.front() == ' ') field.remove_prefix(1);
  while (!field.empty() && field.back() == ' ') field.remove_suffix(1);
  int64_t value;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec == std::errc() && end == field.data() + field.size()) return value;
  // Integers written as floats ("3.0") are accepted when exact.
  absl::StatusOr<double> as_double = ParseDouble(field, where);
  if (as_double.ok() && std::isfinite(*as_double) && *as_double == std::floor(*as_double) &&
      std::fabs(*as_double) < 9.0e15) {
    return static_cast<int64_t>(*as_double);
  }
  return absl::InvalidArgumentError(absl::StrCat(where, ": '", field, "' is not an integer"));
}

absl::StatusOr<double> ParseDouble(absl::string_view field, absl::string_view where) {
  while (!field.empty() && field.front() == ' ') field.remove_prefix(1);
  while (!field.empty() && field.back() == ' ') field.remove_suffix(1);
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  double value;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec == std::errc() && end == field.data() + field.size() && !field.empty()) return value;
  return absl::InvalidArgumentError(absl::StrCat(where, ": '", field, "' is not a number"));
}

namespace {
class ZipMemberSource : public ByteSource {
 public:
  ZipMemberSource(zip_t* archive, zip_file_t* file, std::string name)
      : archive_(archive), file_(file), name_(std::move(name)) {}
  ~ZipMemberSource() override {
    zip_fclose(file_);
    zip_discard(archive_);
  }
  absl::StatusOr<size_t> Read(void* buffer, size_t size) override {
    const zip_int64_t n = zip_fread(file_, buffer, size);
    if (n < 0) return absl::DataLossError(absl::StrCat(name_, ": ", zip_file_strerror(file_)));
    return static_cast<size_t>(n);
  }

 private:
  zip_t* archive_;
  zip_file_t* file_;
  std::string name_;
};
}  // namespace

namespace {
absl::StatusOr<zip_t*> OpenZip(const std::string& npz_path) {
  GNND_ASSIGN_OR_RETURN(FileDescriptor fd, OpenRegularFile(npz_path, npz_path));  // a FIFO would block
  int error = 0;
  zip_t* archive = zip_fdopen(fd.get(), ZIP_RDONLY, &error);
  if (archive != nullptr) {
    fd.release();  // the archive closes it
    return archive;
  }
  zip_error_t ze;
  zip_error_init_with_code(&ze, error);
  absl::Status status = error == ZIP_ER_NOENT || error == ZIP_ER_OPEN
                            ? absl::NotFoundError(absl::StrCat(npz_path, ": ", zip_error_strerror(&ze)))
                            : absl::InvalidArgumentError(absl::StrCat(npz_path, ": ", zip_error_strerror(&ze)));
  zip_error_fini(&ze);
  return status;
}
}  // namespace

absl::StatusOr<std::vector<std::string>> ListNpzArrays(const std::string& npz_path) {
  GNND_ASSIGN_OR_RETURN(zip_t * archive, OpenZip(npz_path));
  std::vector<std::string> names;
  const zip_int64_t entries = zip_get_num_entries(archive, 0);
  for (zip_int64_t i = 0; i < entries; ++i) {
    const char* name = zip_get_name(archive, static_cast<zip_uint64_t>(i), 0);
    if (name == nullptr) continue;
    absl::string_view member = name;
    absl::ConsumeSuffix(&member, ".npy");
    names.emplace_back(member);
  }
  zip_discard(archive);
  return names;
}

absl::StatusOr<std::unique_ptr<ByteSource>> OpenNpzMember(const std::string& npz_path, const std::string& member) {
  GNND_ASSIGN_OR_RETURN(zip_t * archive, OpenZip(npz_path));
  zip_int64_t index = zip_name_locate(archive, (member + ".npy").c_str(), 0);
  if (index < 0) index = zip_name_locate(archive, member.c_str(), 0);
  if (index < 0) {
    zip_discard(archive);
    return absl::NotFoundError(absl::StrCat(npz_path, ": has no array '", member, "'"));
  }
  zip_file_t* file = zip_fopen_index(archive, static_cast<zip_uint64_t>(index), 0);
  if (file == nullptr) {
    absl::Status status = absl::InvalidArgumentError(absl::StrCat(npz_path, ":", member, ": ", zip_strerror(archive)));
    zip_discard(archive);
    return status;
  }
  return std::make_unique<ZipMemberSource>(archive, file, absl::StrCat(npz_path, ":", member));
}

absl::StatusOr<NpyStreamReader> OpenNpyStream(const std::string& path, std::string display_name) {
  absl::StatusOr<std::unique_ptr<ByteSource>> source = OpenFileSource(path);
  if (!source.ok())
    return absl::Status(source.status().code(),
                        absl::StrCat(display_name, ": cannot open (", source.status().message(), ")"));
  return NpyStreamReader::Open(std::move(*source), std::move(display_name));
}

absl::StatusOr<NpyStreamReader> OpenNpzArray(const std::string& npz_path, const std::string& member,
                                             std::string display_name) {
  GNND_ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> source, OpenNpzMember(npz_path, member));
  return NpyStreamReader::Open(std::move(source), std::move(display_name));
}

}  // namespace gnnd::dataset
