// pick_device (see device.h).
#include "validate/nccl/device.h"

#include "validate/nccl/gpu_check.h"

namespace fleetsim::validate {

int pick_device(int local_rank, std::string* why) {
  int n = 0;
  if (const GpuStatus s = FLEETSIM_CUDA(cudaGetDeviceCount(&n)); !s.ok()) {
    *why = "no CUDA device (cudaGetDeviceCount: " + s.describe() + ")";  // the user's line; the call is named
    return -1;
  }
  if (n <= 0) {
    *why = "no CUDA device (cudaGetDeviceCount: 0)";
    return -1;
  }
  return local_rank % n;
}

}  // namespace fleetsim::validate
