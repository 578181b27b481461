// pick_device (see device.h).
#include "validate/nccl/device.h"

#include <cuda_runtime_api.h>

namespace fleetsim::validate {

int pick_device(int local_rank, std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n <= 0) {
    *why = e != cudaSuccess ? std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + " (" +
                                  std::to_string(static_cast<int>(e)) + "))"
                            : std::string("no CUDA device (cudaGetDeviceCount: 0)");
    return -1;
  }
  return local_rank % n;
}

}  // namespace fleetsim::validate
