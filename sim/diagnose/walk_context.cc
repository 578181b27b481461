// Evidence description and blame for the isolation-order walker (see walk_context.h).
#include "sim/diagnose/walk_context.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <thread>
#include <tuple>

namespace fleetsim::diagnose {
namespace {

// Process-group names in numeric order where both are numbers ("5" before "10").
struct PgOrder {
  bool operator()(const std::string& a, const std::string& b) const {
    const auto digits = [](const std::string& x) {
      return !x.empty() && std::all_of(x.begin(), x.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    };
    if (a.size() != b.size() && digits(a) && digits(b)) return a.size() < b.size();
    return a < b;
  }
};

// "5, 6, 7" or "5, 6, 7, 8, 9, 10 and 6 more".
std::string pg_list(const std::vector<std::string>& pgs) {
  std::string t;
  for (size_t i = 0; i < pgs.size() && i < 6; ++i) t += (i ? ", " : "") + pgs[i];
  if (pgs.size() > 6) t += " and " + std::to_string(pgs.size() - 6) + " more";
  return t;
}

}  // namespace
std::string ranks_text(const std::vector<int>& r) {
  return r.size() == 1 ? "rank " + std::to_string(r[0]) : "ranks " + format_ranks(r);
}

WalkContext::WalkContext(const Record& r, const HealthyModel* healthy) : rec(r) {
  {
    PhaseTimer t("model check");
    model = check_against_model(rec, healthy);
  }
  // The timing evidence (its own alignment), then the wait graph, on a second thread
  // while the divergence search runs: each reads the dumps only, so the answers are
  // those of the three in turn. The split evens the two threads' work (about 3 s each
  // at 16,384 ranks, where the search alone was 4 s before the wait graph moved over).
  TimingFindings timing;
  WaitGraph waits;
  {
    // A jthread: were the search to throw (memory), the thread is joined, not left running.
    std::jthread timing_thread([&] {
      timing = find_timing(rec.dumps, !model.loaded);
      PhaseTimer t("wait graph");
      waits = build_wait_graph(rec.dumps);
    });
    fr = analyze_fr(rec.dumps, /*waits=*/false);
    timing_thread.join();
  }
  fr.waits = std::move(waits);
  util = read_utilization(rec.telemetry);
  watchdogs = find_watchdog_lines(rec.log_lines);
  log_desync = find_log_desync(watchdogs);
  if (!log_desync) {
    fingerprint = find_fingerprint_mismatch(rec.log_lines);
    log_desync = fingerprint;
  }
  log_extras = find_log_extras(rec.log_lines);
  crashed = find_crashed_ranks(rec.log_lines);
  net_errors = find_network_error_ranks(rec.log_lines);
  trend = read_step_trend(rec.steps);
  window = find_slow_window(rec.steps);
  if (window) window_who = window_culprits(*window, rec.steps, rec.telemetry, rank_count());
  rotating = find_rotating_stalls(rec.steps);
  late = timing.late;
  slow_group = std::move(timing.slow_group);
  settle_pairs();
}

bool WalkContext::has_mismatch() const {
  for (const Divergence& div : fr.divergences) {
    if (div.kind != DivergenceKind::kPresence && !div.tie) return true;
  }
  return false;
}

bool WalkContext::slow_evidence() const {
  return trend.slow || late.has_value() || slow_group.has_value() || model.slow.has_value() ||
         util.heavy_rank >= 0 || window.has_value() || rotating.has_value();
}

int WalkContext::rank_count() const {
  if (rec.summary && rec.summary->ranks > 0) return rec.summary->ranks;
  int n = static_cast<int>(rec.dumps.size());
  for (const StepRow& s : rec.steps) n = std::max(n, s.slowest_rank + 1);
  return n;
}

std::string WalkContext::trend_text() const {
  if (rec.steps.size() < 6) {
    return "steps.csv: " + std::to_string(rec.steps.size()) + " steps, too few for a trend";
  }
  char buf[400];
  int len = std::snprintf(buf, sizeof buf, "steps.csv: %zu steps; median step %.3f s early, %.3f s late%s",
                          rec.steps.size(), trend.early_median_s, trend.late_median_s,
                          trend.slow ? " -> a late slowdown" : " -> no late slowdown");
  if (window && len > 0 && static_cast<size_t>(len) < sizeof buf) {
    len += std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len),
                         "; steps %lld-%lld%s: median %.3f s, %.0f%% above the %.3f s of the other steps -> "
                         "a slow window",
                         static_cast<long long>(window->first_step), static_cast<long long>(window->last_step),
                         window->to_the_end ? " (to the end)" : "", window->median_s,
                         100.0 * (window->median_s / window->baseline_s - 1), window->baseline_s);
  }
  if (rotating && len > 0 && static_cast<size_t>(len) < sizeof buf) {
    std::snprintf(buf + len, sizeof buf - static_cast<size_t>(len),
                  "; %d of %d steps >= 25%% above the fast tenth (%.3f s), median %.3f s, costing %.0f%% of "
                  "the run -> slow spikes",
                  rotating->spikes, rotating->steps, rotating->fast_s, rotating->spike_median_s,
                  100.0 * rotating->excess_share);
  }
  return buf;
}

void WalkContext::note_watchdogs() {
  const WatchdogLine& first = watchdogs.front();
  auto numel = [](const WatchdogLine& w) {
    return w.numel_in < 0 ? std::string() : " NumelIn=" + std::to_string(w.numel_in);
  };
  note(3, log_place(first.line_no) + ": rank " + std::to_string(first.rank) +
              " timed out first, SeqNum=" + std::to_string(first.seq) + " OpType=" + first.op_type + numel(first) +
              " (the first to time out is usually a waiting victim, not the culprit)");
  // Per process group: the (SeqNum, OpType, NumelIn) each rank timed out at. The
  // odd one out is judged within one group, never across groups.
  std::map<std::string, std::map<std::string, std::vector<int>>, PgOrder> by_pg;
  for (const WatchdogLine& w : watchdogs) {
    by_pg[w.pg]["SeqNum=" + std::to_string(w.seq) + " OpType=" + w.op_type + numel(w)]
        .push_back(w.rank);
  }
  // Groups whose members all timed out at one op are alike (the instances of one
  // kind, each waiting): one line per op for them; a group split is shown whole.
  std::map<std::string, std::pair<std::vector<std::string>, std::vector<int>>> alike;  // work -> pgs, ranks
  int shown = 0;
  for (const auto& [pg, by_work] : by_pg) {
    if (by_work.size() == 1 && !pg.empty()) {
      auto& [pgs, ranks] = alike[by_work.begin()->first];
      pgs.push_back(pg);
      ranks.insert(ranks.end(), by_work.begin()->second.begin(), by_work.begin()->second.end());
      continue;
    }
    size_t most = 0;
    for (const auto& [work, ranks] : by_work) most = std::max(most, ranks.size());
    for (const auto& [work, ranks] : by_work) {
      if (shown++ == 8) return;
      const bool odd = by_work.size() > 1 && ranks.size() < most;
      note(3, std::string(odd ? "odd one(s) out: " : "") + (pg.empty() ? "" : "pg " + pg + ": ") +
                  (ranks.size() > 6 ? std::to_string(ranks.size()) + " ranks" : "rank(s) " + format_ranks(ranks)) +
                  " timed out at " + work);
    }
  }
  for (auto& [work, pr] : alike) {
    if (shown++ == 8) return;
    auto& [pgs, ranks] = pr;
    std::sort(ranks.begin(), ranks.end());
    note(3, (pgs.size() == 1 ? "pg " : "pgs ") + pg_list(pgs) + ": " +
                (ranks.size() > 6 ? std::to_string(ranks.size()) + " ranks" : "rank(s) " + format_ranks(ranks)) +
                " timed out at " + work);
  }
}

void WalkContext::note_pg_status() {
  // pg name -> rank -> status, for the groups each rank reports.
  std::map<std::string, std::map<int, FrStatus>, PgOrder> by_pg;
  for (const auto& [rank, dump] : rec.dumps) {
    for (const auto& [pg, st] : dump.status) by_pg[pg][rank] = st;
  }
  // Groups whose members all agree say little one by one: they are counted. At most
  // eight groups with a split are shown, so the transcript is bounded at any scale.
  std::vector<std::string> agree;
  int shown = 0;
  for (const auto& [pg, ranks] : by_pg) {
    std::map<std::pair<int64_t, int64_t>, std::vector<int>> by_value;
    for (const auto& [rank, st] : ranks) by_value[{st.last_enqueued, st.last_completed}].push_back(rank);
    if (by_value.size() == 1 && by_pg.size() > 1) {
      agree.push_back(pg);
      continue;
    }
    if (shown++ == 8) continue;
    std::string t = "pg_status pg " + pg + " (last enqueued/completed):";
    for (const auto& [v, rs] : by_value) {
      t.append(" ").append(std::to_string(v.first)).append("/").append(std::to_string(v.second));
      t.append(" on ").append(rs.size() > 4 ? std::to_string(rs.size()) + " ranks"
                                            : "rank(s) " + format_ranks(rs));
      t.append(";");
    }
    t.pop_back();
    if (by_value.size() > 1) t += " -> the minority is the odd one out";
    note(3, t);
  }
  if (shown > 8) note(3, "pg_status: " + std::to_string(shown - 8) + " more group(s) split");
  if (!agree.empty()) {
    note(3, "pg_status " + std::string(agree.size() == 1 ? "pg " : "pgs ") + pg_list(agree) +
                ": every member at the same last enqueued/completed");
  }
}

std::string WalkContext::log_name() const {
  if (rec.log_files.size() == 1) return rec.log_files.front().second;
  return rec.log_files.empty() ? "job.log" : "the logs";
}

std::string WalkContext::log_place(size_t line_no) const {
  std::string file = "job.log";
  size_t first = 0;
  for (const auto& [at, name] : rec.log_files) {
    if (at < line_no) {
      file = name;
      first = at;
    }
  }
  return file + " line " + std::to_string(line_no - first);
}

void WalkContext::note_waits() {
  const WaitGraph& w = fr.waits;
  if (w.roots.empty()) return;
  std::map<std::tuple<std::string, int64_t, WaitKind>, std::vector<const WaitRoot*>> by_where;
  for (const WaitRoot& r : w.roots) by_where[{r.pg_name, r.seq, r.kind}].push_back(&r);
  int shown = 0;
  for (const auto& [where, roots] : by_where) {
    if (shown++ == 4) break;
    const WaitRoot& r = *roots.front();
    std::vector<int> ranks;
    for (const WaitRoot* x : roots) ranks.push_back(x->rank);
    std::string t = "wait-for graph: pg " + r.pg_name + (r.pg_desc.empty() ? "" : " (" + r.pg_desc + ")") +
                    (r.p2p ? " p2p_seq_id " : " seq ") + std::to_string(r.seq) + (r.op.empty() ? "" : " " + r.op) +
                    ": " + std::to_string(r.waiters) +
                    " rank(s) wait on rank(s) " + format_ranks(ranks) + ", which " + to_string(r.kind);
    if (r.kind == WaitKind::kNeverIssued && r.p2p) {
      t += " (it never posted the matching half and has nothing pending: stuck on its CPU)";
    } else if (r.kind == WaitKind::kNeverIssued) {
      t += " (pg_status last enqueued " + std::to_string(r.last_enqueued) +
           ": the CPU never got there: the GIL, a data loader, a Python exception)";
    } else if (r.kind == WaitKind::kIssuedNotFinished) {
      t += " (every stuck group holds it: its GPU or NIC stopped: a GPU error, a dead NIC)";
    }
    if (!r.minority) t += "; they outnumber the waiters, so the waiters may have issued an extra op";
    note(4, t);
  }
}

bool WalkContext::counts(const Divergence& div) const {
  // An op only some ranks reached is normal skew in a running job; it matters in a hang.
  return div.kind != DivergenceKind::kPresence || stopped(d.verdict);
}

std::string WalkContext::describe(const Divergence& div) const {
  if (div.p2p) {
    std::string t = "pg " + div.pg_name + " (" + div.pg_desc + ") p2p: rank " + std::to_string(div.majority[0]) +
                    " and rank " + std::to_string(div.minority[0]) + " disagree: " + div.found + " on rank " +
                    std::to_string(div.minority[0]) + " against " + div.expected + " on rank " +
                    std::to_string(div.majority[0]) + "; first unmatched: " + div.op + " p2p_seq_id " +
                    std::to_string(div.seq);
    if (div.step >= 0) t += " in step " + std::to_string(div.step);
    if (!div.op_name.empty()) t += " (op " + div.op_name + ")";
    return t + (div.minority_has_entry ? " -> an extra p2p op" : " -> its partner was never posted");
  }
  std::string t = "pg " + div.pg_name + " (" + div.pg_desc + ") seq " + std::to_string(div.seq) +
                  ": " + to_string(div.kind) + " on " + div.op;
  if (!div.op_name.empty()) t += " (op " + div.op_name + ")";
  if (div.kind == DivergenceKind::kPresence) {
    t += div.minority_has_entry ? ": only rank(s) " + format_ranks(div.minority) + " issued it"
                                : ": rank(s) " + format_ranks(div.minority) + " never issued it";
  } else {
    t += ": rank(s) " + format_ranks(div.minority) + " have " + div.found + ", the other " +
         std::to_string(div.majority.size()) + " have " + div.expected;
    if (div.shift == +1) t += "; their next ops match the others' one seq earlier (an extra op)";
    if (div.shift == -1) t += "; their ops match the others' one seq later (a skipped op)";
  }
  if (!div.when.empty()) t += "; condition `" + div.when + "`";
  if (!div.settled_by.empty()) t += "; one against one, settled by " + div.settled_by;
  if (div.tie) t += " [a tie: low confidence]";
  return t;
}

}  // namespace fleetsim::diagnose
