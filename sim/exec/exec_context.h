// What the parts of the event executor share: the plan, cost model and observers
// of the run, its clock and agenda (Scheduler), which ranks' processes are dead,
// the RunResult being built, and the stop flag. Per-rank CPU, GPU, matching,
// watchdog and fault state lives in the parts that own it, never here.
// RunResult's writers: the watchdog (outcome kHang, hang), rank_faults (outcome
// kCrash, crash), runtime_error (errors), the engine loop (everything else).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/engine.h"
#include "fleetsim/observer.h"
#include "fleetsim/plan.h"
#include "sim/core/scheduler.h"

namespace fleetsim {

// The event executor's events (Event::kind) and their payload.
enum EventKind : uint8_t {
  kCpuWake = 1,  // a: rank. A cpu op ended, or a store barrier released the rank.
  kGpuDone,      // a: rank, b: its GPU generation. A compute kernel ended.
  kCollDone,     // a: GroupKind, b: group instance. A collective's transfer ended.
  kP2pDone,      // a: p2p slot (sender * 2 + direction). A send/recv transfer ended.
  kTick,         // An observation sample (the only Priority::kObserve event).
  kWatchdog,     // b: watchdog generation. The watchdogs check their oldest work.
  kDumpAll,      // The monitor threads see another rank's dump signal.
  kAbort,        // The job is torn down (after a timeout's dump wait, or a crash).
  kNicError,     // a: index into Plan::nic_faults. The IB completion error surfaces.
  kGlooMismatch, // a: GroupKind, or kP2pGroup with b a p2p slot; b: group instance. gloo finds sizes differ.
};

// kGlooMismatch's `a` for a send/recv pair.
inline constexpr uint32_t kP2pGroup = 0xff;

class ExecContext {
 public:
  ExecContext(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers);

  const Plan& plan;
  const CostModel& cost;
  const std::vector<Observer*> obs;
  const int n;  // ranks
  Scheduler sched;
  RunResult result;
  bool stop = false;  // the job was aborted, or a runtime error voided the run

  SimTime now() const { return sched.now(); }
  void schedule(int64_t t, Priority p, EventKind k, uint32_t a = 0, uint32_t b = 0) {
    FLEETSIM_DCHECK((k == kTick) == (p == Priority::kObserve));
    Event e;
    e.time_ns = t;
    e.priority = p;
    e.kind = k;
    e.a = a;
    e.b = b;
    sched.schedule(e);
  }

  // Whether rank r's process is gone (crashed, or absent from the start). Its
  // CPU and GPU stop, its watchdog no longer fires, it never dumps.
  bool dead(int r) const { return dead_[static_cast<size_t>(r)] != 0; }
  // Only rank_faults kills ranks.
  void mark_dead(int r) { dead_[static_cast<size_t>(r)] = 1; }
  // Cache hint only: r's dead flag.
  void prefetch_dead(int r) const { __builtin_prefetch(&dead_[static_cast<size_t>(r)]); }

  // A runtime input error (e.g. a `when` dividing by zero) at op source or
  // expression `index`: the run is void; it stops here.
  void runtime_error(uint32_t index, bool is_source, const std::string& what);

 private:
  std::vector<uint8_t> dead_;  // per rank
};

}  // namespace fleetsim
