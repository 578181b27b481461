// fleetsim drill: an on-call exercise. A hidden fault from scenarios/ runs in the
// simulator; the engineer sees the page, asks for evidence with commands that
// mirror real tools (nvidia-smi, py-spy, flight recorder, ncclras, NCCL_DEBUG,
// halving the job, nccl-tests), each costing minutes on an incident clock, and
// answers with a rank and a cause. Output is deterministic for a given input.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "fleetsim/status.h"
#include "sim/diagnose/diagnose.h"

namespace fleetsim::drill {

// The incidents a drill can draw: scenario files in `dir` (sorted by name) whose
// expect.cause is set and is not "none".
std::vector<std::string> list_incidents(const std::string& dir);

// Picks one of `incidents` from `seed` (SplitMix64), the same for the same inputs.
// REQUIRES: !incidents.empty().
const std::string& pick_incident(const std::vector<std::string>& incidents, uint64_t seed);

struct DrillOptions {
  std::string scenario;   // the scenario file to run
  std::string work_dir;   // where the hidden run's RunRecord goes (created, then removed)
  bool echo = true;       // echo each command after the prompt (piped input)
  bool prompt = false;    // print a prompt before reading (a terminal)
};

// Runs one drill reading commands from `in` until `answer` or EOF. Fails only on
// bad input (the scenario does not load or cannot be simulated).
Result<int> run_drill(const DrillOptions& opt, std::istream& in, std::ostream& out);

}  // namespace fleetsim::drill
