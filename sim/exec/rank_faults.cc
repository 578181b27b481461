// Absent and crashed ranks: what dies, who falls back to spinning, and when the
// launcher notices.
#include "sim/exec/rank_faults.h"

namespace fleetsim {

RankFaults::RankFaults(ExecContext& ctx, GpuStreams& gpu, Matcher& matcher) : ctx_(ctx), gpu_(gpu), matcher_(matcher) {}

void RankFaults::mark_absent() {
  for (int r : ctx_.plan.absent_ranks) {
    ctx_.mark_dead(r);  // never started: no process, no dump
    for (const Fault& f : ctx_.plan.scenario.faults)
      if (f.kind == FaultKind::kAbsent)
        for (Observer* o : ctx_.obs) o->on_fault(r, ctx_.now(), f);
  }
}

void RankFaults::crash(int r, int64_t step, const Fault& f) {
  ctx_.mark_dead(r);
  gpu_.kill(r, step);
  for (Observer* o : ctx_.obs) o->on_fault(r, ctx_.now(), f);
  // Peers already moving data with the dead rank fall back to spinning (their
  // completion events will find the dead member and not complete).
  matcher_.fall_back_to_spin(r);
  RunResult& res = ctx_.result;
  if (res.outcome == Outcome::kCompleted) {
    res.outcome = Outcome::kCrash;
    res.crash.rank = r;
    res.crash.step = step;
    res.crash.at = ctx_.now();
    res.crash.detected_at = ctx_.now() + ctx_.plan.scenario.job.crash_detect;
    ctx_.schedule(res.crash.detected_at.ns, Priority::kFault, kAbort);
  }
}

void RankFaults::backend_abort(int r, int64_t step) {
  static const Fault kBackendCrash = [] {
    Fault f;
    f.kind = FaultKind::kCrash;
    return f;
  }();
  crash(r, step, kBackendCrash);
}

}  // namespace fleetsim
