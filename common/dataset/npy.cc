#include "common/dataset/npy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/file_io.h"
#include "common/base/status.h"

namespace gnnd {
namespace {

constexpr absl::string_view kMagic = "\x93NUMPY";

struct DescrName {
  absl::string_view code;  // without the byte-order character
  DType dtype;
};
constexpr DescrName kDescrs[] = {
    {"b1", DType::kBool},   {"i1", DType::kInt8},    {"u1", DType::kUInt8},   {"i2", DType::kInt16},
    {"u2", DType::kUInt16}, {"i4", DType::kInt32},   {"u4", DType::kUInt32},  {"i8", DType::kInt64},
    {"u8", DType::kUInt64}, {"f2", DType::kFloat16}, {"f4", DType::kFloat32}, {"f8", DType::kFloat64},
};

// Returns the text of `key`'s value in a numpy header dict, e.g. "'<f4'" or "(3, 4)".
absl::StatusOr<absl::string_view> DictValue(absl::string_view dict, absl::string_view key, absl::string_view what) {
  const std::string quoted = absl::StrCat("'", key, "'");
  size_t at = dict.find(quoted);
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": npy header has no '", key, "' key"));
  }
  at = dict.find(':', at + quoted.size());
  if (at == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": malformed npy header"));
  }
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(dict.substr(at + 1));
  size_t end;
  if (!rest.empty() && rest[0] == '(') {
    end = rest.find(')');
    if (end == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": malformed shape in npy header"));
    }
    ++end;
  } else if (!rest.empty() && (rest[0] == '\'' || rest[0] == '"')) {
    end = rest.find(rest[0], 1);
    if (end == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": malformed npy header"));
    }
    ++end;
  } else {
    end = rest.find_first_of(",}");
  }
  return absl::StripAsciiWhitespace(rest.substr(0, end));
}

}  // namespace

absl::string_view NpyDescr(DType t) {
  t = NpyStorage(t);
  for (const DescrName& d : kDescrs) {
    if (d.dtype == t) {
      static const std::string kNames[] = {"|b1", "|i1", "|u1", "<i2", "<u2", "<i4",
                                           "<u4", "<i8", "<u8", "<f2", "<f4", "<f8"};
      return kNames[&d - kDescrs];
    }
  }
  return "?";
}

int64_t NpyHeader::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view bytes, absl::string_view what) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not an .npy file (bad magic)"));
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, prefix;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return absl::InvalidArgumentError(absl::StrCat(what, ": truncated npy header"));
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[8 + i]);
    prefix = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": unsupported npy format version ", major, ".", int(bytes[7])));
  }
  if (bytes.size() < prefix + header_len) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": truncated npy header"));
  }
  absl::string_view dict = bytes.substr(prefix, header_len);
  NpyHeader header;
  header.data_offset = prefix + header_len;

  GNND_ASSIGN_OR_RETURN(absl::string_view descr, DictValue(dict, "descr", what));
  if (descr.size() != 5 || (descr[0] != '\'' && descr[0] != '"')) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": unsupported dtype ", descr));
  }
  const char order = descr[1];
  const absl::string_view code = descr.substr(2, 2);
  bool known = false;
  for (const DescrName& d : kDescrs) {
    if (d.code == code) {
      header.dtype = d.dtype;
      known = true;
    }
  }
  if (!known || (order == '>' && DTypeSize(header.dtype) > 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": unsupported dtype ", descr, " (want little-endian int, uint, float or bool)"));
  }

  GNND_ASSIGN_OR_RETURN(absl::string_view fortran, DictValue(dict, "fortran_order", what));
  if (fortran != "False" && fortran != "True") {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bad fortran_order ", fortran));
  }
  header.fortran_order = fortran == "True";

  GNND_ASSIGN_OR_RETURN(absl::string_view shape, DictValue(dict, "shape", what));
  if (shape.size() < 2 || shape.front() != '(') {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bad shape ", shape));
  }
  for (absl::string_view part : absl::StrSplit(shape.substr(1, shape.size() - 2), ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    if (!part.empty() && part.back() == 'L') part.remove_suffix(1);  // python 2 longs
    int64_t dim;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": bad shape ", shape));
    }
    header.shape.push_back(dim);
  }
  // Every size computed from the shape must fit: a header that overflows them could pass for a tiny file.
  int64_t data_bytes = static_cast<int64_t>(DTypeSize(header.dtype));
  for (int64_t dim : header.shape) {
    if (__builtin_mul_overflow(data_bytes, dim, &data_bytes) || data_bytes > kMaxNpyDataBytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": shape ", shape, " is too large"));
    }
  }
  return header;
}

absl::StatusOr<std::string> FormatNpyHeader(DType dtype, const std::vector<int64_t>& shape, size_t total_size) {
  std::string dims = absl::StrJoin(shape, ", ");
  if (shape.size() == 1) dims += ",";
  std::string dict =
      absl::StrCat("{'descr': '", NpyDescr(dtype), "', 'fortran_order': False, 'shape': (", dims, "), }");
  if (total_size % 64 != 0 || dict.size() + 11 > total_size || total_size - 10 > 0xffff) {
    return absl::InternalError(absl::StrCat("npy header does not fit in ", total_size, " bytes"));
  }
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  const size_t header_len = total_size - 10;
  out += static_cast<char>(header_len & 0xff);
  out += static_cast<char>(header_len >> 8);
  out += dict;
  out.append(total_size - out.size() - 1, ' ');
  out += '\n';
  return out;
}

// ---- ByteSource ----

absl::Status ByteSource::ReadExact(void* buffer, size_t size, absl::string_view what) {
  char* out = static_cast<char*>(buffer);
  while (size > 0) {
    GNND_ASSIGN_OR_RETURN(size_t n, Read(out, size));
    if (n == 0) return absl::DataLossError(absl::StrCat(what, ": file ends early (truncated?)"));
    out += n;
    size -= n;
  }
  return absl::OkStatus();
}

namespace {
class FileSource : public ByteSource {
 public:
  FileSource(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileSource() override { ::close(fd_); }
  absl::StatusOr<size_t> Read(void* buffer, size_t size) override {
    for (;;) {
      ssize_t n = ::read(fd_, buffer, size);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return ErrnoStatus(errno, absl::StrCat("read ", path_));
    }
  }

 private:
  int fd_;
  std::string path_;
};
}  // namespace

absl::StatusOr<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path) {
  GNND_ASSIGN_OR_RETURN(FileDescriptor fd, OpenRegularFile(path, path));  // a FIFO would block the reader
  return std::make_unique<FileSource>(fd.release(), path);
}

// ---- NpyStreamReader ----

absl::StatusOr<NpyStreamReader> NpyStreamReader::Open(std::unique_ptr<ByteSource> source, std::string what) {
  std::string bytes(12, '\0');
  GNND_RETURN_IF_ERROR(source->ReadExact(bytes.data(), 10, what));
  size_t header_len;
  if (bytes.substr(0, 6) != kMagic) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not an .npy file (bad magic)"));
  }
  if (bytes[6] == 1) {
    header_len = 10 + (static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8));
  } else {
    GNND_RETURN_IF_ERROR(source->ReadExact(bytes.data() + 10, 2, what));
    header_len = 12;
    for (int i = 3; i >= 0; --i) header_len += static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  }
  if (header_len > (1 << 20)) return absl::InvalidArgumentError(absl::StrCat(what, ": npy header too large"));
  const size_t have = bytes[6] == 1 ? 10 : 12;
  bytes.resize(header_len);
  GNND_RETURN_IF_ERROR(source->ReadExact(bytes.data() + have, header_len - have, what));
  GNND_ASSIGN_OR_RETURN(NpyHeader header, ParseNpyHeader(bytes, what));
  return NpyStreamReader(std::move(source), std::move(header), std::move(what));
}

absl::Status NpyStreamReader::ReadRaw(void* out, size_t count) {
  return source_->ReadExact(out, count * DTypeSize(header_.dtype), what_);
}

absl::Status NpyStreamReader::Skip(size_t count) {
  std::vector<char> sink(1 << 20);
  size_t bytes = count * DTypeSize(header_.dtype);
  while (bytes > 0) {
    size_t n = std::min(bytes, sink.size());
    GNND_RETURN_IF_ERROR(source_->ReadExact(sink.data(), n, what_));
    bytes -= n;
  }
  return absl::OkStatus();
}

namespace {
template <typename Out>
void Convert(DType dtype, const char* in, Out* out, size_t count) {
  auto loop = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < count; ++i) {
      T v;
      std::memcpy(&v, in + i * sizeof(T), sizeof(T));
      out[i] = static_cast<Out>(v);
    }
  };
  switch (dtype) {
    case DType::kBool:
    case DType::kUInt8:
      loop(uint8_t{});
      break;
    case DType::kInt8:
      loop(int8_t{});
      break;
    case DType::kInt16:
      loop(int16_t{});
      break;
    case DType::kUInt16:
      loop(uint16_t{});
      break;
    case DType::kInt32:
      loop(int32_t{});
      break;
    case DType::kUInt32:
      loop(uint32_t{});
      break;
    case DType::kInt64:
      loop(int64_t{});
      break;
    case DType::kUInt64:
      loop(uint64_t{});
      break;
    case DType::kFloat32:
      loop(float{});
      break;
    case DType::kFloat64:
      loop(double{});
      break;
    case DType::kFloat16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t h;
        std::memcpy(&h, in + 2 * i, 2);
        out[i] = static_cast<Out>(HalfToFloat(h));
      }
      break;
    case DType::kBFloat16:
      for (size_t i = 0; i < count; ++i) {
        uint16_t b;
        std::memcpy(&b, in + 2 * i, 2);
        out[i] = static_cast<Out>(BFloat16ToFloat(b));
      }
      break;
    case DType::kFloat8E4M3FN:
      for (size_t i = 0; i < count; ++i) out[i] = static_cast<Out>(Float8E4M3FNToFloat(static_cast<uint8_t>(in[i])));
      break;
  }
}
}  // namespace

void ElementsAsFloat(DType dtype, const void* in, float* out, size_t count) {
  Convert(dtype, static_cast<const char*>(in), out, count);
}

absl::Status NpyStreamReader::ReadInt64(int64_t* out, size_t count) {
  if (IsFloat(header_.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what_, ": dtype ", NpyDescr(header_.dtype), " where integers are expected"));
  }
  scratch_.resize(count * DTypeSize(header_.dtype));
  GNND_RETURN_IF_ERROR(ReadRaw(scratch_.data(), count));
  if (header_.dtype == DType::kUInt64) {  // past int64 it would wrap negative: a time or id that is not the input's
    for (size_t i = 0; i < count; ++i) {
      uint64_t v;
      std::memcpy(&v, scratch_.data() + i * sizeof(v), sizeof(v));
      if (v > static_cast<uint64_t>(INT64_MAX)) {
        return absl::InvalidArgumentError(
            absl::StrCat(what_, ": a uint64 value ", v, " is past int64 (at most ", INT64_MAX, ")"));
      }
    }
  }
  Convert(header_.dtype, scratch_.data(), out, count);
  return absl::OkStatus();
}

absl::Status NpyStreamReader::ReadDouble(double* out, size_t count) {
  scratch_.resize(count * DTypeSize(header_.dtype));
  GNND_RETURN_IF_ERROR(ReadRaw(scratch_.data(), count));
  Convert(header_.dtype, scratch_.data(), out, count);
  return absl::OkStatus();
}

// ---- NpyFile ----

NpyFile::NpyFile(NpyFile&& other) noexcept { *this = std::move(other); }
NpyFile& NpyFile::operator=(NpyFile&& other) noexcept {
  std::swap(path_, other.path_);
  std::swap(header_, other.header_);
  std::swap(map_, other.map_);
  std::swap(map_size_, other.map_size_);
  std::swap(data_, other.data_);
  std::swap(fd_, other.fd_);
  return *this;
}
NpyFile::~NpyFile() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

absl::StatusOr<NpyFile> NpyFile::Open(const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  GNND_ASSIGN_OR_RETURN(FileDescriptor fd, OpenRegularFile(path, name));
  return FromDescriptor(std::move(fd), path);
}

absl::StatusOr<NpyFile> NpyFile::OpenIn(int dir_fd, const std::string& dir, const std::string& name) {
  GNND_ASSIGN_OR_RETURN(FileDescriptor fd, OpenRegularFileIn(dir_fd, name, name));
  return FromDescriptor(std::move(fd), absl::StrCat(dir, "/", name));
}

absl::StatusOr<NpyFile> NpyFile::FromDescriptor(FileDescriptor fd, const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, absl::StrCat("stat ", path));
  NpyFile file;
  file.path_ = path;
  file.map_size_ = static_cast<size_t>(st.st_size);
  if (file.map_size_ == 0) return absl::InvalidArgumentError(absl::StrCat(name, ": empty file"));
  file.map_ = ::mmap(nullptr, file.map_size_, PROT_READ, MAP_SHARED, fd.get(), 0);
  file.fd_ = std::move(fd);
  if (file.map_ == MAP_FAILED) {
    file.map_ = nullptr;
    return ErrnoStatus(errno, absl::StrCat("mmap ", path));
  }
  GNND_ASSIGN_OR_RETURN(file.header_, ParseNpyHeader({static_cast<const char*>(file.map_), file.map_size_}, name));
  if (file.header_.fortran_order && file.header_.shape.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": Fortran-order arrays are not supported"));
  }
  const size_t expected = file.header_.data_offset + file.header_.DataBytes();
  if (file.map_size_ != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": file has ", file.map_size_, " bytes but its header implies ", expected));
  }
  file.data_ = static_cast<const char*>(file.map_) + file.header_.data_offset;
  return file;
}

// ---- NpyWriter ----

namespace {
constexpr size_t kHeaderSize = 128;
constexpr size_t kAppendBuffer = 4 << 20;
// A new file, never through a link and never over an existing one: a writer works in a directory of its
// own (an import's OUT.partial-PID), and anything already there is not what it made.
constexpr int kCreateFlags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
}  // namespace

NpyWriter::NpyWriter(NpyWriter&& other) noexcept { *this = std::move(other); }
NpyWriter& NpyWriter::operator=(NpyWriter&& other) noexcept {
  std::swap(path_, other.path_);
  std::swap(dtype_, other.dtype_);
  std::swap(shape_, other.shape_);
  std::swap(fd_, other.fd_);
  std::swap(map_, other.map_);
  std::swap(map_size_, other.map_size_);
  std::swap(buffer_, other.buffer_);
  return *this;
}
NpyWriter::~NpyWriter() { Close(); }

void NpyWriter::Close() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
  map_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

size_t NpyWriter::RowBytes() const {
  size_t bytes = DTypeSize(dtype_);
  for (size_t i = 1; i < shape_.size(); ++i) bytes *= shape_[i];
  return bytes;
}

absl::StatusOr<NpyWriter> NpyWriter::CreateAppendable(const std::string& path, DType dtype,
                                                      std::vector<int64_t> row_shape) {
  NpyWriter w;
  w.path_ = path;
  w.dtype_ = dtype;
  w.shape_ = {0};
  w.shape_.insert(w.shape_.end(), row_shape.begin(), row_shape.end());
  w.fd_ = ::open(path.c_str(), kCreateFlags, 0644);
  if (w.fd_ < 0) return ErrnoStatus(errno, absl::StrCat("create ", path));
  w.buffer_.reserve(kAppendBuffer);
  w.buffer_.resize(kHeaderSize);  // placeholder, rewritten by Finish()
  return w;
}

absl::StatusOr<NpyWriter> NpyWriter::CreateMapped(const std::string& path, DType dtype, std::vector<int64_t> shape) {
  NpyWriter w;
  w.path_ = path;
  w.dtype_ = dtype;
  w.shape_ = std::move(shape);
  w.fd_ = ::open(path.c_str(), kCreateFlags, 0644);
  if (w.fd_ < 0) return ErrnoStatus(errno, absl::StrCat("create ", path));
  const size_t data_bytes = w.RowBytes() * static_cast<size_t>(w.shape_[0]);
  if (::ftruncate(w.fd_, kHeaderSize + data_bytes) != 0) {
    return ErrnoStatus(errno, absl::StrCat("resize ", path));
  }
  if (data_bytes > 0) {
    // Map from offset 0 (page aligned); data starts after the 128-byte header.
    w.map_size_ = kHeaderSize + data_bytes;
    void* base = ::mmap(nullptr, w.map_size_, PROT_READ | PROT_WRITE, MAP_SHARED, w.fd_, 0);
    if (base == MAP_FAILED) return ErrnoStatus(errno, absl::StrCat("mmap ", path));
    w.map_ = base;
  }
  return w;
}

void* NpyWriter::mutable_data() { return static_cast<char*>(map_) + kHeaderSize; }

absl::Status NpyWriter::FlushBuffer() {
  GNND_RETURN_IF_ERROR(WriteFully(fd_, buffer_.data(), buffer_.size(), path_));
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status NpyWriter::Append(const void* data, int64_t rows) {
  if (fd_ < 0 || map_ != nullptr) return absl::InternalError(absl::StrCat(path_, ": not appendable"));
  const char* p = static_cast<const char*>(data);
  size_t bytes = RowBytes() * static_cast<size_t>(rows);
  while (bytes > 0) {
    const size_t n = std::min(bytes, kAppendBuffer - buffer_.size());
    buffer_.insert(buffer_.end(), p, p + n);
    p += n;
    bytes -= n;
    if (buffer_.size() == kAppendBuffer) GNND_RETURN_IF_ERROR(FlushBuffer());
  }
  shape_[0] += rows;
  return absl::OkStatus();
}

absl::Status NpyWriter::Truncate(int64_t rows) {
  if (map_ == nullptr && shape_[0] != 0) return absl::InternalError(absl::StrCat(path_, ": not mapped"));
  if (rows > shape_[0]) return absl::InternalError(absl::StrCat(path_, ": cannot grow by truncation"));
  shape_[0] = rows;
  return absl::OkStatus();
}

absl::Status NpyWriter::Finish() {
  if (fd_ < 0) return absl::InternalError(absl::StrCat(path_, ": already finished"));
  GNND_ASSIGN_OR_RETURN(std::string header, FormatNpyHeader(dtype_, shape_, kHeaderSize));
  if (map_ != nullptr) {
    std::memcpy(map_, header.data(), header.size());
    if (::msync(map_, map_size_, MS_SYNC) != 0) return ErrnoStatus(errno, absl::StrCat("msync ", path_));
    ::munmap(map_, map_size_);
    map_ = nullptr;
  } else if (!buffer_.empty()) {
    GNND_RETURN_IF_ERROR(FlushBuffer());
  }
  const off_t size = static_cast<off_t>(kHeaderSize + RowBytes() * static_cast<size_t>(shape_[0]));
  if (::ftruncate(fd_, size) != 0) return ErrnoStatus(errno, absl::StrCat("resize ", path_));
  if (::pwrite(fd_, header.data(), header.size(), 0) != static_cast<ssize_t>(header.size())) {
    return ErrnoStatus(errno, absl::StrCat("write header of ", path_));
  }
  if (::fsync(fd_) != 0) return ErrnoStatus(errno, absl::StrCat("fsync ", path_));
  Close();
  return absl::OkStatus();
}

}  // namespace gnnd
