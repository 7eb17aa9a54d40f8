// Readers for import sources: text lines from plain or gzip files, .npz members (stored or deflated),
// and number parsing that names the file and line on failure.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/dataset/npy.h"

namespace gnnd::dataset {

// Reads lines from a file that may be gzip-compressed (zlib detects which), in large blocks.
class LineReader {
 public:
  static absl::StatusOr<std::unique_ptr<LineReader>> Open(const std::string& path, std::string display_name);
  ~LineReader();

  // Sets *line to the next line without its newline (and without a trailing '\r'); false at the end.
  absl::StatusOr<bool> Next(absl::string_view* line);
  int64_t line_number() const { return line_number_; }
  int64_t bytes_read() const { return bytes_read_; }
  // "raw/edge.csv.gz line 12" for error messages.
  std::string Where() const;

 private:
  LineReader() = default;
  gzFile file_ = nullptr;
  std::string name_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  int64_t line_number_ = 0;
  int64_t bytes_read_ = 0;
  std::string carry_;
};

// Splits `line` on `separator` (or on runs of spaces and tabs when separator is ' ').
std::vector<absl::string_view> SplitFields(absl::string_view line, char separator);

// Whether `path` exists (an input the source may or may not have).
bool Exists(const std::string& path);

// Parse one field; `where` goes into the error ("raw/edge.csv.gz line 3").
absl::StatusOr<int64_t> ParseInt(absl::string_view field, absl::string_view where);
absl::StatusOr<double> ParseDouble(absl::string_view field, absl::string_view where);

// The arrays of a .npz (zip) archive, by name (without ".npy").
absl::StatusOr<std::vector<std::string>> ListNpzArrays(const std::string& npz_path);
// A member of a .npz (zip) archive as a byte stream: "name" or "name.npy".
absl::StatusOr<std::unique_ptr<ByteSource>> OpenNpzMember(const std::string& npz_path, const std::string& member);

// An .npy stream from a plain file or an npz member, named for errors.
absl::StatusOr<NpyStreamReader> OpenNpyStream(const std::string& path, std::string display_name);
absl::StatusOr<NpyStreamReader> OpenNpzArray(const std::string& npz_path, const std::string& member,
                                             std::string display_name);

}  // namespace gnnd::dataset
