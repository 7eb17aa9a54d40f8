// The .npy format (numpy's NEP 1): header parsing and formatting, a read-only memory-mapped array, a
// streaming reader over any byte source (plain file, zip member), and a writer that can grow.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/base/dtype.h"
#include "common/base/file_io.h"

namespace gnnd {

// The largest array a header may describe (1 PiB): every size computed from a shape fits in int64.
inline constexpr int64_t kMaxNpyDataBytes = int64_t{1} << 50;

struct NpyHeader {
  DType dtype = DType::kFloat32;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;  // bytes from the start of the file to the first element

  int64_t NumElements() const;
  size_t DataBytes() const { return static_cast<size_t>(NumElements()) * DTypeSize(dtype); }
};

// Parses the header at the start of `bytes` (which must hold at least the whole header). `what` names
// the file in error messages. Only little-endian (or byte-sized) dtypes are accepted.
absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view bytes, absl::string_view what);

// Formats a version 1.0 header padded to exactly `total_size` bytes (a multiple of 64), so that a
// header can be rewritten in place when the row count is known only at the end.
absl::StatusOr<std::string> FormatNpyHeader(DType dtype, const std::vector<int64_t>& shape, size_t total_size = 128);

// Something to read bytes from in order: a file, a zip member, a gzip stream.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `size` bytes; returns 0 only at the end.
  virtual absl::StatusOr<size_t> Read(void* buffer, size_t size) = 0;
  // Reads exactly `size` bytes or fails naming `what`.
  absl::Status ReadExact(void* buffer, size_t size, absl::string_view what);
};

absl::StatusOr<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path);

// `count` elements of `dtype` at `in` as float32 values (float16, bfloat16 and float8 exactly), as the readers
// below convert them.
void ElementsAsFloat(DType dtype, const void* in, float* out, size_t count);

// Reads an .npy stream element by element, converting to int64 or double on the way.
class NpyStreamReader {
 public:
  // `what` names the array in errors ("raw/data.npz:edge_index").
  static absl::StatusOr<NpyStreamReader> Open(std::unique_ptr<ByteSource> source, std::string what);

  const NpyHeader& header() const { return header_; }
  const std::string& what() const { return what_; }
  // Next `count` elements in storage order. Integer and bool dtypes only for the int form; floats are
  // accepted for doubles. A short stream is an error, and so is a uint64 value past int64.
  absl::Status ReadInt64(int64_t* out, size_t count);
  absl::Status ReadDouble(double* out, size_t count);
  // Raw bytes of the next `count` elements.
  absl::Status ReadRaw(void* out, size_t count);
  absl::Status Skip(size_t count);

 private:
  NpyStreamReader(std::unique_ptr<ByteSource> source, NpyHeader header, std::string what)
      : source_(std::move(source)), header_(std::move(header)), what_(std::move(what)) {}
  std::unique_ptr<ByteSource> source_;
  NpyHeader header_;
  std::string what_;
  std::vector<char> scratch_;
};

// A read-only memory map of a whole .npy file, which must be a regular file; the file stays open, so
// later reads (fd()) see the file that was checked, whatever happens to its name.
class NpyFile {
 public:
  static absl::StatusOr<NpyFile> Open(const std::string& path);
  // `name` inside the directory `dir` open as `dir_fd`, by OpenRegularFileIn's rules.
  static absl::StatusOr<NpyFile> OpenIn(int dir_fd, const std::string& dir, const std::string& name);
  NpyFile(NpyFile&&) noexcept;
  NpyFile& operator=(NpyFile&&) noexcept;
  ~NpyFile();

  const NpyHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_.get(); }
  const void* data() const { return data_; }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(data_);
  }

 private:
  NpyFile() = default;
  static absl::StatusOr<NpyFile> FromDescriptor(FileDescriptor fd, const std::string& path);
  std::string path_;
  FileDescriptor fd_;
  NpyHeader header_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const void* data_ = nullptr;
};

// Writes an .npy file: rows appended in order (shape[0] grows), or a fixed shape whose data region is
// mapped read-write for random or parallel writes. The header is rewritten by Finish(). The file must not
// exist yet (ALREADY_EXISTS otherwise; a symbolic link is never followed).
class NpyWriter {
 public:
  // A file with shape {0, row_shape...} that grows as rows are appended.
  static absl::StatusOr<NpyWriter> CreateAppendable(const std::string& path, DType dtype,
                                                    std::vector<int64_t> row_shape);
  // A file of exactly `shape`, zero-filled, with its data mapped read-write (see mutable_data()).
  static absl::StatusOr<NpyWriter> CreateMapped(const std::string& path, DType dtype, std::vector<int64_t> shape);
  NpyWriter(NpyWriter&&) noexcept;
  NpyWriter& operator=(NpyWriter&&) noexcept;
  ~NpyWriter();

  // Appends `rows` rows (raw bytes in the file's dtype). Appendable writers only.
  absl::Status Append(const void* data, int64_t rows);
  // The element data of a mapped writer.
  void* mutable_data();
  template <typename T>
  T* mutable_as() {
    return static_cast<T*>(mutable_data());
  }
  int64_t rows() const { return shape_[0]; }
  // Shrinks a mapped file to its first `rows` rows (e.g. after dropping duplicate edges).
  absl::Status Truncate(int64_t rows);
  // Flushes, writes the final header, closes. The writer is unusable afterwards.
  absl::Status Finish();

 private:
  NpyWriter() = default;
  size_t RowBytes() const;
  absl::Status FlushBuffer();
  void Close();

  std::string path_;
  DType dtype_ = DType::kUInt8;
  std::vector<int64_t> shape_;
  int fd_ = -1;
  void* map_ = nullptr;  // whole file, header included
  size_t map_size_ = 0;
  std::vector<char> buffer_;
};

}  // namespace gnnd
