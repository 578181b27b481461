// The isolation-order walker: each step reads its evidence, notes what it saw, and
// the culprit step combines them. Steps follow docs/diagnose.md and docs/isolation-order.md;
// the culprit is the minority that diverges, never "everyone but rank 0".
#include "sim/diagnose/diagnose.h"

#include <algorithm>

#include "sim/diagnose/fr_analyzer.h"
#include "sim/diagnose/signals.h"
#include "sim/diagnose/walk_context.h"

namespace fleetsim::diagnose {
namespace {

void step_hang_or_slow(WalkContext& c) {
  const Record& rec = c.rec;
  Verdict v = Verdict::kHealthy;
  if (rec.summary && !rec.summary->outcome.empty()) {
    const Summary& s = *rec.summary;
    std::string t = "summary.json: outcome " + s.outcome;
    if (s.hang_step >= 0) t += " in step " + std::to_string(s.hang_step);
    if (s.hang_first_timeout_rank >= 0) {
      t += "; first watchdog on rank " + std::to_string(s.hang_first_timeout_rank) + " (pg " +
           s.hang_process_group + " seq " + std::to_string(s.hang_seq) + " " + s.hang_op + ")";
    }
    if (s.crash_rank >= 0) t += "; rank " + std::to_string(s.crash_rank) + " crashed";
    c.note(1, t);
    if (s.outcome != "completed") v = s.outcome == "crash" ? Verdict::kCrash : Verdict::kHang;
  } else if (!c.fr.timed_out.empty()) {
    const TimedOut& t = c.fr.timed_out.front();
    c.note(1, "FR: " + std::to_string(c.fr.timed_out.size()) +
                  " non-completed entries past their timeout (first: rank " + std::to_string(t.rank) +
                  " pg " + t.pg_name + " seq " + std::to_string(t.seq) + " " + t.op + ", " + t.why +
                  ")");
    v = Verdict::kHang;
  } else if (!c.watchdogs.empty()) {
    c.note(1, c.log_name() + ": " + std::to_string(c.watchdogs.size()) + " watchdog timeout line(s)");
    v = Verdict::kHang;
  } else if (c.fingerprint) {
    c.note(1, c.log_name() + ": TORCH_DISTRIBUTED_DEBUG=DETAIL stopped the job on a collective mismatch that would have hung");
    v = Verdict::kHang;
  } else if (c.has_mismatch()) {
    c.note(1, "FR: matched collectives differ, and such collectives never complete");
    v = Verdict::kHang;
  } else if (!c.fr.waits.roots.empty()) {
    c.note(1, "FR: " + std::to_string(c.fr.waits.waiting) + " rank(s) hold unfinished collectives that wait on peers " +
                  "which never issued them or left no dump (a dump is taken when a watchdog fires, so pending "
                  "work that nobody can finish is the hang)");
    v = Verdict::kHang;
  } else if (c.util.progress_stopped && c.util.kind != UtilKind::kBusy) {
    c.note(1, "telemetry: every rank's step stopped changing at " +
                  std::to_string(c.util.window_start_s) + " s");
    v = Verdict::kHang;
  }
  if (!stopped(v)) v = c.slow_evidence() ? Verdict::kSlow : Verdict::kHealthy;
  if (!rec.steps.empty()) c.note(1, c.trend_text());
  if (c.rec.summary == std::nullopt && !stopped(v) && c.rec.dumps.size() > 0) {
    c.note(1, "FR: no entry is past its timeout and none is retired unfinished");
  }
  c.d.verdict = v;
}

void step_utilization(WalkContext& c) {
  c.note(2, c.util.kind == UtilKind::kNoData ? "no telemetry.csv: skipped" : c.util.text);
}

void step_watchdog(WalkContext& c) {
  if (c.rec.log_lines.empty()) {
    c.note(3, "no job.log: skipped");
  } else if (c.watchdogs.empty()) {
    c.note(3, c.log_name() + ": no watchdog timeout line");
  } else {
    c.note_watchdogs();
  }
  const LogExtras& x = c.log_extras;
  if (!x.heartbeat.empty()) {
    c.note(3, c.log_name() + ": " + std::to_string(x.heartbeat.size()) + " heartbeat-monitor line(s) (the watchdog thread "
              "itself stuck, or a dump signal from a peer), first: " + x.heartbeat.front().substr(0, 160));
  }
  if (!x.nccl_warn.empty() && c.net_errors.empty()) {
    c.note(3, c.log_name() + ": " + std::to_string(x.nccl_warn.size()) + " NCCL WARN line(s), first: " +
              x.nccl_warn.front().substr(0, 160));
  }
  for (size_t i = 0; i < x.ras.size() && i < 4; ++i) c.note(3, "ncclras: " + x.ras[i].substr(0, 160));
  if (!c.crashed.empty()) {
    c.note(3, c.log_name() + ": rank(s) " + format_ranks(c.crashed) + " crashed or exited before any timeout");
  }
  c.note_pg_status();
}

void step_alignment(WalkContext& c) {
  if (c.rec.dumps.empty()) {
    c.note(4, "no flight-recorder dumps: skipped");
    return;
  }
  c.note(4, std::to_string(c.rec.dumps.size()) + " dumps, " + std::to_string(c.fr.groups) +
                " group(s) aligned by (process group, collective_seq_id)");
  if (!c.fr.missing_dumps.empty()) {
    c.note(4, "no dump from rank(s) " + format_ranks(c.fr.missing_dumps) + " (dead, or not collected)");
  }
  int shown = 0;
  for (const Divergence& d : c.fr.divergences) {
    if (!c.counts(d)) continue;
    if (shown++ == 3) break;
    c.note(4, c.describe(d));
  }
  if (shown == 0) c.note(4, "every group agrees at every sequence number its members hold");
  if (!c.rec.summary) c.note_waits();
  if (!c.model.text.empty()) c.note(4, c.model.text);
}

}  // namespace

Diagnosis diagnose_record(const Record& record, const HealthyModel* model) {
  WalkContext c(record, model);
  PhaseTimer t("walk and blame");
  step_hang_or_slow(c);
  step_utilization(c);
  step_watchdog(c);
  step_alignment(c);
  if (stopped(c.d.verdict)) {
    c.blame_hang();
  } else if (c.d.verdict == Verdict::kSlow) {
    c.blame_slow();
  } else {
    c.note(5, "healthy: nobody to blame");
  }
  c.d.blocked_op = c.blocked_op();
  c.d.advice = c.advice();
  c.note(6, c.d.advice.substr(0, c.d.advice.find('\n')));
  std::sort(c.d.culprit_ranks.begin(), c.d.culprit_ranks.end());
  std::stable_sort(c.d.evidence.begin(), c.d.evidence.end(),
                   [](const Evidence& a, const Evidence& b) { return a.step < b.step; });
  return c.d;
}

Result<Diagnosis> diagnose_dir(const std::string& dir) {
  Result<Record> rec = [&] {
    PhaseTimer t("read");
    return read_record(dir);
  }();
  if (!rec) return rec.errors();
  const std::unique_ptr<HealthyModel> model = recorded_model(*rec);
  PhaseTimer t("diagnosis (all after the read)");
  return diagnose_record(*rec, model.get());
}

}  // namespace fleetsim::diagnose
