// The single-GPU checks of the NCCL backend (`fleetsim-nccl-runner selftest`):
// compute calibration (busy-kernel duration requested against measured), a
// one-rank NCCL communicator, NVML read while a busy kernel runs and while idle,
// and the spin of a kernel waiting for a peer that never comes, read by NVML,
// then ended through the abort flag it polls. Needs one GPU, not MPI.
#pragma once

namespace fleetsim::validate {

// Prints every result; returns 0 when every check ran, 3 otherwise.
int run_selftest(int device);

}  // namespace fleetsim::validate
