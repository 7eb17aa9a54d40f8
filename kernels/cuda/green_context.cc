#include "kernels/cuda/green_context.h"

#include <cuda.h>

#include "absl/strings/str_cat.h"
#include "common/base/cuda_check.h"
#include "common/base/status.h"

namespace gnnd::cuda {
namespace {

// The driver functions used, fetched once.
struct Driver {
  decltype(&cuDeviceGetDevResource) get_resource = nullptr;
  decltype(&cuDevSmResourceSplitByCount) split = nullptr;
  decltype(&cuDevResourceGenerateDesc) describe = nullptr;
  decltype(&cuGreenCtxCreate) create = nullptr;
  decltype(&cuGreenCtxStreamCreate) create_stream = nullptr;
  decltype(&cuGreenCtxDestroy) destroy = nullptr;
  decltype(&cuStreamDestroy) destroy_stream = nullptr;
  decltype(&cuStreamGetGreenCtx) stream_context = nullptr;
  decltype(&cuGreenCtxGetDevResource) context_resource = nullptr;
};

absl::StatusOr<const Driver*> LoadDriver() {
  static Driver driver;
  static absl::Status status = [] {
    auto get = [](const char* name, auto* fn) -> absl::Status {
      cudaDriverEntryPointQueryResult found;
      void* p = nullptr;
      // The ABI of the headers this is built with (the entry points' versions must match their types).
      GNND_CUDA(cudaGetDriverEntryPointByVersion(name, &p, CUDA_VERSION, cudaEnableDefault, &found),
                absl::StrCat("find ", name));
      if (found != cudaDriverEntryPointSuccess || p == nullptr) {
        return absl::UnimplementedError(
            absl::StrCat(name, " is not in this driver (green contexts need a CUDA 12.5+ driver)"));
      }
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
      return absl::OkStatus();
    };
    GNND_RETURN_IF_ERROR(get("cuDeviceGetDevResource", &driver.get_resource));
    GNND_RETURN_IF_ERROR(get("cuDevSmResourceSplitByCount", &driver.split));
    GNND_RETURN_IF_ERROR(get("cuDevResourceGenerateDesc", &driver.describe));
    GNND_RETURN_IF_ERROR(get("cuGreenCtxCreate", &driver.create));
    GNND_RETURN_IF_ERROR(get("cuGreenCtxStreamCreate", &driver.create_stream));
    GNND_RETURN_IF_ERROR(get("cuGreenCtxDestroy", &driver.destroy));
    GNND_RETURN_IF_ERROR(get("cuStreamDestroy", &driver.destroy_stream));
    GNND_RETURN_IF_ERROR(get("cuStreamGetGreenCtx", &driver.stream_context));
    GNND_RETURN_IF_ERROR(get("cuGreenCtxGetDevResource", &driver.context_resource));
    return absl::OkStatus();
  }();
  if (!status.ok()) return status;
  return &driver;
}

absl::Status Check(CUresult result, absl::string_view what) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": CUDA driver error ", static_cast<int>(result)));
}

}  // namespace

absl::StatusOr<int> SmCount(int device) {
  int sms = 0;
  GNND_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "query the SM count");
  return sms;
}

absl::StatusOr<int> StreamSms(cudaStream_t stream) {
  GNND_ASSIGN_OR_RETURN(const Driver* d, LoadDriver());
  CUgreenCtx context = nullptr;
  GNND_RETURN_IF_ERROR(Check(d->stream_context(reinterpret_cast<CUstream>(stream), &context), "cuStreamGetGreenCtx"));
  if (context == nullptr) return 0;
  CUdevResource sms{};
  GNND_RETURN_IF_ERROR(Check(d->context_resource(context, &sms, CU_DEV_RESOURCE_TYPE_SM), "cuGreenCtxGetDevResource"));
  return static_cast<int>(sms.sm.smCount);
}

absl::StatusOr<std::unique_ptr<GreenContext>> GreenContext::Create(int device, int sms) {
  GNND_ASSIGN_OR_RETURN(const Driver* d, LoadDriver());
  GNND_CUDA(cudaSetDevice(device), "select the device");
  GNND_CUDA(cudaFree(nullptr), "initialize the device");  // the primary context must exist first
  CUdevResource all{}, slice{}, rest{};
  GNND_RETURN_IF_ERROR(Check(d->get_resource(device, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource"));
  unsigned int groups = 1;
  GNND_RETURN_IF_ERROR(Check(d->split(&slice, &groups, &all, &rest, 0, static_cast<unsigned>(sms)),
                             absl::StrCat("split off ", sms, " SMs")));
  if (groups != 1) return absl::InvalidArgumentError(absl::StrCat("cannot split off ", sms, " SMs"));
  CUdevResourceDesc desc;
  GNND_RETURN_IF_ERROR(Check(d->describe(&desc, &slice, 1), "cuDevResourceGenerateDesc"));
  auto g = std::unique_ptr<GreenContext>(new GreenContext());
  CUgreenCtx context;
  GNND_RETURN_IF_ERROR(Check(d->create(&context, desc, device, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate"));
  g->context_ = context;
  g->sms_ = static_cast<int>(slice.sm.smCount);
  CUstream stream;
  GNND_RETURN_IF_ERROR(Check(d->create_stream(&stream, context, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate"));
  g->stream_ = stream;
  return g;
}

GreenContext::~GreenContext() {
  absl::StatusOr<const Driver*> d = LoadDriver();
  if (!d.ok()) return;
  if (stream_ != nullptr) (*d)->destroy_stream(stream_);
  if (context_ != nullptr) (*d)->destroy(static_cast<CUgreenCtx>(context_));
}

}  // namespace gnnd::cuda
