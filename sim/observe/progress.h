// The run's progress observer: feeds a ProgressMeter (fleetsim/progress.h) from
// on_step_end / on_tick, reading the clock once every few thousand callbacks
// (no syscall per event).
#pragma once

#include <memory>

#include "fleetsim/observer.h"
#include "fleetsim/plan.h"
#include "fleetsim/progress.h"

namespace fleetsim {

// Null when progress is off.
std::unique_ptr<Observer> make_progress_observer(const Plan& plan);

}  // namespace fleetsim
