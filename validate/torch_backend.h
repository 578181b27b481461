// `fleetsim validate --backend torch`: the scenario exported as a PyTorch script
// (sim/export) runs under torchrun, one process per rank (gloo on a CPU), and
// what PyTorch wrote becomes the real RunRecord: the flight-recorder dumps of
// every rank, and the script's per-rank event files merged as the MPI runner's.
#pragma once

#include <string>
#include <vector>

#include "fleetsim/plan.h"
#include "fleetsim/status.h"

namespace fleetsim::validate {

// "" when `python` runs and imports torch (bounded to 120 s), else one line why not.
std::string torch_backend_unavailable(const std::string& python);

// The torchrun command line: `python -m torch.distributed.run --standalone
// --nproc-per-node N --log-dir LOG_DIR script args...`. torchrun keeps its per-rank
// files (error files, redirected streams) under LOG_DIR; without one it makes a
// torchelastic_* folder in the temporary directory and leaves it there.
std::vector<std::string> torchrun_argv(const std::string& python, int ranks, const std::string& log_dir,
                                       const std::string& script, const std::vector<std::string>& script_args);

// The torch name of `rank`'s instance of group kind `g`: new_group numbers
// groups in creation order (world "0", then every tp, dp and pp instance).
std::string torch_group_name(const Plan& plan, GroupKind g, int rank);

// The script's event files name groups and ops ("dp", "grads"); merge_parts
// reads group kinds and plan op indices. Rewrites the timeout lines of
// `real_dir`/parts in place.
void translate_events(const Plan& plan, const std::string& real_dir);

// PyTorch's JSON dumps (`json_dir`/nccl_trace_rank_<r>.json) as the RunRecord's
// fr/rank_<r>.json: the same entries, with pg_config filled from the plan's
// layout (gloo's recorder leaves it empty) and keyed like pg_status by group
// name, and gloo's completed entries (still "scheduled" in its recorder, at or
// below pg_status' last_completed_collective) marked completed. Returns the
// ranks that had a dump.
Result<std::vector<int>> convert_torch_dumps(const Plan& plan, const std::string& json_dir, const std::string& fr_dir);

}  // namespace fleetsim::validate
