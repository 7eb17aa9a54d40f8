// Writes several arrays into one .npz (a zip of .npy members, stored uncompressed), as numpy.savez.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/base/dtype.h"

namespace gnnd::dataset {

struct NpzArray {
  std::string name;  // member "name.npy"
  DType dtype;
  std::vector<int64_t> shape;
  const void* data;
};

absl::Status WriteNpz(const std::string& path, const std::vector<NpzArray>& arrays);

}  // namespace gnnd::dataset
