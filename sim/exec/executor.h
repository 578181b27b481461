// Which executor runs a plan. When the caller allows the fast executors (its
// observers take whole steps), the lockstep executor runs an eligible plan
// (lockstep_eligible), else the hybrid one (hybrid_eligible); otherwise, or when
// the fast run leaves its domain, the event executor (FleetSim) does. Also the
// jitter-free baseline step the straggler tax is measured against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetsim/engine.h"
#include "sim/exec/hybrid_executor.h"
#include "sim/exec/lockstep_executor.h"

namespace fleetsim {

// Which executor ran a plan.
enum class ExecutorKind : uint8_t { kEvent, kLockstep, kHybrid };
const char* executor_name(ExecutorKind k);  // "event", "lockstep", "hybrid"

struct Executed {
  RunResult result;
  ExecutorKind executor = ExecutorKind::kEvent;
  std::string why_event;  // why the event executor ran ("" if lockstep or hybrid did)
};

// Which fast executors a caller allows.
struct FastExecutors {
  bool lockstep = false;
  bool hybrid = false;
};

// Runs `plan` with the lockstep executor when `allow.lockstep` and the plan is
// eligible, else with the hybrid one when `allow.hybrid` and it is eligible,
// else (or if the fast run leaves its domain) with FleetSim.
// `make_observers(kind, StepAccounting** accounting)` is called before each
// attempt and must return fresh observers (a fallback discards what the first
// attempt fed). For the lockstep and hybrid executors it may also set
// *accounting (null by default) to receive whole steps' compute and collective
// waits, which they report nowhere else (the hybrid: for its uniform stretch);
// the event executor ignores it (its observers see on_compute and on_transfer).
template <typename MakeObservers>
Executed execute_plan(const Plan& plan, const CostModel& cost, FastExecutors allow, MakeObservers make_observers) {
  Executed ex;
  const Eligibility e = allow.lockstep ? lockstep_eligible(plan) : Eligibility{false, "outputs need events"};
  if (e.ok) {
    StepAccounting* accounting = nullptr;
    const std::vector<Observer*> obs = make_observers(ExecutorKind::kLockstep, &accounting);
    LockstepSim sim(plan, cost, obs, accounting);
    if (sim.run(&ex.result)) {
      ex.executor = ExecutorKind::kLockstep;
      return ex;
    }
    ex.why_event = "a collective could have reached the watchdog timeout (or a `when` failed)";
  } else {
    ex.why_event = e.why;
  }
  const Eligibility h = allow.hybrid ? hybrid_eligible(plan) : Eligibility{false, ex.why_event};
  if (h.ok) {
    StepAccounting* accounting = nullptr;
    const std::vector<Observer*> obs = make_observers(ExecutorKind::kHybrid, &accounting);
    HybridSim sim(plan, cost, obs, accounting);
    if (sim.run(&ex.result)) {
      ex.executor = ExecutorKind::kHybrid;
      ex.why_event.clear();
      return ex;
    }
    ex.why_event = "no uniform stretch the hybrid executor could hand over (or a `when` failed)";
  } else if (allow.hybrid) {
    ex.why_event = h.why;
  }
  StepAccounting* accounting = nullptr;
  const std::vector<Observer*> obs = make_observers(ExecutorKind::kEvent, &accounting);
  ex.result = run_simulation(plan, cost, obs);
  return ex;
}

// The mean step time of the jitter-free, fault-free plan (jitter_free()), in
// ns: from one representative rank when the plan is lockstep-eligible and all
// instances of each group cost the same (every rank then runs identically),
// else by simulating it (lockstep or event executor). `how` says which.
struct Baseline {
  double mean_step_ns = 0;
  const char* how = "";  // "analytic" | "lockstep" | "event"
};
Baseline baseline_step(const Plan& plan, const CostModel& cost);

}  // namespace fleetsim
