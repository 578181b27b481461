// Step 5 and 6 of the isolation order: who is to blame, and what to do about it.
// The culprit is the minority at the first divergent (group, seq); a rank that
// lacks an op is told apart as crashed, stalled (idle, no later work) or skipping.
#include <algorithm>
#include <cstdio>
#include <set>

#include "sim/diagnose/walk_context.h"

namespace fleetsim::diagnose {
namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

Cause WalkContext::classify_absent(const Divergence& div) const {
  const std::vector<int>& odd = div.minority;
  for (int r : odd) {
    if (contains(crashed, r) || (rec.summary && rec.summary->crash_rank == r)) return Cause::kRankCrashed;
  }
  if (div.p2p) {
    // A pair's half that was never posted: the rank is alive if it enqueued work
    // after its peer's unmatched op (it went on without it), idle or not.
    bool later = true;
    for (int r : odd) {
      auto it = fr.last_enqueue_ns.find(r);
      later = later && it != fr.last_enqueue_ns.end() && it->second > div.time_ns;
    }
    return later ? Cause::kMissingCollective : Cause::kRankStalled;
  }
  bool finished = !odd.empty();
  for (int r : odd) finished = finished && finished_its_steps(r, div.pg_name);
  if (finished) return Cause::kMissingCollective;
  bool alive = true;
  for (int r : odd) {
    auto it = fr.last_enqueue_ns.find(r);
    const bool later_work = it != fr.last_enqueue_ns.end() && it->second > div.time_ns;
    if (!later_work || contains(util.idle_ranks, r)) alive = false;
  }
  return alive ? Cause::kMissingCollective : Cause::kRankStalled;
}

// A rank that ran its whole program and stopped, one collective short on `pg`: every
// entry it recorded completed, it enqueued fewer on `pg` than a peer did, and its last
// entry is in the run's final step. It skipped a collective; it did not stall.
bool WalkContext::finished_its_steps(int rank, const std::string& pg) const {
  auto it = rec.dumps.find(rank);
  if (it == rec.dumps.end() || it->second.entries.empty() || !rec.summary || rec.summary->steps_planned <= 0) {
    return false;
  }
  const FrDump& dump = it->second;
  for (const FrEntry& e : dump.entries) {
    if (e.state() != "completed") return false;
  }
  if (dump.entries.back().step() != rec.summary->steps_planned) return false;
  auto own = dump.status.find(pg);
  const FrGroup* g = group_config(dump, pg);
  if (own == dump.status.end() || !g) return false;
  for (int peer : g->ranks) {
    auto pd = rec.dumps.find(peer);
    if (peer == rank || pd == rec.dumps.end()) continue;
    auto ps = pd->second.status.find(pg);
    if (ps != pd->second.status.end() && ps->second.last_enqueued > own->second.last_enqueued) return true;
  }
  return false;
}

void WalkContext::blame_divergence(const Divergence& div) {
  blamed_ = div;
  d.culprit_ranks = div.minority;
  d.pg_name = div.pg_name;
  d.pg_desc = div.pg_desc;
  (div.p2p ? d.p2p_seq_id : d.collective_seq_id) = div.seq;
  d.op = div.partner_op.empty() ? div.op : div.partner_op;
  d.op_name = div.partner_op.empty() ? div.op_name : "";
  when_ = div.when;
  if (div.kind != DivergenceKind::kPresence) {
    d.cause = div.shift > 0   ? Cause::kExtraCollective
              : div.shift < 0 ? Cause::kMissingCollective
                              : Cause::kMismatchedCollective;
    expected_ = div.expected;
    found_ = div.found;
  } else {
    d.cause = div.minority_has_entry ? Cause::kExtraCollective : classify_absent(div);
  }
  std::string t = div.p2p ? ranks_text(div.minority) + " is the side of the pair that differs from its sibling "
                            "pairs at pg " + div.pg_name + " p2p_seq_id " + std::to_string(div.seq) + " -> " +
                            std::string(to_string(d.cause))
                          : ranks_text(div.minority) + " is the minority at pg " + div.pg_name + " seq " +
                                std::to_string(div.seq) + " (" + std::to_string(div.minority.size()) + " of " +
                                std::to_string(div.minority.size() + div.majority.size()) +
                                " compared) -> " + std::string(to_string(d.cause));
  if (d.cause == Cause::kRankStalled) t += ": no later work from it, GPU idle or unknown";
  if (d.cause == Cause::kMissingCollective && div.kind == DivergenceKind::kPresence) {
    bool finished = true;
    for (int r : div.minority) finished = finished && finished_its_steps(r, div.pg_name);
    t += finished ? ": it finished all its steps with every entry completed and enqueued fewer on pg " +
                        div.pg_name + " than its peers (its later ops matched theirs one seq early)"
                  : ": it is alive (it enqueued later work elsewhere)";
  }
  note(5, t);
  if (!div.settled_by.empty()) {
    note(5, "one rank against one: the counts cannot say which side is odd; " + div.settled_by);
  } else if (!div.p2p) {
    note(5, "blame goes to the minority whichever dump is read first; a first-rank reference "
            "(torchfrtrace) would blame the " + std::to_string(div.majority.size()) + " others");
  }
}

bool WalkContext::blame_without_divergence() {
  std::vector<int> dead = fr.missing_dumps;
  if (rec.summary && rec.summary->crash_rank >= 0) dead.push_back(rec.summary->crash_rank);
  dead.insert(dead.end(), crashed.begin(), crashed.end());
  std::sort(dead.begin(), dead.end());
  dead.erase(std::unique(dead.begin(), dead.end()), dead.end());
  if (!dead.empty()) {
    d.cause = Cause::kRankCrashed;
    d.culprit_ranks = dead;
    note(5, ranks_text(dead) + " crashed or left no dump -> rank_crashed");
    return true;
  }
  if (util.kind == UtilKind::kSomeIdle) {
    d.cause = Cause::kRankStalled;
    d.culprit_ranks = util.idle_ranks;
    note(5, ranks_text(util.idle_ranks) + " idle while the others spin -> rank_stalled");
    return true;
  }
  return false;
}

// NCCL's network error in the log names the ranks whose NIC or link failed: their
// processes went down on it, and the survivors' stuck collectives are consequences.
bool WalkContext::blame_network_error() {
  if (net_errors.empty()) return false;
  d.cause = Cause::kNetworkError;
  d.culprit_ranks = net_errors;
  size_t line_no = 0;
  for (size_t i = 0; i < rec.log_lines.size() && line_no == 0; ++i) {
    if (rec.log_lines[i].find("Got completion from peer") != std::string::npos) line_no = i + 1;
  }
  note(5, "job.log" + (line_no ? " line " + std::to_string(line_no) : std::string()) + ": " +
              ranks_text(net_errors) + " got an IB completion error (status=12: retry count exceeded) and "
              "ncclRemoteError -> network_error: the NIC or link under them failed; NCCL does not fail over");
  return true;
}

// summary.json's `outcome: crash` is authoritative: the crashed rank left no dump,
// and what the survivors' dumps show are consequences.
bool WalkContext::blame_crash_from_summary() {
  if (!rec.summary || rec.summary->outcome != "crash" || rec.summary->crash_rank < 0) return false;
  d.cause = Cause::kRankCrashed;
  d.culprit_ranks = {rec.summary->crash_rank};
  note(5, "summary.json: outcome crash, rank " + std::to_string(rec.summary->crash_rank) + " died in step " +
              std::to_string(rec.summary->crash_step) + " -> rank_crashed; the others' stuck collectives are consequences");
  return true;
}

// Whether any member of a group that holds `rank` completed a collective on it.
bool WalkContext::group_progressed(int rank) const {
  for (const auto& [r, dump] : rec.dumps) {
    for (const std::string& name : group_names(dump)) {
      const FrGroup* g = group_config(dump, name);
      auto st = dump.status.find(name);
      if (g && contains(g->ranks, rank) && st != dump.status.end() && st->second.last_completed >= 0) return true;
    }
  }
  return false;
}

// Ranks that never started: no dump, not reported crashed, never seen in telemetry
// or the log, and no group they belong to ever completed a collective.
std::vector<int> WalkContext::absent_ranks() const {
  std::vector<int> out;
  for (int r : fr.missing_dumps) {
    if (contains(crashed, r) || (rec.summary && rec.summary->crash_rank == r) || group_progressed(r)) continue;
    bool seen = false;
    for (const TelemetryRow& t : rec.telemetry) seen |= t.rank == r && (t.gpu_util > 0 || t.nic_tx_bytes > 0);
    for (const std::string& l : rec.log_lines) seen |= rank_of_line(l) == r;
    if (!seen) out.push_back(r);
  }
  return out;
}

bool WalkContext::blame_absent() {
  const std::vector<int> absent = absent_ranks();
  if (absent.empty()) return false;
  d.cause = Cause::kRanksAbsent;
  d.culprit_ranks = absent;
  note(5, ranks_text(absent) + " left no dump, no log line and no telemetry, and no group holding them ever "
          "completed a collective -> ranks_absent: the job started without its full gang");
  return true;
}

// Every GPU idle with progress stopped: the ranks wait on the CPU (a store barrier),
// so no NCCL kernel runs and no watchdog can fire. The culprit is a rank whose CPU
// entered an op and never left.
bool WalkContext::blame_cpu_blocked() {
  const bool all_idle = util.kind == UtilKind::kAllIdle;
  const bool deadlock = rec.summary && rec.summary->outcome == "deadlock";
  if (!all_idle && !(deadlock && util.kind == UtilKind::kNoData && watchdogs.empty())) return false;
  d.cause = Cause::kCpuBlocked;
  for (const auto& [r, st] : rec.cpu_stuck) {
    d.culprit_ranks.push_back(r);
    char buf[160];
    std::snprintf(buf, sizeof buf, "trace.json: rank %d's CPU entered %s at %.3f s and never returned", r,
                  st.where.c_str(), st.at_s);
    note(5, buf);
  }
  note(5, "every GPU idle and no collective pending -> cpu_blocked: all ranks wait on CPU-side work" +
              std::string(d.culprit_ranks.empty() ? "; py-spy dump every rank to find the one that is not waiting"
                                                  : ", behind " + ranks_text(d.culprit_ranks)));
  return true;
}

void WalkContext::blame_hang() {
  if (blame_network_error() || blame_crash_from_summary() || blame_absent() || blame_cpu_blocked()) {
    if (rec.summary && rec.summary->hang_seq >= 0) {
      d.pg_name = rec.summary->hang_process_group;
      d.collective_seq_id = rec.summary->hang_seq;
      d.op = rec.summary->hang_op;
    }
    return;
  }
  const Divergence* best = nullptr;
  for (const Divergence& div : fr.divergences) {
    if (counts(div)) {
      best = &div;
      break;
    }
  }
  // A rank missing from a collective because it is blocked in a send or recv whose
  // partner never came is a victim: follow the chain to the rank that never posted it.
  if (best && !best->p2p && best->kind == DivergenceKind::kPresence && !best->minority_has_entry) {
    for (const Divergence& div : fr.divergences) {
      if (div.p2p && !div.minority_has_entry && contains(best->minority, div.majority[0])) {
        note(5, "rank " + std::to_string(div.majority[0]) + " is missing from pg " + best->pg_name + " seq " +
                    std::to_string(best->seq) + " because it is blocked in " + div.op + " (p2p_seq_id " +
                    std::to_string(div.seq) + "), whose partner rank " + std::to_string(div.minority[0]) +
                    " never posted");
        best = &div;
        break;
      }
    }
  }
  if (blame_wait_roots(best)) {
  } else if (best) {
    blame_divergence(*best);
  } else if (!blame_log_desync() && !blame_without_divergence() && !blame_log_silent()) {
    d.cause = Cause::kUnknown;
    note(5, "no divergence, no idle or dead rank: a fabric stall or a desync the evidence cannot show");
  }
  const bool summary_crash = rec.summary && rec.summary->crash_rank >= 0;
  if (summary_crash && !contains(d.culprit_ranks, rec.summary->crash_rank)) {
    d.cause = Cause::kRankCrashed;
    d.culprit_ranks = {rec.summary->crash_rank};
    note(5, "summary.json names rank " + std::to_string(rec.summary->crash_rank) + " as crashed");
  }
  if (d.collective_seq_id < 0 && d.p2p_seq_id < 0 && rec.summary && rec.summary->hang_seq >= 0) {
    d.pg_name = rec.summary->hang_process_group;
    d.collective_seq_id = rec.summary->hang_seq;
    d.op = rec.summary->hang_op;
  }
}

// Real dumps (no summary.json): the ranks whose absence explains every wait, when
// they are the minority where they are waited on. A mismatch is a definite bug and
// wins; a divergence that names the same ranks keeps its finer classification.
bool WalkContext::blame_wait_roots(const Divergence* best) {
  if (rec.summary || (best && best->kind != DivergenceKind::kPresence)) return false;
  std::vector<const WaitRoot*> roots;
  for (const WaitRoot& r : fr.waits.roots) {
    if (r.minority) roots.push_back(&r);
  }
  if (roots.empty()) return false;
  std::vector<int> ranks;
  for (const WaitRoot* r : roots) ranks.push_back(r->rank);
  if (best && !best->p2p && best->minority == ranks) return false;
  const WaitRoot& first = *roots.front();
  bool dead = true, idle = true, skipped = true;
  for (const WaitRoot* r : roots) {
    dead = dead && r->kind == WaitKind::kNoDump;
    idle = idle && r->kind == WaitKind::kNeverIssued;
    skipped = skipped && r->kind == WaitKind::kSkipped;
  }
  d.cause = dead ? Cause::kRankCrashed : idle ? Cause::kRankStalled : skipped ? Cause::kMissingCollective : Cause::kUnknown;
  d.culprit_ranks = ranks;
  d.pg_name = first.pg_name;
  d.pg_desc = first.pg_desc;
  (first.p2p ? d.p2p_seq_id : d.collective_seq_id) = first.seq;
  d.op = first.op;
  note(5, ranks_text(ranks) + " " + to_string(first.kind) + " at pg " + first.pg_name +
              (first.p2p ? " (the partner of " + first.op + " p2p_seq_id " : " seq ") + std::to_string(first.seq) +
              (first.p2p ? ")" : "") + ", and " + std::to_string(fr.waits.waiting) +
              " rank(s) wait on it: its absence explains every wait -> " + std::string(to_string(d.cause)) +
              (dead ? ": its process died or its dump was lost"
                    : idle ? ": nothing of its own is pending, so its CPU is stuck before issuing (the GIL, a data "
                             "loader, a Python exception), not its GPU"
                    : skipped ? ": it is alive and went on to later work, which its peers, still waiting for the "
                                "skipped op, never reach (a wait-for cycle; its wait began last)"
                           : ": it issued the collective and never finished it (a GPU error, a dead NIC; check XIDs "
                             "and the NIC's port state)"));
  return true;
}

// No flight-recorder divergence to go by: the watchdog records alone. Ranks of one
// group that timed out at different work name the desync and its sequence number.
bool WalkContext::blame_log_desync() {
  if (!log_desync) return false;
  const LogDesync& x = *log_desync;
  d.cause = x.cause;
  d.culprit_ranks = x.culprits;
  d.pg_name = x.pg;
  d.pg_desc = x.pg_desc;
  d.collective_seq_id = x.seq;
  d.op = profiling_name_of_op_type(x.op);
  found_ = x.found;
  expected_ = x.expected;
  note(5, log_name() + ": " + x.implies);
  if (x.tie) {
    note(5, "as many ranks on each side: the side holding the lowest rank is named (rank-conditional code is "
            "nearly always `if rank == 0`); low confidence");
  }
  return true;
}

// Every timed-out rank waits at the same work, and ranks the log shows alive timed out
// at nothing: nothing of theirs was pending, so they never issued the collective.
bool WalkContext::blame_log_silent() {
  if (watchdogs.size() < 2) return false;
  // The job's ranks: those the log names, and every rank below the highest that timed
  // out (ranks count from 0). Only on the default group, where [Rank N] is global.
  std::set<int> known(log_extras.ranks_seen.begin(), log_extras.ranks_seen.end());
  std::set<int> timed_out;
  for (const WatchdogLine& w : watchdogs) {
    const bool world = w.pg.empty() || w.pg == "0" || w.pg_desc == "default_pg";
    if (!world || w.rank < 0) return false;
    timed_out.insert(w.rank);
  }
  for (int r = 0; r < *timed_out.rbegin(); ++r) known.insert(r);
  std::vector<int> silent;
  for (int r : known) {
    if (!timed_out.count(r)) silent.push_back(r);
  }
  if (silent.empty()) return false;
  const WatchdogLine& w = watchdogs.front();
  d.cause = Cause::kRankStalled;
  d.culprit_ranks = silent;
  d.pg_name = w.pg;
  d.pg_desc = w.pg_desc;
  d.collective_seq_id = w.seq;
  d.op = profiling_name_of_op_type(w.op_type);
  note(5, log_name() + ": " + ranks_text(silent) + " of the job has no watchdog record, while the others time out at " +
              "SeqNum=" + std::to_string(w.seq) + " " + w.op_type + ": nothing of theirs was pending, so they never "
              "issued it (stuck on the CPU: the GIL, a data loader, a Python exception) -> rank_stalled");
  return true;
}

void WalkContext::blame_model_slow_link() {
  const ModelSlowLink& m = *model.slow;
  // A slow group whose members all sit on one node moves its data over NVLink only:
  // no NIC or cable can be at fault (the record's model says how many GPUs a node has).
  bool one_node = rec.model && rec.model->gpus_per_node > 0 && !m.all_slow;
  for (const std::vector<int>& members : m.slow)
    for (int r : members) one_node = one_node && r / rec.model->gpus_per_node == members.front() / rec.model->gpus_per_node;
  d.cause = one_node ? Cause::kNvlinkDegraded : Cause::kSlowLink;
  d.pg_name = m.pg_name;
  d.pg_desc = m.pg_desc;
  d.op_name = m.op_name;
  if (!m.all_slow) {
    for (const std::vector<int>& members : m.slow) {
      d.culprit_ranks.insert(d.culprit_ranks.end(), members.begin(), members.end());
    }
  }
  char buf[240];
  std::snprintf(buf, sizeof buf, "pg %s (%s) op %s: %.2f ms from the last arrival to completion, the model "
                "expects %.2f ms on a healthy fabric (%.0f%% of the expected bandwidth)",
                m.pg_name.c_str(), m.pg_desc.c_str(), m.op_name.c_str(), m.achieved_ms, m.expected_ms,
                100.0 * m.expected_ms / m.achieved_ms);
  note(5, buf);
  note(5, m.all_slow ? "every " + m.pg_desc + " group (" + std::to_string(m.instances) + ") is slow: timing alone "
                       "cannot localize the link, as every group crosses it -> slow_link, no culprit rank"
                     : std::to_string(m.slow.size()) + " of " + std::to_string(m.instances) + " " + m.pg_desc +
                           " groups slow, ranks " + format_ranks(d.culprit_ranks) +
                           (one_node ? ", each within one node: only NVLink carries its data -> nvlink_degraded"
                                     : " -> slow_link"));
}

void WalkContext::blame_window() {
  d.cause = Cause::kStraggler;
  d.culprit_ranks = window_who.ranks;
  char buf[320];
  std::snprintf(buf, sizeof buf, "steps %lld-%lld: %s -> straggler%s for the window",
                static_cast<long long>(window->first_step), static_cast<long long>(window->last_step),
                (window_who.basis == "telemetry"
                     ? "ranks " + format_ranks(d.culprit_ranks) +
                           " have the busiest tensor pipes against their own baseline (longest compute; the "
                           "others wait in NCCL)"
                     : "ranks " + format_ranks(d.culprit_ranks) + " finish last far more often than chance")
                    .c_str(),
                d.culprit_ranks.size() > 1 ? "s" : "");
  note(5, buf);
  if (d.culprit_ranks.size() > 1) {
    note(5, "several ranks slow together for a while: a node-level cause (thermal or power capping, a "
            "clock drop, a co-located job) more likely than one bad GPU");
  }
}

void WalkContext::blame_rotating() {
  d.cause = Cause::kRotatingStraggler;
  char buf[320];
  std::snprintf(buf, sizeof buf, "steps.csv: the slowest rank of the %d slow steps is one of %d different ranks, "
                "none more than %d times -> rotating_straggler: a transient stall that moves, each costing the "
                "whole job about %.0f ms",
                rotating->spikes, rotating->distinct_ranks, rotating->max_per_rank,
                1000.0 * (rotating->spike_median_s - rotating->fast_s));
  note(5, buf);
}

void WalkContext::blame_slow() {
  if (model.slow) {
    blame_model_slow_link();
  } else if (slow_group) {
    d.cause = Cause::kSlowLink;
    d.culprit_ranks = slow_group->members;
    d.pg_name = slow_group->pg_name;
    d.pg_desc = slow_group->pg_desc;
    char buf[200];
    std::snprintf(buf, sizeof buf, "pg %s members %s reach %.1f GB/s bus bandwidth, siblings %.1f GB/s",
                  slow_group->pg_name.c_str(), format_ranks(slow_group->members).c_str(),
                  slow_group->busbw_gbps, slow_group->sibling_busbw_gbps);
    note(5, std::string(buf) + " -> slow_link");
  } else if (late) {
    d.cause = Cause::kStraggler;
    d.culprit_ranks = {late->rank};
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "FR: rank %d starts its collectives last at %d of %d seqs; the others wait %.1f ms "
                  "on average -> straggler",
                  late->rank, late->late_count, late->seq_count, late->mean_lag_ms);
    note(5, buf);
  } else if (window && !window_who.ranks.empty()) {
    blame_window();
  } else if (rotating) {
    blame_rotating();
  } else if (util.heavy_rank >= 0) {
    d.cause = Cause::kStraggler;
    d.culprit_ranks = {util.heavy_rank};
    note(5, "telemetry: rank " + std::to_string(util.heavy_rank) +
                " has the busiest tensor pipe (longest compute) -> straggler");
  } else if (trend.slowest_rank >= 0 && trend.slowest_count * 3 >= trend.late_steps * 2) {
    d.cause = Cause::kStraggler;
    d.culprit_ranks = {trend.slowest_rank};
    note(5, "steps.csv: rank " + std::to_string(trend.slowest_rank) + " is the slowest rank in " +
                std::to_string(trend.slowest_count) + " of the last " + std::to_string(trend.late_steps) +
                " steps -> straggler");
  } else {
    d.cause = Cause::kUnknown;
    note(5, "slower, but no single rank or group stands out");
  }
}

}  // namespace fleetsim::diagnose
