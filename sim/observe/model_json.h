// model.json: what the run's cost model says each collective of the program
// costs on the healthy fabric, per distinct group shape. diagnose judges a
// record's achieved collective times against it, so it never has to reload the
// scenario or rebuild the model (the scenario may have changed since, or not
// be on the machine at all).
#pragma once

#include <cstdio>

#include "fleetsim/cost_model.h"
#include "fleetsim/plan.h"

namespace fleetsim {

// Writes model.json for `plan` under `cost` to `out`. Deterministic.
void write_model_json(const Plan& plan, const CostModel& cost, std::FILE* out);

}  // namespace fleetsim
