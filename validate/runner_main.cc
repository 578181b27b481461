// fleetsim-mpi-runner: the program mpirun starts once per rank. `run` executes
// one rank of a scaled scenario (the launcher, `fleetsim validate`, merges the
// ranks' parts into a RunRecord); `calibrate` runs the collective sweeps for
// `fleetsim calibrate`. Not meant to be started by hand, though it can be.
#include <mpi.h>
#include <signal.h>
#include <sys/prctl.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <sstream>

#include "sim/io/scenario_loader.h"
#include "sim/model/calibration.h"
#include "validate/calib_sweep.h"
#include "validate/rank_runner.h"
#include "validate/scaling.h"

namespace {

using namespace fleetsim;
using namespace fleetsim::validate;

struct RunArgs {
  std::string scenario, work, time_scale = "0.1", bytes_scale = "1/1024";
  std::vector<std::string> sets;
  int64_t timeout_ms = 5000, dump_wait_ms = 1000, telemetry_ms = 100;
  bool yield = false;
};

int run_rank(const RunArgs& a) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  Scaling k;
  auto scenario = load_scenario(a.scenario, a.sets);
  if (!parse_scale(a.time_scale, &k.time_scale) || !parse_scale(a.bytes_scale, &k.bytes_scale)) {
    if (rank == 0) std::fprintf(stderr, "error: bad --time-scale or --bytes-scale\n");
    return 2;
  }
  if (!scenario.ok()) {
    if (rank == 0) for (const Diagnostic& d : scenario.errors()) std::fprintf(stderr, "%s\n", d.to_string().c_str());
    return 2;
  }
  k.timeout = Duration::millis(a.timeout_ms);
  k.dump_wait = Duration::millis(a.dump_wait_ms);
  k.telemetry_period = Duration::millis(a.telemetry_ms);
  auto plan = compile_plan(scale_scenario(*scenario, k));
  if (!plan.ok()) {
    if (rank == 0) for (const Diagnostic& d : plan.errors()) std::fprintf(stderr, "%s\n", d.to_string().c_str());
    return 2;
  }
  if (plan->ranks != world) {
    if (rank == 0)
      std::fprintf(stderr, "%s: error: the scenario has %d ranks but mpirun started %d processes\n",
                   a.scenario.c_str(), plan->ranks, world);
    return 2;
  }
  RunnerOptions o;
  o.work_dir = a.work;
  o.yield = a.yield;
  RankRunner runner(*plan, o, rank);
  return runner.run();
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int calibrate(const std::string& ops, const std::string& sizes, SweepOptions o) {
  for (const std::string& name : split(ops)) {
    const auto k = collective_from_name(name);
    if (!k) {
      std::fprintf(stderr, "error: unknown collective '%s'\n", name.c_str());
      return 2;
    }
    o.ops.push_back(*k);
  }
  for (const std::string& g : split(sizes)) o.group_sizes.push_back(std::atoi(g.c_str()));
  return run_sweep(o);
}

}  // namespace

int main(int argc, char** argv) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // if mpirun goes, so do we: never an orphan
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_terminate = true; };
  sigaction(SIGTERM, &sa, nullptr);

  CLI::App app{"fleetsim-mpi-runner: one rank of a real run (started by fleetsim validate/calibrate)"};
  app.require_subcommand(1);
  RunArgs ra;
  CLI::App* run = app.add_subcommand("run", "Execute one rank of a scaled scenario");
  run->add_option("scenario", ra.scenario)->required();
  run->add_option("--work", ra.work, "RunRecord folder being written")->required();
  run->add_option("--set", ra.sets);
  run->add_option("--time-scale", ra.time_scale);
  run->add_option("--bytes-scale", ra.bytes_scale);
  run->add_option("--timeout-ms", ra.timeout_ms);
  run->add_option("--dump-wait-ms", ra.dump_wait_ms);
  run->add_option("--telemetry-ms", ra.telemetry_ms);
  run->add_flag("--yield", ra.yield);
  SweepOptions so;
  std::string ops = "allreduce", sizes = "2";
  CLI::App* cal = app.add_subcommand("calibrate", "Sweep collectives and write op,ranks,bytes,time_s");
  cal->add_option("--out", so.out)->required();
  cal->add_option("--ops", ops);
  cal->add_option("--group-sizes", sizes);
  cal->add_option("--min-bytes", so.min_bytes);
  cal->add_option("--max-bytes", so.max_bytes);
  cal->add_option("--factor", so.factor);
  cal->add_option("--iters", so.iters);
  cal->add_option("--budget-s", so.budget_s);
  cal->add_flag("--yield", so.yield);
  CLI11_PARSE(app, argc, argv);

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);  // only the main thread calls MPI
  so.yield = so.yield || ra.yield;
  const int rc = run->parsed() ? run_rank(ra) : calibrate(ops, sizes, so);
  MPI_Finalize();
  return rc;
}
