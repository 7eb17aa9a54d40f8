// Fuzzes the .npy reader: header parsing, and streaming the elements the header promises.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/dataset/npy.h"

namespace {

class MemorySource final : public gnnd::ByteSource {
 public:
  explicit MemorySource(std::string bytes) : bytes_(std::move(bytes)) {}
  absl::StatusOr<size_t> Read(void* buffer, size_t size) override {
    const size_t n = std::min(size, bytes_.size() - at_);
    std::memcpy(buffer, bytes_.data() + at_, n);
    at_ += n;
    return n;
  }

 private:
  std::string bytes_;
  size_t at_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)gnnd::ParseNpyHeader(bytes, "fuzz.npy");
  auto reader = gnnd::NpyStreamReader::Open(std::make_unique<MemorySource>(bytes), "fuzz.npy");
  if (!reader.ok()) return 0;
  // Read what the header promises, a bounded amount at a time, as the importers do.
  const int64_t elements = std::min<int64_t>(reader->header().NumElements(), 1 << 16);
  std::vector<int64_t> ints(static_cast<size_t>(elements));
  if (gnnd::IsFloat(reader->header().dtype)) {
    std::vector<double> values(static_cast<size_t>(elements));
    (void)reader->ReadDouble(values.data(), values.size());
  } else {
    (void)reader->ReadInt64(ints.data(), ints.size());
  }
  return 0;
}
