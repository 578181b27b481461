// fleetsim report: one self-contained HTML page per run folder (no network, no
// external scripts or fonts): the per-rank utilization heat map with the hang
// marked, step times, the flight-recorder alignment at the stuck sequence number,
// and diagnose's isolation-order walk and fix. Bounded in size at any rank count
// (see docs/report.md); the same folder always gives the same bytes.
#pragma once

#include <string>
#include <vector>

#include "fleetsim/status.h"
#include "sim/diagnose/diagnose.h"
#include "sim/report/heatmap.h"

namespace fleetsim::report {

inline constexpr int kMaxStepPoints = 1000;  // steps.csv folded to at most this many points
inline constexpr int kMaxFrGroups = 24;      // alignment rows (ranks that agree share one)

// One point of the step-time chart: a run of consecutive steps.
struct StepPoint {
  int64_t first = 0, last = 0;   // step numbers
  double mean_s = 0, max_s = 0;  // their durations
};

// Ranks that agree at the stuck sequence number: what each shows for the group.
struct FrAlignRow {
  std::vector<int> ranks;
  int64_t last_enqueued = -1, last_started = -1, last_completed = -1;
  std::string entry;  // the entry at the sequence number, or "no entry"
};

struct FrAlignment {
  std::string pg_name, pg_desc;
  int64_t seq = -1;
  bool p2p = false;
  int ranks = 0;                    // dumps read
  std::vector<FrAlignRow> rows;     // minority first, at most kMaxFrGroups
  int rows_left_out = 0;
};

// What the page shows, gathered from the folder.
struct ReportData {
  std::string dir;
  std::string scenario, description, outcome;
  int ranks = 0;
  int64_t steps_planned = 0, steps_completed = 0;
  double stuck_since_s = -1, detected_at_s = -1;  // hang (or crash: at_s, detected_at_s)
  int64_t stop_step = -1;                         // the hang's or crash's step
  int first_timeout_rank = -1;
  std::string first_watchdog_line;                // from job.log
  HeatMap heat;
  std::vector<StepPoint> steps;
  int64_t steps_in_file = 0;
  FrAlignment fr;
  diagnose::Diagnosis diagnosis;
};

// Reads `dir` (through diagnose's reader and diagnose itself) into ReportData.
// Fails only on what diagnose fails on: a missing folder, nothing to read, bad files.
Result<ReportData> gather_report(const std::string& dir);

// The page (html.cc).
std::string render_html(const ReportData& data);

// gather_report then render_html.
Result<std::string> render_report(const std::string& dir);

// Rank lists as ranges: "0, 2-5, 9" (at most `max_parts` parts, then ", ... (N ranks)").
std::string format_rank_ranges(const std::vector<int>& ranks, size_t max_parts = 12);

}  // namespace fleetsim::report
