// `fleetsim sweep`: a grid of scenario variants (--vary KEY=V1,V2,...) times
// seeds (job.seed + i), each run with the fastest eligible executor, summarized
// per point as mean step time and straggler tax with a 95% confidence interval
// next to the closed form (order_stats.h). Tasks are independent and results
// are stored by task index, so the output is the same for any thread count and
// for any split over MPI ranks.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fleetsim/status.h"

namespace fleetsim {

struct SweepAxis {
  std::string key;                  // dotted, as --set takes it
  std::vector<std::string> values;  // YAML values
};

struct SweepSpec {
  std::string scenario;
  std::vector<std::string> sets;    // --set overrides applied to every point
  std::vector<SweepAxis> axes;      // the grid is their product, first axis slowest
  int seeds = 1;
};

// One (point, seed) run. Plain doubles, so MPI can sum-reduce them (each task
// is computed by exactly one rank; the others contribute zeros).
struct TaskResult {
  double mean_step_ns = 0, baseline_step_ns = 0, tax = 0;
  double step_tax_sum = 0, step_tax_sumsq = 0, steps = 0;  // per-step tax moments
  double lockstep = 0;                                      // 1 if the lockstep executor ran
  double ranks = 0, exact_tax = 0, gumbel_tax = 0;          // closed form (NaN if n/a)
};
inline constexpr int kTaskResultFields = 10;
static_assert(sizeof(TaskResult) == kTaskResultFields * sizeof(double));

struct SweepPoint {
  std::vector<std::string> values;  // one per axis
  std::vector<std::string> overrides;
};

struct SweepGrid {
  SweepSpec spec;
  std::vector<SweepPoint> points;
  size_t tasks() const { return points.size() * static_cast<size_t>(spec.seeds); }
};

// Expands the grid and loads every point once, so bad keys or values are
// reported (FILE:LINE:COL or --set labels) before anything runs.
Result<SweepGrid> make_grid(const SweepSpec& spec);

// Runs task `i` (point i / seeds, seed job.seed + i % seeds).
Result<TaskResult> run_task(const SweepGrid& grid, size_t i);

// Runs the tasks `mine(i)` selects on `threads` threads; others stay zero.
// `done` is incremented after each task (for a progress bar). The first error
// (lowest task index) is returned.
Result<std::vector<TaskResult>> run_tasks(const SweepGrid& grid, int threads, const std::function<bool(size_t)>& mine,
                                          std::atomic<size_t>* done);

// Prints one row per point: table (aligned) or csv.
std::string format_sweep(const SweepGrid& grid, const std::vector<TaskResult>& tasks, bool csv);

// Student's t quantile at 0.975 for `df` degrees of freedom (1.96 beyond 30).
double t975(int64_t df);

}  // namespace fleetsim
