// Starting an MPI job from the fleetsim CLI and making sure it ends: mpirun runs
// in its own process group with a parent-death signal; the launcher kills the
// group and every descendant when the job outlives its deadline, so no rank
// process is ever left behind. MPI-free (it only forks and execs mpirun).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fleetsim::validate {

struct LaunchSpec {
  std::vector<std::string> argv;   // the whole command (torchrun); empty = mpirun_argv(*this)
  std::string runner;              // path of fleetsim-mpi-runner
  std::vector<std::string> args;   // the runner's arguments
  int ranks = 2;
  std::string hostfile;            // "" = every rank on this machine
  std::string log_file;            // mpirun's stdout+stderr go here
  std::string watch_dir;           // the job counts as alive while files here grow
  std::string watch_suffix;        // only files whose names end so ("" = all)
  double idle_limit_s = 30;        // kill after this long without growth in watch_dir
  double hard_limit_s = 3600;      // and never run longer than this
  std::function<void()> on_poll;   // called every poll (~50 ms) while the job runs (progress)
};

struct LaunchResult {
  int exit_code = 0;   // mpirun's status; 128 + signal if it died of one
  bool killed = false; // the launcher's deadline fired
  double wall_s = 0;
  std::string command; // the mpirun command line, for the record
};

// The runner `name` (fleetsim-mpi-runner, fleetsim-nccl-runner) next to the
// running executable (/proc/self/exe), or nullopt.
std::optional<std::string> find_runner(const std::string& name = "fleetsim-mpi-runner");

// For --backend nccl, before anything is launched: the NCCL runner exists and
// this machine has a CUDA device (`fleetsim-nccl-runner probe`, bounded to
// 60 s). "" when ready, else one line saying why not.
std::string nccl_backend_unavailable();

// For --hostfile, before anything is launched: "" when `path` is a regular
// file this process can read, else one line saying why not (mpirun would
// otherwise fail with only the first line of its banner).
std::string hostfile_unreadable(const std::string& path);

// The mpirun argv: --allow-run-as-root when root, --oversubscribe (and
// --bind-to none) when ranks exceed the cores, -np N.
std::vector<std::string> mpirun_argv(const LaunchSpec& spec);

// Runs the job to its end or deadline. Fails (nullopt) only if fork fails. The job
// gets a temporary directory of its own (TMPDIR=<temp dir>/fleetsim-job.XXXXXX),
// removed with whatever is in it once nothing of the job is left, so a killed job
// leaves nothing in the temporary directory (mpirun's session folder among it).
std::optional<LaunchResult> launch(const LaunchSpec& spec);

// Pids of every live descendant of `pid` (from /proc).
std::vector<int> descendants(int pid);

}  // namespace fleetsim::validate
