// `fleetsim sweep SCENARIO --vary KEY=V1,V2,... [--seeds N] [--threads N]
// [--format table|csv]`: runs the grid (sim/sweep/sweep.h) on threads, and,
// when started by mpirun (OMPI_COMM_WORLD_SIZE set) in a build with MPI, over
// MPI ranks too: rank k runs tasks i with i % K == k, and rank 0 prints after a
// sum-reduce of the per-task results (each task is nonzero on one rank only),
// so the output is identical to a threaded run.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "sim/cli/commands.h"
#include "sim/sweep/sweep.h"

#ifdef FLEETSIM_HAVE_MPI
#include <mpi.h>
#endif

namespace fleetsim::cli {

namespace {

struct SweepArgs {
  std::string scenario;
  std::vector<std::string> vary, sets;
  int seeds = 1;
  int threads = 0;
  std::string format = "table";
};

int print_errors(const std::vector<Diagnostic>& errors) {
  for (const Diagnostic& d : errors) std::fprintf(stderr, "%s\n", d.to_string().c_str());
  return 2;
}

Result<SweepAxis> parse_vary(const std::string& text) {
  const size_t eq = text.find('=');
  Diagnostic d;
  d.loc.file = "--vary " + text;
  d.loc.line = 1;
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    d.message = "expected KEY=V1,V2,... (e.g. fleet.nodes=1,8,128)";
    return d;
  }
  SweepAxis a;
  a.key = text.substr(0, eq);
  // Values split on commas outside {} and [] (a value may be a YAML mapping).
  std::string v;
  int depth = 0;
  for (const char c : text.substr(eq + 1)) {
    depth += (c == '{' || c == '[') ? 1 : (c == '}' || c == ']') ? -1 : 0;
    if (c == ',' && depth == 0) {
      a.values.push_back(v);
      v.clear();
    } else {
      v += c;
    }
  }
  a.values.push_back(v);
  return a;
}

// Progress on stderr while tasks run (sim/observe/progress.h: a terminal, or --progress).
void progress(const std::atomic<size_t>& done, size_t total, const std::atomic<bool>& stop) {
  ProgressMeter meter("sweep", "runs", static_cast<int64_t>(total));
  while (!stop && done.load() < total) {
    meter.update(static_cast<int64_t>(done.load()));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  meter.update(static_cast<int64_t>(done.load()));
}

struct World {
  int rank = 0, size = 1;
};

World start_mpi() {
  World w;
#ifdef FLEETSIM_HAVE_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  }
#endif
  return w;
}

// Sums every rank's results into rank 0's (see the file comment).
void gather(const World& w, std::vector<TaskResult>* results) {
#ifdef FLEETSIM_HAVE_MPI
  if (w.size > 1) {
    std::vector<TaskResult> sum(results->size());
    MPI_Reduce(results->data(), sum.data(), static_cast<int>(results->size() * kTaskResultFields), MPI_DOUBLE, MPI_SUM,
               0, MPI_COMM_WORLD);
    *results = std::move(sum);
  }
#else
  (void)w;
  (void)results;
#endif
}

void stop_mpi(const World& w) {
#ifdef FLEETSIM_HAVE_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) MPI_Finalize();
#endif
  (void)w;
}

int do_sweep(const SweepArgs& a, const World& w) {
  SweepSpec spec;
  spec.scenario = a.scenario;
  spec.sets = a.sets;
  spec.seeds = a.seeds;
  for (const std::string& v : a.vary) {
    auto axis = parse_vary(v);
    if (!axis.ok()) return print_errors(axis.errors());
    spec.axes.push_back(*axis);
  }
  auto grid = make_grid(spec);
  if (!grid.ok()) return print_errors(grid.errors());
  const int threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const auto mine = [&](size_t i) { return static_cast<int>(i % static_cast<size_t>(w.size)) == w.rank; };
  std::atomic<size_t> done{0};
  std::atomic<bool> stop{false};
  size_t my_tasks = 0;
  for (size_t i = 0; i < grid->tasks(); ++i) my_tasks += mine(i) ? 1 : 0;
  std::thread bar;
  if (w.rank == 0 && progress_enabled()) bar = std::thread(progress, std::cref(done), my_tasks, std::cref(stop));
  auto results = run_tasks(*grid, threads, mine, &done);
  stop = true;
  if (bar.joinable()) bar.join();
  if (!results.ok()) return print_errors(results.errors());
  gather(w, &*results);
  if (w.rank == 0) std::fputs(format_sweep(*grid, *results, a.format == "csv").c_str(), stdout);
  return 0;
}

}  // namespace

void register_sweep_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<SweepArgs>();
  CLI::App* cmd = app.add_subcommand("sweep", "Run a grid of scenario variants over seeds: straggler tax vs closed form");
  cmd->add_option("scenario", args->scenario, "Scenario YAML file")->required();
  cmd->add_option("--vary", args->vary, "KEY=V1,V2,...: a grid axis (dotted key as in --set); repeatable")->required();
  cmd->add_option("--set", args->sets, "Override a scenario key for every point: KEY=VALUE; repeatable");
  cmd->add_option("--seeds", args->seeds, "Seeds per point (job.seed + 0..N-1)")->check(CLI::Range(1, 1000000));
  cmd->add_option("--threads", args->threads, "Worker threads (default: all cores)")->check(CLI::Range(0, 4096));
  cmd->add_option("--format", args->format, "table or csv")->check(CLI::IsMember({"table", "csv"}));
  add_progress_flag(cmd);
  cmd->callback([args, exit_code] {
    const World w = start_mpi();
    *exit_code = do_sweep(*args, w);
    stop_mpi(w);
  });
}

}  // namespace fleetsim::cli
