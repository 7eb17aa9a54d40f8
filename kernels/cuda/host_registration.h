// Page-locks host memory (a dataset's shared-memory segments) for zero-copy GPU access, once:
// cudaHostRegister(Mapped | ReadOnly | Portable). Unregisters on destruction.
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"

namespace gnnd::cuda {

class HostRegistration {
 public:
  // `data` stays valid and mapped for the registration's lifetime. Empty ranges register nothing.
  static absl::StatusOr<std::unique_ptr<HostRegistration>> Register(const void* data, size_t bytes);
  ~HostRegistration();
  // The address kernels use (the same as the host's under unified addressing).
  const void* device_pointer() const { return device_; }

 private:
  HostRegistration() = default;
  void* host_ = nullptr;
  const void* device_ = nullptr;
};

}  // namespace gnnd::cuda
