// Which files of the RunRecord (include/fleetsim/record.h) a simulated run
// writes, and for which ranks: by default what stays bounded at the run's
// scale, or exactly what `--outputs` names. Also the estimate of the folder's
// size that `check` prints and `run` holds against --max-output.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fleetsim/cost_model.h"
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
// ranks (else the first 64), the trace in full up to 64 ranks (above, 64 in full
// and the rest summarized; --outputs trace too), flight-recorder dumps up
// to 1024 ranks with at most 2^18 entries in all. `requested` (from --outputs)
// names exactly the files to write, for every rank. Unknown names are errors.
Result<OutputSelection> select_outputs(const Plan& plan,
                                       const std::optional<std::vector<std::string>>& requested);

// The lockstep executor wrote no per-op files: drop them and say so in the notes.
void note_lockstep_outputs(OutputSelection* o);

// The most a run may write unless --max-output raises it, and the most memory
// the flight recorder may hold (not raised by --max-output).
inline constexpr int64_t kMaxOutputDefault = int64_t{2} << 30;      // 2 GiB
inline constexpr int64_t kFlightRecorderMemoryMax = int64_t{4} << 30;  // 4 GiB

// What a run of `plan` will write with `selection`, predicted before it runs:
// rows of steps.csv (steps), of telemetry.csv (simulated time / period x sampled
// ranks), trace events (ops x traced ranks), flight-recorder entries (ranks x
// min(capacity, records)), and the log. Steps are sampled (at most 1024) for the
// ops they run and their healthy duration; a crash or hang fault ends the count
// at its step plus the time the job takes to notice. Meant to be within 2x.
struct OutputEstimate {
  std::vector<std::pair<std::string, int64_t>> files;  // name, bytes (largest first)
  int64_t total_bytes = 0;
  int64_t fr_memory_bytes = 0;  // the flight recorder's rings at their fullest
  // "about 77.6 MB (fr/ 54.1 MB, trace.json 21.3 MB, ...)"
  std::string describe() const;
};
// `lockstep`: whether the lockstep executor will run (it writes fewer files).
OutputEstimate estimate_outputs(const Plan& plan, const CostModel& cost, const OutputSelection& selection,
                                bool lockstep);

// The same for a run as `fleetsim run` would make it: outputs chosen as
// select_outputs does, `executor` auto | event | lockstep (lockstep when the
// plan is eligible). Bad --outputs names are errors.
Result<OutputEstimate> estimate_run_outputs(const Plan& plan, const CostModel& cost,
                                            const std::optional<std::vector<std::string>>& requested,
                                            const std::string& executor);

// An error saying why a run would be too large (above `max_output` bytes, or the
// flight recorder above its memory cap) and how to proceed; nullopt if it fits.
std::optional<Diagnostic> check_output_estimate(const OutputEstimate& e, int64_t max_output);

}  // namespace fleetsim
