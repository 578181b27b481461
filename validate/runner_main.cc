// fleetsim-mpi-runner: the program mpirun starts once per rank. `run` executes
// one rank of a scaled scenario (the launcher, `fleetsim validate`, merges the
// ranks' parts into a RunRecord); `calibrate` runs the collective sweeps for
// `fleetsim calibrate`. Not meant to be started by hand, though it can be.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "sim/model/calibration.h"
#include "validate/calib_sweep.h"
#include "validate/mpi_transport.h"
#include "validate/rank_runner.h"
#include "validate/runner_common.h"

namespace {

using namespace fleetsim;
using namespace fleetsim::validate;

int run_rank(const RunArgs& a) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  auto plan = load_run_plan(a, world, rank == 0);
  if (!plan) return 2;
  RunnerOptions o;
  o.work_dir = a.work;
  o.spin_step = a.spin_step;
  MpiTransport transport(*plan, rank, a.yield);
  RankRunner runner(*plan, o, rank, transport);
  return runner.run();
}

int calibrate(const std::string& ops, const std::string& sizes, SweepOptions o) {
  if (!parse_sweep_lists(ops, sizes, &o)) return 2;
  return run_sweep(o);
}

}  // namespace

int main(int argc, char** argv) {
  install_process_guards();
  CLI::App app{"fleetsim-mpi-runner: one rank of a real run (started by fleetsim validate/calibrate)"};
  app.require_subcommand(1);
  RunArgs ra;
  CLI::App* run = add_run_command(app, ra);
  SweepOptions so;
  std::string ops = "allreduce", sizes = "2";
  add_calibrate_command(app, "Sweep collectives and write op,ranks,bytes,time_s", so, ops, sizes);
  CLI11_PARSE(app, argc, argv);

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);  // only the main thread calls MPI
  so.yield = so.yield || ra.yield;
  const int rc = run->parsed() ? run_rank(ra) : calibrate(ops, sizes, so);
  MPI_Finalize();
  return rc;
}
