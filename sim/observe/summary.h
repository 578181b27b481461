// summary.json's parts, shared by every writer of a RunRecord (the simulator's
// in sim/run/, the real runners' merge in validate/): the scenario's identity,
// the outcome's details, the straggler tax and the list of files written.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleetsim/engine.h"
#include "fleetsim/record.h"

namespace fleetsim {

// The straggler tax of a run (summary.json's `straggler_tax` and `straggler`).
struct TaxReport {
  double baseline_step_ns = 0;      // jitter-free, fault-free mean step
  const char* baseline_how = "";    // "analytic" | "lockstep" | "event"
  double mean_step_ns = 0;          // this run's mean over completed steps
  double tax = 0;                   // mean / baseline - 1 (0 when either is 0)
  std::vector<int64_t> slowest_counts, wait_ns, compute_ns;  // per rank
};

// (file, what was skipped or reduced, and why): summary.json's `outputs.notes`.
using OutputNotes = std::vector<std::pair<std::string, std::string>>;

// The scenario's identity: scenario, description, file, seed, ranks, parallel.
void add_scenario_fields(nlohmann::ordered_json* j, const Plan& plan);

// The outcome-specific fields (`hang`, `crash`, `deadlock`); `deadlock_why`
// explains a deadlock.
void add_outcome_fields(nlohmann::ordered_json* j, const Plan& plan, const RunResult& r,
                        const std::string& deadlock_why);

// `straggler`: per-rank arrays up to 1024 ranks; beyond, top-k lists, spreads
// and a histogram of the collective wait, so the summary stays bounded.
nlohmann::ordered_json straggler_json(const TaxReport& t, int ranks);

// `outputs`: {written: [file names in table order], notes: [{file, why}]}.
void add_outputs_field(nlohmann::ordered_json* j, OutputSet written, const OutputNotes& notes);

}  // namespace fleetsim
