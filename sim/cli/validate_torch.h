// The real side of `fleetsim validate --backend torch`: the scaled scenario
// exported as a PyTorch script, run under torchrun (gloo on a CPU), and what
// PyTorch wrote turned into DIR/real/ (validate/torch_backend.h).
#pragma once

#include <optional>
#include <string>

#include "fleetsim/plan.h"
#include "fleetsim/status.h"
#include "validate/launcher.h"
#include "validate/scaling.h"

namespace fleetsim::cli {

// Exports `plan` (already scaled) to `tmp`/repro.py, runs it with `python`'s
// torchrun, one process per rank, bounded by the launcher, and converts the
// dumps into `tmp`/real/fr/. The event files are left in `tmp`/real/parts/ for
// merge_parts.
Result<validate::LaunchResult> run_torch_real(const Plan& plan, const std::string& tmp, const std::string& python,
                                              const validate::Scaling& scaling, Duration grace);

}  // namespace fleetsim::cli
