// Gathers what `fleetsim report` shows from one folder: diagnose's reader and
// verdict, summary.json's hang or crash times, steps.csv folded to a bounded
// series, telemetry folded into the heat map, and the flight-recorder dumps
// aligned at the sequence number diagnose names (ranks that agree share a row).
#include "sim/report/report.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "fleetsim/file_read.h"

namespace fleetsim::report {

namespace {

using diagnose::Record;

double num(const nlohmann::json& o, const char* key, double fallback) {
  return o.is_object() && o.contains(key) && o[key].is_number() ? o[key].get<double>() : fallback;
}

// The description and the hang's or crash's times from summary.json (diagnose's
// Summary leaves them out).
void read_stop_times(const std::string& dir, ReportData* d) {
  Result<std::string> text = read_file_capped(dir + "/summary.json", kRecordJsonMax, "summary.json");
  if (!text) return;
  Result<nlohmann::json> j = diagnose::parse_json_text(*text, dir + "/summary.json");
  if (!j || !j->is_object()) return;
  if (j->contains("description") && (*j)["description"].is_string()) d->description = (*j)["description"];
  if (j->contains("hang")) {
    const nlohmann::json& h = (*j)["hang"];
    d->stuck_since_s = num(h, "stuck_since_s", -1), d->detected_at_s = num(h, "detected_at_s", -1);
  } else if (j->contains("crash")) {
    const nlohmann::json& c = (*j)["crash"];
    d->stuck_since_s = num(c, "at_s", -1), d->detected_at_s = num(c, "detected_at_s", -1);
  } else if (j->contains("deadlock")) {
    d->stuck_since_s = num((*j)["deadlock"], "at_s", -1);
  }
}

std::vector<StepPoint> fold_steps(const std::vector<diagnose::StepRow>& rows) {
  std::vector<StepPoint> out;
  const size_t n = rows.size(), k = std::min<size_t>(n, kMaxStepPoints);
  for (size_t b = 0; b < k; ++b) {
    const size_t lo = b * n / k, hi = (b + 1) * n / k;
    StepPoint p{rows[lo].step, rows[hi - 1].step, 0, 0};
    for (size_t i = lo; i < hi; ++i) p.mean_s += rows[i].duration_s, p.max_s = std::max(p.max_s, rows[i].duration_s);
    p.mean_s /= static_cast<double>(hi - lo);
    out.push_back(p);
  }
  return out;
}

// The rank steps.csv names slowest most often (lowest rank on ties), or -1.
int most_often_slowest(const std::vector<diagnose::StepRow>& rows) {
  std::map<int, int> count;
  for (const diagnose::StepRow& s : rows)
    if (s.slowest_rank >= 0) ++count[s.slowest_rank];
  int best = -1, best_n = 0;
  for (const auto& [r, c] : count)
    if (c > best_n) best = r, best_n = c;
  return best;
}

std::string describe_entry(const diagnose::FrEntry& e) {
  std::string s = e.profiling_name();
  if (!e.op_name().empty()) s += " '" + e.op_name() + "'";
  s += " in " + e.input_sizes() + ", " + e.state();
  return s;
}

// The members of the instance of group `pg` that `rank` belongs to (every instance
// of a kind shares the name), or empty when its dump does not say.
std::vector<int> instance_of(const Record& rec, const std::string& pg, int rank) {
  const auto d = rec.dumps.find(rank);
  if (d == rec.dumps.end()) return {};
  const auto g = d->second.groups.find(pg);
  return g == d->second.groups.end() ? std::vector<int>{} : g->second.ranks;
}

// Aligns the instance of `pg` holding `around` (every dump holding `pg` if unknown).
FrAlignment align(const Record& rec, const std::string& pg, int64_t seq, bool p2p, int around) {
  FrAlignment a{pg, "", seq, p2p, static_cast<int>(rec.dumps.size()), {}, 0};
  const std::vector<int> members = instance_of(rec, pg, around);
  using Key = std::tuple<int64_t, int64_t, int64_t, std::string>;
  std::map<Key, std::vector<int>> groups;
  for (const auto& [rank, dump] : rec.dumps) {
    const auto g = dump.groups.find(pg);
    if (g == dump.groups.end()) continue;  // the rank is not in the group
    if (!members.empty() && std::find(members.begin(), members.end(), rank) == members.end()) continue;
    if (a.pg_desc.empty()) a.pg_desc = g->second.desc;
    const auto st = dump.status.find(pg);
    const diagnose::FrStatus s = st == dump.status.end() ? diagnose::FrStatus{} : st->second;
    std::string entry = "no entry";
    for (const diagnose::FrEntry& e : dump.entries)
      if (e.pg_name() == pg && e.is_p2p == p2p && (p2p ? e.p2p_seq_id : e.collective_seq_id) == seq)
        entry = describe_entry(e);
    groups[{s.last_enqueued, s.last_started, s.last_completed, entry}].push_back(rank);
  }
  for (auto& [key, ranks] : groups)
    a.rows.push_back({ranks, std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key)});
  std::stable_sort(a.rows.begin(), a.rows.end(), [](const FrAlignRow& x, const FrAlignRow& y) {
    return x.ranks.size() != y.ranks.size() ? x.ranks.size() < y.ranks.size() : x.ranks.front() < y.ranks.front();
  });
  if (a.rows.size() > static_cast<size_t>(kMaxFrGroups)) {
    a.rows_left_out = static_cast<int>(a.rows.size()) - kMaxFrGroups;
    a.rows.resize(kMaxFrGroups);
  }
  return a;
}

FrAlignment align_at_divergence(const Record& rec, const ReportData& d) {
  const diagnose::Diagnosis& g = d.diagnosis;
  const int around = !g.culprit_ranks.empty() ? g.culprit_ranks.front() : d.first_timeout_rank;
  if (!g.pg_name.empty() && g.p2p_seq_id >= 0) return align(rec, g.pg_name, g.p2p_seq_id, true, around);
  if (!g.pg_name.empty() && g.collective_seq_id >= 0) return align(rec, g.pg_name, g.collective_seq_id, false, around);
  if (rec.summary && !rec.summary->hang_process_group.empty() && rec.summary->hang_seq >= 0)
    return align(rec, rec.summary->hang_process_group, rec.summary->hang_seq, false, around);
  FrAlignment none;
  none.ranks = static_cast<int>(rec.dumps.size());
  return none;
}

std::vector<Outlier> named_outliers(const Record& rec, const ReportData& d) {
  std::vector<Outlier> named;
  for (int r : d.diagnosis.culprit_ranks) named.push_back({r, "culprit"});
  if (d.first_timeout_rank >= 0) named.push_back({d.first_timeout_rank, "first to time out"});
  if (rec.summary && rec.summary->crash_rank >= 0) named.push_back({rec.summary->crash_rank, "crashed"});
  const int slow = most_often_slowest(rec.steps);
  if (slow >= 0) named.push_back({slow, "slowest most often (steps.csv)"});
  return named;
}

}  // namespace

std::string format_rank_ranges(const std::vector<int>& ranks, size_t max_parts) {
  std::string out;
  size_t parts = 0;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (parts == max_parts) return out + ", ... (" + std::to_string(ranks.size()) + " ranks)";
    out += (parts++ ? ", " : "") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return out;
}

Result<ReportData> gather_report(const std::string& dir) {
  Result<Record> rec = diagnose::read_record(dir);
  if (!rec) return rec.errors();
  const std::unique_ptr<diagnose::HealthyModel> model = diagnose::recorded_model(*rec);
  ReportData d;
  d.dir = dir;
  d.diagnosis = diagnose::diagnose_record(*rec, model.get());
  if (rec->summary) {
    const diagnose::Summary& s = *rec->summary;
    d.scenario = s.scenario, d.outcome = s.outcome, d.ranks = s.ranks;
    d.steps_planned = s.steps_planned, d.steps_completed = s.steps_completed;
    d.first_timeout_rank = s.hang_first_timeout_rank;
    d.stop_step = s.hang_step >= 0 ? s.hang_step : s.crash_step;
  }
  if (d.ranks == 0) d.ranks = static_cast<int>(rec->dumps.size());
  read_stop_times(dir, &d);
  for (const std::string& line : rec->log_lines)
    if (line.find("Watchdog caught") != std::string::npos) { d.first_watchdog_line = line; break; }
  d.steps = fold_steps(rec->steps);
  d.steps_in_file = static_cast<int64_t>(rec->steps.size());
  const double after = d.stuck_since_s >= 0 ? d.stuck_since_s : -1;
  d.heat = build_heatmap(rec->telemetry, find_outliers(rec->telemetry, named_outliers(*rec, d), after));
  d.fr = align_at_divergence(*rec, d);
  return d;
}

Result<std::string> render_report(const std::string& dir) {
  Result<ReportData> d = gather_report(dir);
  if (!d) return d.errors();
  return render_html(*d);
}

}  // namespace fleetsim::report
