// nccl-tests-style sweeps on real MPI processes: for each collective and group
// size, message sizes from min to max bytes by a factor; each timing starts with
// every member arrived (a barrier) and is the median over iterations of the
// slowest member. Rank 0 writes op,ranks,bytes,time_s rows for the fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetsim/scenario.h"

namespace fleetsim::validate {

struct SweepOptions {
  std::vector<OpKind> ops;          // collectives to sweep (kSend = a send/recv pair)
  std::vector<int> group_sizes;     // members per group; the world is split into groups
  int64_t min_bytes = 8, max_bytes = int64_t{64} << 20;
  double factor = 2.0;
  int iters = 20;                   // at most this many timed iterations per size
  double budget_s = 0.25;           // and at most about this long per size
  bool yield = false;
  std::string out;                  // CSV written by rank 0
};

// Runs the sweep (collective over MPI_COMM_WORLD). Returns 0, or 1 if the CSV
// cannot be written.
int run_sweep(const SweepOptions& o);

}  // namespace fleetsim::validate
