// The event executor (FleetSim): runs a Plan as discrete events in integer
// nanoseconds and reports to observers. Private to sim/; the public entry point
// is run_simulation() in fleetsim/engine.h. This is the engine loop: it owns the
// parts (CPU streams, GPU streams, matching, watchdog, fabric and rank faults),
// pops one event at a time and hands it to the part it concerns. Like a SimPy
// Environment: step() processes one event, peek() says when the next one is,
// run_until() runs up to a time. Per-rank state is sized once in the
// constructor; the loop allocates only to format a log line or a runtime error.
#pragma once

#include <vector>

#include "fleetsim/engine.h"
#include "sim/exec/cpu_stream.h"
#include "sim/exec/exec_context.h"
#include "sim/exec/fabric_faults.h"
#include "sim/exec/gpu_stream.h"
#include "sim/exec/handover.h"
#include "sim/exec/matching.h"
#include "sim/exec/rank_faults.h"
#include "sim/exec/watchdog.h"

namespace fleetsim {

class FleetSim {
 public:
  // REQUIRES: plan from compile_plan(); plan, cost and observers outlive the object.
  FleetSim(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers);

  // t = 0: absent ranks never start, every other rank starts step 1 and runs as
  // far as it can, the first observation tick is scheduled. Called once, first.
  void start();
  // Instead of start(): takes up a run another executor ran up to some time
  // (the hybrid's uniform stretch, hybrid_executor.h) in the state `h`.
  // Its launch queues are taken from h.queue (left empty).
  void resume(Handover& h);
  // The other way (the hybrid taking a run back): whether the run is quiet at
  // the next event's time (nothing failed, every rank live, its CPU blocked on
  // its full launch queue, its GPU running the head, every queued item of step
  // `min_step` or later), and if so its state in `h` (no `pending`: h->agenda
  // counts the pending events, for the caller to match). `*probe`: the rank to
  // look at first; set to the one that was not quiet.
  bool hand_back(Handover* h, int64_t min_step, int* probe);
  // Processes the next event. False (and nothing happens) once the run is over:
  // every rank finished, the job was aborted, or nothing that could move is left.
  bool step();
  // When the next event happens; SimTime::never() once the run is over.
  SimTime peek() const;
  // Processes every event up to and including time t (or until the run is over).
  void run_until(SimTime t);
  // Completes the result (deadlock, hang step, steps completed) and tells
  // observers the run ended. Called once, last.
  RunResult finish();
  // start(), every event, finish().
  RunResult run();

 private:
  bool over() const;
  void dispatch(const Event& e);
  void advance(int r);
  const Event* rank_event_next() const;
  void nic_error(int k);
  void gloo_mismatch(uint32_t group, uint32_t instance);
  int64_t stuck_step(int r);

  ExecContext ctx_;
  GpuStreams gpu_;
  FabricFaults fabric_;
  Watchdog watchdog_;
  Matcher matcher_;
  RankFaults faults_;
  CpuStreams cpu_;
  bool all_done_ = false;  // every rank finished the job
  std::vector<int> gloo_members_;      // scratch of gloo_mismatch
  std::vector<int64_t> gloo_bytes_;    // scratch of gloo_mismatch
};

}  // namespace fleetsim
