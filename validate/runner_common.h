// What every per-rank program (fleetsim-mpi-runner, fleetsim-nccl-runner)
// shares: the `run` subcommand's options, loading and scaling the scenario and
// compiling the plan exactly as `fleetsim validate` does, the SIGTERM handler
// and the parent-death signal.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fleetsim/plan.h"
#include "sim/io/units.h"
#include "validate/calib_sweep.h"

namespace fleetsim::validate {

struct RunArgs {
  std::string scenario, work, time_scale = "0.1", bytes_scale = "1/1024";
  std::vector<std::string> sets;
  int64_t timeout_ms = 5000, dump_wait_ms = 1000, telemetry_ms = 100;
  bool yield = false;
  int64_t spin_step = -1;  // the spin demonstration (NCCL runner)
};

// Adds the `run` subcommand with its options to `app`.
CLI::App* add_run_command(CLI::App& app, RunArgs& a);

// The scaled plan for a job of `world` processes; errors go to stderr when
// `report` (rank 0) and yield nullopt.
std::optional<Plan> load_run_plan(const RunArgs& a, int world, bool report);

// PR_SET_PDEATHSIG(SIGKILL) and a SIGTERM handler that sets g_terminate.
void install_process_guards();

// The largest op of a plan (what a transport's buffers must hold).
int64_t plan_max_bytes(const Plan& plan);

// Comma list -> items.
// --ops and --group-sizes of a runner's calibration sweep into `o`; false (after
// one line on stderr) on an unknown collective.
bool parse_sweep_lists(const std::string& ops, const std::string& sizes, SweepOptions* o);

// The `calibrate` subcommand both runners share: its options fill `so`, and the
// --ops and --group-sizes lists (for parse_sweep_lists) `ops` and `sizes`.
CLI::App* add_calibrate_command(CLI::App& app, const std::string& what, SweepOptions& so, std::string& ops,
                                std::string& sizes);

}  // namespace fleetsim::validate
