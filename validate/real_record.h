// The RunRecord of a real run. Every MPI process streams its own part file
// (parts/rank_<r>.tsv, flushed line by line, so it survives a kill) and writes
// its own flight-recorder dump under fr/; the launcher merges the parts into summary.json,
// steps.csv, telemetry.csv and job.log with the simulator's observers, so the
// folder reads exactly like a simulated one. MPI-free: unit-testable anywhere.
#pragma once

#include <cstdint>
#include <string>

#include "fleetsim/engine.h"
#include "sim/observe/step_table.h"

namespace fleetsim::validate {

// Tags of part-file lines (tab-separated, times in ns since the common start):
//   S step t              the rank finished `step`
//   L t text              a job.log line, as JobLog formatted it
//   T t gpu_util cpu_util sm_active tensor_active nic_tx_bytes step
//     [nvml_util sm_clock_mhz power_w pcie_tx_kBps pcie_rx_kBps]   (GPU backends
//     with NVML; -1 where the driver has no figure)
//   timeout t group seq op created step    the rank's watchdog fired
//   crash t step          the rank's process is about to die (crash fault)
//   stuck step            at its dump, the lowest step the rank is stuck in
//   done t                the rank finished every step
inline constexpr const char* kPartsDir = "parts";
// Telemetry rows (T) go to a file of their own (.tel) so that the launcher can
// watch the .tsv files for progress: they grow only when the job moves.
std::string part_path(const std::string& dir, int rank);
std::string telemetry_part_path(const std::string& dir, int rank);

// What the launcher knows about the mpirun job.
struct LaunchInfo {
  int exit_code = 0;       // mpirun's exit status (128 + signal if it was killed)
  bool killed = false;     // the launcher's hard deadline fired
  double wall_s = 0;
  double time_scale = 1, bytes_scale = 1;
  std::string mpirun_command;
  std::string backend = "mpi";  // mpi | nccl | torch: the executor named in summary.json
};

struct RealRun {
  RunResult result;
  StepStats steps;
};

// Merges `dir`/parts into the RunRecord files in `dir` and removes parts/.
// REQUIRES: plan is the scaled plan every process ran.
Result<RealRun> merge_parts(const Plan& plan, const std::string& dir, const LaunchInfo& info);

}  // namespace fleetsim::validate
