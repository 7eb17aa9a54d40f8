// CUDA runtime errors as absl::Status. Errors that are not sticky are cleared (cudaGetLastError) so a
// failed call does not poison the next one; sticky ones (a kernel fault) leave the context unusable and
// say so.
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace gnnd::cuda {

inline absl::Status CudaStatus(cudaError_t error, absl::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  (void)cudaGetLastError();  // drain a non-sticky error
  const absl::StatusCode code = error == cudaErrorMemoryAllocation ? absl::StatusCode::kResourceExhausted
                                : error == cudaErrorNoDevice || error == cudaErrorInvalidDevice
                                    ? absl::StatusCode::kUnavailable
                                    : absl::StatusCode::kInternal;
  return absl::Status(code, absl::StrCat(what, ": ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")"));
}

#define GNND_CUDA(call, what) GNND_RETURN_IF_ERROR(::gnnd::cuda::CudaStatus((call), (what)))

}  // namespace gnnd::cuda
