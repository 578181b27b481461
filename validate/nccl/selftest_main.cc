// fleetsim-gpu-selftest: the single-GPU checks of the NCCL backend on their own
// (no MPI, no scenario): `fleetsim-gpu-selftest [--device N]`. Built wherever
// CUDA and NCCL are found; scripts/gpu-check.sh can also compile it by hand on
// a machine that lacks the project's other build dependencies.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "validate/nccl/device.h"
#include "validate/nccl/selftest.h"

int main(int argc, char** argv) {
  int device = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--device N]\n", argv[0]);
      return 2;
    }
  }
  std::string why;
  if (fleetsim::validate::pick_device(device, &why) < 0) {
    std::printf("%s\n", why.c_str());
    return 3;
  }
  return fleetsim::validate::run_selftest(device);
}
