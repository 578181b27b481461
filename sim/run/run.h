// The one path from a scenario to a RunRecord folder:
//
//   scenario.yaml --load_plan--> Plan --prepare_run--> PreparedRun (plan + the cost
//   model the scenario asks for) --execute--> executor choice, observers, folder
//
// Every command that simulates (run, validate's simulated side, sweep, drill,
// diagnose's model check) goes through here; none repeats the steps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/engine.h"
#include "fleetsim/plan.h"
#include "fleetsim/status.h"
#include "sim/observe/step_table.h"
#include "sim/observe/summary.h"
#include "sim/run/outputs.h"

namespace fleetsim {

// A change to the loaded scenario before it is compiled (validate's scaling,
// a sweep's seed offset, the drill's halves).
using ScenarioEdit = std::function<void(Scenario*)>;

// Loads `file` with `--set` style `overrides` (KEY=VALUE), applies `edit` and
// compiles it. Bad input comes back as located diagnostics.
Result<Plan> load_plan(const std::string& file, const std::vector<std::string>& overrides = {},
                       const ScenarioEdit& edit = {});

// A plan with the cost model its scenario asks for (job.collective_model,
// job.nccl, or a `calibration:` file), ready to execute any number of times.
struct PreparedRun {
  Plan plan;
  std::unique_ptr<CostModel> cost;  // never null
};
Result<PreparedRun> prepare_run(Plan plan);
// The same with a model of the caller's (validate's calibrated model).
PreparedRun prepare_run(Plan plan, std::unique_ptr<CostModel> cost);
// load_plan + prepare_run.
Result<PreparedRun> prepare_run(const std::string& file, const std::vector<std::string>& overrides = {},
                                const ScenarioEdit& edit = {});

struct RunOptions {
  std::string out_dir;                                 // the folder to write
  std::optional<std::vector<std::string>> outputs;     // `--outputs` names; nullopt = bounded defaults
  std::string executor = "auto";                       // auto | event | lockstep | hybrid (when eligible)
  bool force = false;  // replace an earlier fleetsim run folder at out_dir (out_dir.h)
};

struct RecordedRun {
  RunResult result;
  StepStats steps;
  std::string executor = "event";   // "lockstep" | "hybrid" | "event"
  std::string why_event;            // why the event executor ran, if it did
  TaxReport tax;
  std::string dir;
  OutputSelection outputs;          // what was written (lockstep: fewer files)
};

// Runs the plan and writes its RunRecord into opts.out_dir: DIR.tmp-<pid> next to
// it first, renamed to DIR only on success, so a folder that exists is never
// half-written. out_dir is checked before anything runs (check_out_dir in
// out_dir.h: only an earlier run folder is replaced, and only with opts.force).
// A run-time input error (a `when` dividing by zero) or a failed write (a full
// file system) leaves nothing behind.
Result<RecordedRun> execute(const PreparedRun& run, const RunOptions& opts);

// Runs the plan in memory, keeping only step durations (lockstep when
// eligible): what a sweep point or a drill's rerun needs.
struct StepRun {
  RunResult result;
  bool lockstep = false;
  std::vector<int64_t> durations_ns;  // per completed step
  double baseline_step_ns = 0;        // the jitter-free, fault-free mean step
};
Result<StepRun> execute_steps(const PreparedRun& run);

}  // namespace fleetsim
