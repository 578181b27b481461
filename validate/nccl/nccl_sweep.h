// nccl-tests-style sweeps on real GPUs: for each collective and group size,
// sizes from min to max by a factor; per size a few warm-up ops, then a timed
// batch between two CUDA events started after an MPI barrier (every group runs
// at once), its average per op, the slowest member's (nccl-tests' figure).
// Rank 0 writes op,ranks,bytes,time_s rows, the format `fleetsim calibrate` fits.
#pragma once

#include "validate/calib_sweep.h"

namespace fleetsim::validate {

// Collective over MPI_COMM_WORLD, one GPU per rank (`device`). 0, 1 if the CSV
// cannot be written, 3 if NCCL or CUDA fail.
int run_nccl_sweep(const SweepOptions& o, int device);

}  // namespace fleetsim::validate
