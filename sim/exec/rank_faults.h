// Faults that end a rank's process: `absent` ranks never start; `crash` kills a
// process at the start of a step (the IB error of a dead NIC kills the ranks it
// serves too). A dead rank's GPU stops, peers moving data with it fall back to
// spinning, and the launcher tears the job down job.crash_detect after the first
// crash. (A `stall` only stops the rank's CPU: cpu_stream applies it.)
// Owns nothing per rank: liveness is in ExecContext, written only here.
#pragma once

#include <cstdint>

#include "sim/exec/exec_context.h"
#include "sim/exec/gpu_stream.h"
#include "sim/exec/matching.h"

namespace fleetsim {

class RankFaults {
 public:
  RankFaults(ExecContext& ctx, GpuStreams& gpu, Matcher& matcher);

  // Before t = 0: absent ranks are dead from the start (they never dump either).
  void mark_absent();
  // Rank r's process dies now, during `step`, of fault `f`.
  void crash(int r, int64_t step, const Fault& f);
  // Rank r's process dies now, during `step`, of its backend's own failure
  // (job.backend: gloo); observers see it as a crash.
  void backend_abort(int r, int64_t step);

 private:
  ExecContext& ctx_;
  GpuStreams& gpu_;
  Matcher& matcher_;
};

}  // namespace fleetsim
