// Kernels of the NCCL backend (see kernels.h). Time comes from the GPU's global
// timer (%globaltimer, nanoseconds), so a kernel's duration does not depend on
// its SM clock.
#include "validate/nccl/kernels.h"

namespace fleetsim::validate::gpu {

namespace {

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void busy_kernel(long long ns, float* sink) {
  const unsigned long long start = global_ns();
  float a = 1.0f + threadIdx.x * 1e-7f, b = 0.999999f;
  while (global_ns() - start < static_cast<unsigned long long>(ns)) {
#pragma unroll
    for (int i = 0; i < 64; ++i) a = fmaf(a, b, 1e-7f);  // the SM's pipes do work, not just a timer loop
  }
  if (a == 12345.0f) *sink = a;  // never true: keeps the arithmetic from being removed
}

// Every thread polls the peer's flag in device memory; the abort flag lives in
// host memory across PCIe, so it is read once every 256 polls.
__global__ void wait_for_peer_kernel(const volatile int* peer_flag, const volatile int* abort_flag) {
  for (unsigned i = 0; *peer_flag == 0; ++i) {
    if ((i & 255u) == 0 && *abort_flag != 0) return;
  }
}

}  // namespace

cudaError_t launch_busy(int64_t ns, int blocks, int threads, cudaStream_t stream) {
  busy_kernel<<<blocks, threads, 0, stream>>>(static_cast<long long>(ns), nullptr);
  return cudaGetLastError();
}

cudaError_t launch_wait_for_peer(const volatile int* peer_flag, const volatile int* abort_flag, int blocks,
                                 cudaStream_t stream) {
  wait_for_peer_kernel<<<blocks, 64, 0, stream>>>(peer_flag, abort_flag);
  return cudaGetLastError();
}

}  // namespace fleetsim::validate::gpu
