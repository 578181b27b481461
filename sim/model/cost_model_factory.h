// Builds the collective model a plan asks for (job.collective_model, job.nccl):
// NCCL's tuning model on the fleet's fabric by default, or the core's
// alpha-beta ring; a scenario's `calibration: FILE`
// (written by `fleetsim calibrate`) overrides them. The one place that choice is made.
#pragma once

#include <memory>

#include "fleetsim/cost_model.h"
#include "fleetsim/plan.h"
#include "fleetsim/status.h"

namespace fleetsim {

Result<std::unique_ptr<CostModel>> make_cost_model(const Plan& plan);

}  // namespace fleetsim
