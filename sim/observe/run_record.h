// Runs a plan in the simulator and writes its RunRecord folder (see
// docs/run-record.md): chooses which outputs stay bounded at the run's scale,
// wires the observers, writes into DIR.tmp-<pid> and renames it to DIR only on
// success, so a folder that exists is never half-written.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleetsim/engine.h"
#include "sim/observe/step_table.h"

namespace fleetsim {

inline constexpr const char* kOutputNames[] = {"summary", "steps", "telemetry", "fr", "trace", "log"};

// Which files a run writes and, for per-rank files, which ranks.
struct OutputSelection {
  bool summary = true, steps = true, telemetry = true, fr = true, trace = true, log = true;
  std::vector<int> telemetry_ranks, trace_ranks;
  int fr_capacity = 2000;
  // Whether the lockstep executor may run the plan (when eligible): it writes
  // summary, steps and log only. Default: above 1024 ranks; with --outputs,
  // when no telemetry, fr or trace is asked for.
  bool lockstep_ok = false;
  std::vector<std::pair<std::string, std::string>> notes;  // (file, what was skipped or reduced, and why)
};

// The default keeps a run's folder bounded: telemetry for every rank up to 512
// ranks (else the first 64), the trace up to 64 ranks, flight-recorder dumps up
// to 1024 ranks with at most 2^18 entries in all. `requested` (from --outputs)
// names exactly the files to write, for every rank. Unknown names are errors.
Result<OutputSelection> select_outputs(const Plan& plan,
                                       const std::optional<std::vector<std::string>>& requested);

// The straggler tax of a run (summary.json's `straggler_tax` and `straggler`).
struct TaxReport {
  double baseline_step_ns = 0;      // jitter-free, fault-free mean step
  const char* baseline_how = "";    // "analytic" | "lockstep" | "event"
  double mean_step_ns = 0;          // this run's mean over completed steps
  double tax = 0;                   // mean / baseline - 1 (0 when either is 0)
  std::vector<int64_t> slowest_counts, wait_ns, compute_ns;  // per rank
};

// The scenario's identity in summary.json (scenario, description, file, seed,
// ranks, parallel), shared by every executor's summary writer.
void add_scenario_fields(nlohmann::ordered_json* j, const Plan& plan);

// The outcome-specific fields of summary.json (`hang`, `crash`, `deadlock`), shared
// by every executor's summary writer; `deadlock_why` explains a deadlock.
void add_outcome_fields(nlohmann::ordered_json* j, const Plan& plan, const RunResult& r,
                        const std::string& deadlock_why);

struct RecordedRun {
  RunResult result;
  StepStats steps;
  std::string executor = "event";   // "lockstep" | "event"
  std::string why_event;            // why the event executor ran, if it did
  TaxReport tax;
  std::string dir;
  OutputSelection outputs;
};

// REQUIRES: out_dir's parent exists or can be created.
Result<RecordedRun> simulate_to_record(const Plan& plan, const CostModel& cost, const std::string& out_dir,
                                       const OutputSelection& outputs);

}  // namespace fleetsim
