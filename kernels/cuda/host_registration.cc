#include "kernels/cuda/host_registration.h"

#include "common/base/cuda_check.h"
#include "common/base/status.h"

namespace gnnd::cuda {

absl::StatusOr<std::unique_ptr<HostRegistration>> HostRegistration::Register(const void* data, size_t bytes) {
  auto registration = std::unique_ptr<HostRegistration>(new HostRegistration());
  if (bytes == 0) {
    registration->device_ = data;
    return registration;
  }
  void* host = const_cast<void*>(data);
  const cudaError_t error =
      cudaHostRegister(host, bytes, cudaHostRegisterMapped | cudaHostRegisterReadOnly | cudaHostRegisterPortable);
  if (error == cudaErrorHostMemoryAlreadyRegistered) {
    // Registered for another GPU already: Portable makes that registration serve every device, and its
    // owner unregisters it.
    (void)cudaGetLastError();
  } else {
    GNND_CUDA(error, absl::StrCat("cudaHostRegister of ", bytes, " bytes"));
    registration->host_ = host;
  }
  void* device = nullptr;
  GNND_CUDA(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
  registration->device_ = device;
  return registration;
}

HostRegistration::~HostRegistration() {
  if (host_ != nullptr) (void)CudaStatus(cudaHostUnregister(host_), "cudaHostUnregister");
}

}  // namespace gnnd::cuda
