// The healthy model diagnose judges a simulator RunRecord's collective times against:
// the scenario its summary.json names, reloaded, and the cost model `fleetsim run`
// builds for it. Kept apart from diagnose, which reads only the record; used by
// `fleetsim diagnose`, `fleetsim validate` and the drill.
#pragma once

#include "sim/diagnose/diagnose.h"

namespace fleetsim::cli {

// For a simulator RunRecord (summary.json with "executor": "sim" and the scenario's
// "file"): the cost model's healthy expectation, or, when the scenario does not load
// or has no cost model, a note saying so. For any other record: neither.
diagnose::RecordModel scenario_healthy_model(const diagnose::Record& rec);

}  // namespace fleetsim::cli
