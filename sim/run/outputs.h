// Which files of the RunRecord (include/fleetsim/record.h) a simulated run
// writes, and for which ranks: by default what stays bounded at the run's
// scale, or exactly what `--outputs` names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fleetsim/plan.h"
#include "fleetsim/record.h"
#include "fleetsim/status.h"
#include "sim/observe/summary.h"

namespace fleetsim {

struct OutputSelection {
  OutputSet files = OutputSet::all();
  std::vector<int> telemetry_ranks, trace_ranks;
  int fr_capacity = 2000;
  // Whether the lockstep executor may run the plan (when eligible): it writes
  // only the outputs whose table entry says `lockstep`. Default: above 1024
  // ranks; with --outputs, when every output asked for is a lockstep one.
  bool lockstep_ok = false;
  OutputNotes notes;  // what was skipped or reduced, and why

  bool has(OutputFile f) const { return files.has(f); }
};

// The default keeps a run's folder bounded: telemetry for every rank up to 512
// ranks (else the first 64), the trace up to 64 ranks, flight-recorder dumps up
// to 1024 ranks with at most 2^18 entries in all. `requested` (from --outputs)
// names exactly the files to write, for every rank. Unknown names are errors.
Result<OutputSelection> select_outputs(const Plan& plan,
                                       const std::optional<std::vector<std::string>>& requested);

// The lockstep executor wrote no per-op files: drop them and say so in the notes.
void note_lockstep_outputs(OutputSelection* o);

}  // namespace fleetsim
