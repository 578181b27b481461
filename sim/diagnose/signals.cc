// Utilization window, watchdog/crash lines and step trend: the evidence of steps 1-3
// of the isolation order that does not come from the flight recorder.
#include "sim/diagnose/signals.h"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <set>

#include "sim/diagnose/fr_analyzer.h"
#include "sim/io/units.h"

namespace fleetsim::diagnose {
namespace {

constexpr double kIdlePercent = 5;
constexpr double kSpinPercent = 90;
constexpr double kTensorIdle = 0.05;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Sample times after the last time any rank's step changed (the stall window),
// or the last few sample times if steps kept moving to the end.
std::vector<double> stall_window(const std::vector<TelemetryRow>& rows, bool* stopped) {
  std::map<double, std::map<int, int64_t>> steps_at;
  for (const TelemetryRow& r : rows) steps_at[r.time_s][r.rank] = r.step;
  std::vector<double> times;
  double last_change = steps_at.begin()->first;
  const std::map<int, int64_t>* prev = nullptr;
  for (const auto& [t, steps] : steps_at) {
    if (prev && *prev != steps) last_change = t;
    prev = &steps;
    times.push_back(t);
  }
  std::vector<double> after;
  for (double t : times) {
    if (t > last_change) after.push_back(t);
  }
  *stopped = after.size() >= 3;
  if (*stopped) {
    // Skip the first half: ranks may still be finishing compute as they arrive.
    return std::vector<double>(after.begin() + static_cast<long>(after.size() / 2), after.end());
  }
  const size_t n = std::min<size_t>(5, times.size());
  return std::vector<double>(times.end() - static_cast<long>(n), times.end());
}

std::string pattern_text(const UtilPattern& p, bool nic_flat) {
  char win[96];
  std::snprintf(win, sizeof win, "%s %.1f-%.1f s", p.progress_stopped ? "after progress stopped," : "last samples,",
                p.window_start_s, p.window_end_s);
  switch (p.kind) {
    case UtilKind::kAllSpinning:
      return std::string(win) + ": every rank ~100% GPU util, tensor_active ~0" +
             (nic_flat ? ", NIC bytes flat" : "") +
             " -> every GPU spinning in NCCL: a desync or a fabric stall";
    case UtilKind::kSomeIdle:
      return std::string(win) + ": rank(s) " + format_ranks(p.idle_ranks) +
             " at 0% while the others spin -> rank(s) " + format_ranks(p.idle_ranks) +
             " stuck on their CPU or gone";
    case UtilKind::kAllIdle:
      return std::string(win) +
             ": every rank at 0% -> every rank blocked on the CPU (e.g. behind a slow rank-0 "
             "checkpoint)";
    case UtilKind::kBusy: return std::string(win) + ": ranks computing (tensor pipes active)";
    case UtilKind::kNoData: break;
  }
  return "no telemetry.csv";
}

void find_heavy_rank(const std::vector<TelemetryRow>& rows, UtilPattern& p) {
  std::map<int, std::vector<double>> tensor;
  for (const TelemetryRow& r : rows) tensor[r.rank].push_back(r.tensor_active);
  std::vector<double> means;
  std::map<int, double> mean_of;
  for (const auto& [rank, v] : tensor) {
    double sum = 0;
    for (double x : v) sum += x;
    mean_of[rank] = sum / static_cast<double>(v.size());
    means.push_back(mean_of[rank]);
  }
  p.median_tensor = median_of(means);
  for (const auto& [rank, m] : mean_of) {
    if (m > p.heavy_tensor) {
      p.heavy_tensor = m;
      p.heavy_rank = rank;
    }
  }
  if (mean_of.size() < 3 || p.heavy_tensor < 1.15 * p.median_tensor + 0.01) p.heavy_rank = -1;
}

}  // namespace

UtilPattern read_utilization(const std::vector<TelemetryRow>& rows) {
  UtilPattern p;
  if (rows.empty()) return p;
  std::vector<double> window = stall_window(rows, &p.progress_stopped);
  p.window_start_s = window.front();
  p.window_end_s = window.back();
  std::map<int, std::vector<const TelemetryRow*>> by_rank;
  for (const TelemetryRow& r : rows) {
    if (r.time_s >= p.window_start_s) by_rank[r.rank].push_back(&r);
  }
  bool all_spin = true;
  bool nic_flat = true;
  for (const auto& [rank, samples] : by_rank) {
    double util = 0;
    double tensor = 0;
    for (const TelemetryRow* s : samples) {
      util += s->gpu_util;
      tensor += s->tensor_active;
    }
    util /= static_cast<double>(samples.size());
    tensor /= static_cast<double>(samples.size());
    if (util <= kIdlePercent) p.idle_ranks.push_back(rank);
    if (util < kSpinPercent || tensor > kTensorIdle) all_spin = false;
    if (samples.back()->nic_tx_bytes != samples.front()->nic_tx_bytes) nic_flat = false;
  }
  if (!p.idle_ranks.empty()) {
    p.kind = p.idle_ranks.size() == by_rank.size() ? UtilKind::kAllIdle : UtilKind::kSomeIdle;
  } else {
    p.kind = all_spin ? UtilKind::kAllSpinning : UtilKind::kBusy;
  }
  if (p.kind == UtilKind::kBusy) find_heavy_rank(rows, p);
  p.text = pattern_text(p, nic_flat);
  return p;
}

int rank_of_line(std::string_view line) {
  static const std::regex kRank(R"(\[[Rr]ank ?(\d+)\])");
  std::match_results<std::string_view::const_iterator> m;
  if (!std::regex_search(line.begin(), line.end(), m, kRank)) return -1;
  return parse_int<int>(m[1].str()).value_or(-1);
}

std::vector<int> find_crashed_ranks(const std::vector<std::string>& lines) {
  static const std::regex kCrash(
      R"(crash|exitcode|died|exited|killed|SIGKILL|SIGSEGV|SIGBUS|Segmentation fault|Xid|XID)");
  static const std::regex kRank(R"((?:\[[Rr]ank ?|\brank[:= ]*)(\d+))");
  std::set<int> ranks;
  for (const std::string& line : logical_lines(lines)) {
    // Aborts after a watchdog timeout are consequences, not causes.
    if (parse_watchdog_line(line)) break;
    if (!std::regex_search(line, kCrash)) continue;
    std::smatch m;
    if (!std::regex_search(line, m, kRank)) continue;
    if (std::optional<int> r = parse_int<int>(m[1].str())) ranks.insert(*r);
  }
  return std::vector<int>(ranks.begin(), ranks.end());
}

std::vector<int> find_network_error_ranks(const std::vector<std::string>& lines) {
  std::set<int> ranks;
  for (const std::string& line : lines) {
    if (line.find("ncclRemoteError") == std::string::npos && line.find("there was a network error") == std::string::npos &&
        line.find("Got completion from peer") == std::string::npos)
      continue;
    if (const int r = rank_of_line(line); r >= 0) ranks.insert(r);
  }
  return std::vector<int>(ranks.begin(), ranks.end());
}

StepTrend read_step_trend(const std::vector<StepRow>& steps) {
  StepTrend t;
  if (steps.size() < 6) return t;
  const size_t third = steps.size() / 3;
  std::vector<double> early;
  std::vector<double> late;
  std::map<int, int> slowest;
  for (size_t i = 0; i < third; ++i) early.push_back(steps[i].duration_s);
  for (size_t i = steps.size() - third; i < steps.size(); ++i) {
    late.push_back(steps[i].duration_s);
    ++slowest[steps[i].slowest_rank];
  }
  t.early_median_s = median_of(early);
  t.late_median_s = median_of(late);
  t.slow = t.late_median_s > 1.2 * t.early_median_s;
  t.late_steps = static_cast<int>(third);
  for (const auto& [rank, n] : slowest) {
    if (n > t.slowest_count) {
      t.slowest_count = n;
      t.slowest_rank = rank;
    }
  }
  return t;
}

}  // namespace fleetsim::diagnose
