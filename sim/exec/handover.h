// The state the hybrid executor hands to the event executor at the end of a
// uniform stretch: what FleetSim would hold had it run every event before the
// handover time itself (docs/engine.md, "The hybrid executor"). Every rank's
// CPU is blocked on its full launch queue, its GPU runs the queue's head, and
// nothing has failed; the events still pending are listed in the order they
// go on the agenda. FleetSim::hand_back fills the same struct the other way,
// when the hybrid takes a quiet run back to lockstep speed.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/event_queue.h"
#include "sim/exec/exec_context.h"
#include "sim/exec/gpu_stream.h"

namespace fleetsim {

struct Handover {
  struct Rank {
    int64_t finished_step = 0;  // the GPU's last finished step
    int64_t cpu_step = 1;       // the step the CPU is in
    uint32_t cpu_pc = 0;        // the instruction it is blocked at
    uint32_t records = 0;       // collectives it has issued
    uint32_t seq[kGroupKinds] = {};  // of which on each group kind
  };
  std::vector<Rank> ranks;
  uint32_t qlen = 0;            // items queued on every rank
  std::vector<GpuItem> queue;   // ranks x qlen, head first; each head is running
  std::vector<Event> pending;   // the agenda, in insertion order
  int64_t watchdog_at = -1;     // the pending watchdog check, -1 if none
  uint32_t watchdog_gen = 0;
  uint64_t events = 0;          // events the event executor would have processed
  // FleetSim::hand_back only (the other way): when the state holds (the next
  // event's time) and how many events are pending then (`pending` stays empty).
  int64_t at = 0;
  uint64_t agenda = 0;
};

}  // namespace fleetsim
