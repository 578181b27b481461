// Runs a plan in the simulator and writes its RunRecord folder (see
// docs/run-record.md): chooses which outputs stay bounded at the run's scale,
// wires the observers, writes into DIR.tmp-<pid> and renames it to DIR only on
// success, so a folder that exists is never half-written.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fleetsim/engine.h"
#include "sim/observe/step_table.h"

namespace fleetsim {

inline constexpr const char* kOutputNames[] = {"summary", "steps", "telemetry", "fr", "trace", "log"};

// Which files a run writes and, for per-rank files, which ranks.
struct OutputSelection {
  bool summary = true, steps = true, telemetry = true, fr = true, trace = true, log = true;
  std::vector<int> telemetry_ranks, trace_ranks;
  int fr_capacity = 2000;
  std::vector<std::pair<std::string, std::string>> notes;  // (file, what was skipped or reduced, and why)
};

// The default keeps a run's folder bounded: telemetry for every rank up to 512
// ranks (else the first 64), the trace up to 64 ranks, flight-recorder dumps up
// to 1024 ranks with at most 2^18 entries in all. `requested` (from --outputs)
// names exactly the files to write, for every rank. Unknown names are errors.
Result<OutputSelection> select_outputs(const Plan& plan,
                                       const std::optional<std::vector<std::string>>& requested);

struct RecordedRun {
  RunResult result;
  StepStats steps;
  std::string dir;
  OutputSelection outputs;
};

// REQUIRES: out_dir's parent exists or can be created.
Result<RecordedRun> simulate_to_record(const Plan& plan, const CostModel& cost, const std::string& out_dir,
                                       const OutputSelection& outputs);

}  // namespace fleetsim
