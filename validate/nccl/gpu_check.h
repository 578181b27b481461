// Every CUDA runtime and NCCL call of the NCCL backend goes through one of these
// two macros, which return its GpuStatus (see gpu_status.h):
//   if (GpuStatus s = FLEETSIM_CUDA(cudaSetDevice(d)); !s.ok()) return fail(s.message());
//   FLEETSIM_NCCL(ncclCommDestroy(c)).warn();
// The status must be used (GpuStatus is [[nodiscard]]): propagated, logged, or fatal.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "validate/nccl/gpu_status.h"

namespace fleetsim::validate {

inline GpuStatus cuda_status(cudaError_t e, const GpuCallSite& site) {
  const bool ok = e == cudaSuccess;
  return GpuStatus(ok, static_cast<long>(e), ok ? nullptr : cudaGetErrorString(e), site);
}

inline GpuStatus nccl_status(ncclResult_t r, const GpuCallSite& site) {
  const bool ok = r == ncclSuccess;
  return GpuStatus(ok, static_cast<long>(r), ok ? nullptr : ncclGetErrorString(r), site);
}

}  // namespace fleetsim::validate

// The status of one CUDA runtime call (cudaXxx, or a launcher returning cudaError_t).
#define FLEETSIM_CUDA(...) \
  ::fleetsim::validate::cuda_status((__VA_ARGS__), {"CUDA", #__VA_ARGS__, __FILE__, __LINE__})
// The status of one NCCL call (ncclXxx).
#define FLEETSIM_NCCL(...) \
  ::fleetsim::validate::nccl_status((__VA_ARGS__), {"NCCL", #__VA_ARGS__, __FILE__, __LINE__})
