// Choosing a CUDA device, and saying plainly when there is none (CUDA runtime
// only: used by the runner, the single-GPU self-test and `probe`).
#pragma once

#include <string>

namespace fleetsim::validate {

// The device a process of `local_rank` (its rank on its node) uses: local_rank
// modulo the devices visible. Returns -1 and a line in *why ("no CUDA device
// (cudaGetDeviceCount: ...)") without any.
int pick_device(int local_rank, std::string* why);

}  // namespace fleetsim::validate
