// The lockstep executor: for plans where nothing can interact between
// collectives, it advances every rank's clock op by op without events. A
// compute op adds the rank's sampled duration; a collective completes on every
// member at max(arrivals over its group instance) + its cost. Per-rank state is
// stored by field and sized once; the loop does not allocate. On eligible plans
// it produces the same steps, step times (to the nanosecond) and outcome as the
// event executor (FleetSim), but feeds observers only on_step_end_all (every
// rank's step end in one call), on_end and (once per step, for steps.csv's
// slowest rank) the last arrival's on_work_started; compute and collective
// waits go to a StepAccounting once per step instead of on_compute/on_transfer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetsim/engine.h"
#include "sim/exec/group_layout.h"
#include "sim/model/compute_time.h"

namespace fleetsim {

// Whether `plan` can run in lockstep, and if not, the first reason why not.
// Eligible: every op is compute, sync, or a collective on world/tp/dp/pp
// (allreduce, allgather, reducescatter, broadcast, reduce, alltoall, barrier);
// every `when` reads only `step` and `world_size` (so all ranks run the same
// ops); the only faults are compute-time ones (straggler, intermittent, pause,
// throttle). Not eligible: cpu, log, store_barrier, send/recv, rank-dependent
// `when`, stall, crash, skip, mismatch, absent, `collective_model: steps`
// (it times a collective from every member's arrival). At run time the executor also
// gives up (and the caller falls back) if a collective could have waited past
// the watchdog's timeout or a `when` divides by zero.
struct Eligibility {
  bool ok = false;
  std::string why;  // when !ok: e.g. "op 'log' (log) at scenario.yaml:12:5"
};
Eligibility lockstep_eligible(const Plan& plan);

class LockstepSim {
 public:
  // REQUIRES: lockstep_eligible(plan).ok; plan, cost, observers and accounting
  // (may be null) outlive the object.
  LockstepSim(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers,
              StepAccounting* accounting);

  // Runs to the end. Returns false (observers may have seen some steps) if the
  // run left the lockstep's domain; the caller must rerun with FleetSim.
  bool run(RunResult* out);

  // Bytes this executor reserved per rank (its own vectors and ComputeTime's).
  double bytes_per_rank() const;

 private:
  void compute(int64_t step, uint32_t op);
  void collective(int64_t step, uint32_t op);
  bool end_step(int64_t step);
  void report_ends(int64_t step);
  void account_step(int64_t step);

  const Plan& plan_;
  const CostModel& cost_;
  std::vector<Observer*> obs_;
  StepAccounting* accounting_;
  ComputeTime compute_time_;
  int n_ = 0;
  std::vector<int64_t> clock_;                   // per rank: when its GPU is free
  std::vector<GroupLayout> groups_;              // per GroupKind
  std::vector<std::vector<int64_t>> op_cost_;    // per plan op: cost per shape class
  std::vector<int64_t> min_end_;                 // ring: lowest rank end of recent steps
  int64_t max_end_ = 0;
  // The step's last arrival at a collective (lowest rank on ties), reported to
  // observers as that rank's work start at the end of the step (steps.csv's slowest_rank).
  Arrival last_arrival_;
  int64_t timeout_ns_ = -1;
  // The clocks' range, kept by every op that moves them (so no step scans for
  // it); a compute op keeps the high end only (low_known_ false until a
  // collective, or end_step's scan, sets the low end).
  ComputeTime::ClockRange range_{0, 0, 0};
  bool low_known_ = true;
  // Per rank, this step's compute and collective wait (ns): kept only with an
  // accounting. Stale: still last step's values, for the next op to overwrite.
  std::vector<int64_t> step_compute_, step_wait_;
  bool compute_stale_ = true, wait_stale_ = true;
};

}  // namespace fleetsim
