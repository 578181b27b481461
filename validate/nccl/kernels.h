// The GPU work of the NCCL backend, callable from host C++ (compiled by nvcc in
// kernels.cu): a busy kernel standing in for a step's compute, and the spin of
// a kernel waiting for a peer that never arrives.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace fleetsim::validate::gpu {

// Keeps `blocks` x `threads` threads busy (dependent FMAs) until `ns` of the
// GPU's global timer have passed since each thread started. Asynchronous on `stream`.
cudaError_t launch_busy(int64_t ns, int blocks, int threads, cudaStream_t stream);

// Every thread of `blocks` spins reading `peer_flag` (device memory) until it
// is non-zero, as an NCCL kernel polls the flag its peer would set, or until
// `abort_flag` (mapped host memory, set by the watchdog's abort as NCCL's abort
// flag is) is non-zero. Asynchronous on `stream`.
cudaError_t launch_wait_for_peer(const volatile int* peer_flag, const volatile int* abort_flag, int blocks,
                                 cudaStream_t stream);

}  // namespace fleetsim::validate::gpu
