// The static half of `when` arithmetic: compile_plan (so `check` and `run`
// alike) finds a `when` that divides by zero for a rank at a step the rank
// reaches, where that can be decided without running; the rest is found when
// the run reaches it (docs/scenario-format.md, "when blocks").
#pragma once

#include <optional>
#include <vector>

#include "fleetsim/plan.h"
#include "fleetsim/status.h"

namespace fleetsim {

// `when_locs[i]` is where plan.exprs[i] sits in the YAML file. Returns the
// first division by zero found, located at its `when` and naming rank and step.
std::optional<Diagnostic> find_static_division_by_zero(const Plan& plan, const std::vector<SourceLoc>& when_locs);

}  // namespace fleetsim
