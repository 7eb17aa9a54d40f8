#include "kernels/cuda/device_dataset.h"

#include "absl/strings/str_cat.h"
#include "common/base/cuda_check.h"
#include "common/base/status.h"

namespace gnnd::cuda {

DeviceDataset::~DeviceDataset() {
  if (device_indptr_ != nullptr) cudaFree(device_indptr_);
  if (device_indices_ != nullptr) cudaFree(device_indices_);
}

absl::StatusOr<std::unique_ptr<DeviceDataset>> DeviceDataset::Create(const GraphData& host, CscPlacement placement) {
  if (host.schema.format_version != 1) {
    return absl::FailedPreconditionError("a typed dataset (format_version 2) is not placed on GPUs yet");
  }
  auto d = std::unique_ptr<DeviceDataset>(new DeviceDataset());
  d->graph_.manifest = host.manifest;
  const v1::DatasetManifest& m = host.manifest;
  auto place = [&](ArrayId id) -> absl::StatusOr<const void*> {
    GNND_ASSIGN_OR_RETURN(std::unique_ptr<HostRegistration> r,
                          HostRegistration::Register(host.arrays[id], ArrayBytes(m, id)));
    const void* device = r->device_pointer();
    d->registrations_.push_back(std::move(r));
    d->registered_bytes_ += ArrayBytes(m, id);
    return device;
  };
  for (ArrayId id : {ArrayId::kIndptr, ArrayId::kIndices}) {
    const bool copy =
        placement == CscPlacement::kDevice || (placement == CscPlacement::kHostIndices && id == ArrayId::kIndptr);
    const void* where = nullptr;
    if (copy) {
      void** target = id == ArrayId::kIndptr ? &d->device_indptr_ : &d->device_indices_;
      const size_t bytes = ArrayBytes(m, id);
      GNND_CUDA(cudaMalloc(target, std::max<size_t>(bytes, 1)),
                absl::StrCat("allocate ", ArrayName(id), " on the GPU"));
      GNND_CUDA(cudaMemcpy(*target, host.arrays[id], bytes, cudaMemcpyHostToDevice),
                absl::StrCat("copy ", ArrayName(id), " to the GPU"));
      d->placed_bytes_ += bytes;
      where = *target;
    } else {
      GNND_ASSIGN_OR_RETURN(where, place(id));
    }
    if (id == ArrayId::kIndptr) {
      d->graph_.indptr = static_cast<const int64_t*>(where);
    } else {
      d->graph_.indices = where;
    }
  }
  d->graph_.csc = placement;
  GNND_ASSIGN_OR_RETURN(d->graph_.features, place(ArrayId::kFeatures));
  GNND_ASSIGN_OR_RETURN(const void* labels, place(ArrayId::kLabels));
  d->graph_.labels = static_cast<const int64_t*>(labels);
  return d;
}

bool HaveGpu() {
  int count = 0;
  const bool ok = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return ok;
}

}  // namespace gnnd::cuda
