// CUDA runtime errors as absl::Status. Errors that are not sticky are cleared (cudaGetLastError) so a
// failed call does not poison the next one; sticky ones (a kernel fault) leave the context unusable and
// say so.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gnnd::cuda {

// Errors after which the process's context on that GPU fails every call until the process exits.
inline bool IsStickyCudaError(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

inline absl::Status CudaStatus(cudaError_t error, absl::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  (void)cudaGetLastError();  // drain a non-sticky error
  const std::string message = absl::StrCat(what, ": ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")");
  if (IsStickyCudaError(error)) {
    return absl::UnavailableError(absl::StrCat(
        message,
        "; this GPU is unusable for gnnd until it restarts (a sticky CUDA error: a fault in gnnd, or, under MPS, "
        "another client of the GPU killed while its kernels ran)"));
  }
  const absl::StatusCode code = error == cudaErrorMemoryAllocation ? absl::StatusCode::kResourceExhausted
                                : error == cudaErrorNoDevice || error == cudaErrorInvalidDevice
                                    ? absl::StatusCode::kUnavailable
                                    : absl::StatusCode::kInternal;
  return absl::Status(code, message);
}

#define GNND_CUDA(call, what) GNND_RETURN_IF_ERROR(::gnnd::cuda::CudaStatus((call), (what)))

}  // namespace gnnd::cuda
