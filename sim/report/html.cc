// The report page: one HTML file with its style, data and script inline. The
// heat map is a canvas drawn from a JSON block; the step chart is inline SVG;
// the rest is tables and lists. Every number is printed with a fixed format so
// the same ReportData always gives the same bytes.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "fleetsim/isolation.h"
#include "sim/report/page_script.h"
#include "sim/report/report.h"

namespace fleetsim::report {

namespace {

constexpr int kCanvasWidth = 960, kLabelWidth = 170;

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

int cell_height(size_t rows) { return std::clamp(static_cast<int>(560 / std::max<size_t>(rows, 1)), 4, 16); }

std::string heat_data(const ReportData& d) {
  const HeatMap& h = d.heat;
  nlohmann::json j;
  j["alphabet"] = kLevelAlphabet;
  j["left"] = kLabelWidth;
  j["cellh"] = cell_height(h.rows.size());
  j["t0"] = h.t0_s;
  j["cols"] = h.col_end_s;
  j["rows"] = nlohmann::json::array();
  for (const HeatRow& r : h.rows) j["rows"].push_back({{"l", r.label}, {"w", r.why}, {"n", r.ranks}});
  j["layers"] = nlohmann::json::array();
  for (const HeatLayer& l : h.layers) j["layers"].push_back({{"name", l.name}, {"min", l.min}, {"mean", l.mean}, {"max", l.max}});
  j["marks"] = nlohmann::json::array();
  const bool hang = d.outcome == "hang";
  if (d.stuck_since_s >= 0)
    j["marks"].push_back({{"t", d.stuck_since_s}, {"row", 0}, {"color", "#e65100"},
                          {"label", hang ? "stuck collective enqueued" : d.outcome == "crash" ? "crash" : "stopped"}});
  if (d.detected_at_s >= 0)
    j["marks"].push_back({{"t", d.detected_at_s}, {"row", 1}, {"color", "#c62828"},
                          {"label", hang ? "watchdog fired" : "detected"}});
  std::string s = j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  for (size_t p = s.find("</"); p != std::string::npos; p = s.find("</", p)) s.replace(p, 2, "<\\/");
  return s;
}

std::string header(const ReportData& d) {
  std::string s = "<h1>fleetsim report: " + esc(d.scenario.empty() ? d.dir : d.scenario) + "</h1>\n";
  if (!d.description.empty()) s += "<p class=\"sub\">" + esc(d.description) + "</p>\n";
  s += "<p class=\"sub\">" + std::to_string(d.ranks) + " ranks; outcome " + esc(d.outcome.empty() ? "unknown" : d.outcome);
  if (d.steps_planned > 0)
    s += "; " + std::to_string(d.steps_completed) + " of " + std::to_string(d.steps_planned) + " steps completed";
  if (d.stop_step >= 0) s += "; stopped at step " + std::to_string(d.stop_step);
  s += "; folder <code>" + esc(d.dir) + "</code></p>\n";
  const diagnose::Diagnosis& g = d.diagnosis;
  s += "<dl>\n<dt>Verdict</dt><dd>" + esc(std::string(diagnose::to_string(g.verdict))) + "</dd>\n";
  s += "<dt>Cause</dt><dd>" + esc(std::string(diagnose::to_string(g.cause))) + "</dd>\n";
  s += "<dt>Culprit</dt><dd>" + (g.culprit_ranks.empty() ? std::string("no single rank") : "rank(s) " + format_rank_ranges(g.culprit_ranks)) + "</dd>\n";
  if (!g.pg_name.empty()) {
    const int64_t seq = g.p2p_seq_id >= 0 ? g.p2p_seq_id : g.collective_seq_id;
    s += "<dt>Where</dt><dd>pg " + esc(g.pg_name) + (g.pg_desc.empty() ? "" : " (" + esc(g.pg_desc) + ")") + ", " + (g.p2p_seq_id >= 0 ? "p2p seq " : "seq ") +
         std::to_string(seq) + ", " + esc(g.op) + (g.op_name.empty() ? "" : " (op " + esc(g.op_name) + ")") + "</dd>\n";
  }
  if (!d.first_watchdog_line.empty()) s += "<dt>First watchdog line</dt><dd><code>" + esc(d.first_watchdog_line) + "</code></dd>\n";
  return s + "</dl>\n";
}

std::string outlier_table(const HeatMap& h) {
  std::string s;
  for (const HeatRow& r : h.rows)
    if (!r.why.empty()) s += "<tr><td>" + esc(r.label) + "</td><td>" + esc(r.why) + "</td></tr>\n";
  return s.empty() ? "" : "<table><tr><th>kept in its own row</th><th>why</th></tr>\n" + s + "</table>\n";
}

std::string heat_section(const ReportData& d) {
  const HeatMap& h = d.heat;
  std::string s = "<h2 id=\"heat\">Per-rank utilization over time</h2>\n";
  if (h.rows.empty()) return s + "<p>No telemetry.csv in this folder.</p>\n";
  const int height = 8 + static_cast<int>(h.rows.size()) * cell_height(h.rows.size()) + 50;
  s += "<p><label>per cell <select id=\"stat\"><option value=\"mean\">mean</option><option value=\"min\">min</option>"
       "<option value=\"max\">max</option></select></label> 0% <span class=\"legend\"></span> 100%</p>\n";
  const char* titles[] = {"GPU utilization (nvidia-smi <code>utilization.gpu</code>)",
                          "Tensor activity (DCGM <code>PROF_PIPE_TENSOR_ACTIVE</code>)"};
  for (size_t i = 0; i < h.layers.size() && i < 2; ++i) {
    const std::string id = i == 0 ? "heatmap" : "heatmap-tensor";
    s += std::string("<h3>") + titles[i] + "</h3>\n<canvas class=\"heat\" id=\"" + id + "\" data-layer=\"" +
         std::to_string(i) + "\" width=\"" + std::to_string(kCanvasWidth) + "\" height=\"" + std::to_string(height) +
         "\"></canvas>\n<div class=\"tip\" id=\"" + id + "-tip\">Hover a cell for its ranks, time span and min/mean/max.</div>\n";
  }
  s += "<p class=\"note\">" + std::to_string(h.ranks_sampled) + " of " + std::to_string(d.ranks) +
       " ranks have telemetry; " + std::to_string(h.col_end_s.size()) + " time columns from " + fmt("%.0f", h.t0_s) +
       " s to " + fmt("%.0f", h.t1_s) + " s. " +
       (h.binned ? "Ranks are binned into contiguous ranges (each cell: min, mean or max over its ranks and samples); "
                   "the ranks that matter keep their own rows at the top."
                 : "One row per rank.") +
       " A GPU spinning in an NCCL kernel, waiting for its peers, reads 100% utilization and no tensor activity.</p>\n";
  return s + outlier_table(h);
}

std::string step_chart(const ReportData& d) {
  std::string s = "<h2 id=\"steps\">Step times</h2>\n";
  if (d.steps.empty()) return s + "<p>No completed steps in steps.csv.</p>\n";
  const double x0 = 60, x1 = 940, y0 = 180, y1 = 10;
  double top = 0;
  for (const StepPoint& p : d.steps) top = std::max(top, p.max_s);
  top = top > 0 ? top * 1.1 : 1;
  const double first = static_cast<double>(d.steps.front().first);
  const double last = static_cast<double>(std::max<int64_t>(d.steps.back().last, d.stop_step)) + 1;
  auto x = [&](double step) { return x0 + (step - first) / std::max(last - first, 1.0) * (x1 - x0); };
  auto y = [&](double v) { return y0 - v / top * (y0 - y1); };
  std::string mean, max;
  for (const StepPoint& p : d.steps) {
    const double mid = (static_cast<double>(p.first) + static_cast<double>(p.last)) / 2;
    mean += fmt("%.1f,", x(mid)) + fmt("%.1f ", y(p.mean_s));
    max += fmt("%.1f,", x(mid)) + fmt("%.1f ", y(p.max_s));
  }
  s += "<svg width=\"960\" height=\"215\" viewBox=\"0 0 960 215\" font-size=\"11\" font-family=\"sans-serif\">\n";
  s += "<line x1=\"60\" y1=\"180\" x2=\"940\" y2=\"180\" stroke=\"#888\"/><line x1=\"60\" y1=\"10\" x2=\"60\" y2=\"180\" stroke=\"#888\"/>\n";
  for (double v : {0.0, top / 2, top / 1.1})
    s += "<text x=\"56\" y=\"" + fmt("%.1f", y(v) + 4) + "\" text-anchor=\"end\">" + fmt("%.3f s", v) + "</text>\n";
  if (d.steps.size() < static_cast<size_t>(d.steps_in_file))
    s += "<polyline fill=\"none\" stroke=\"#90caf9\" stroke-width=\"1\" points=\"" + max + "\"/>\n";
  s += "<polyline fill=\"none\" stroke=\"#1565c0\" stroke-width=\"1.5\" points=\"" + mean + "\"/>\n";
  s += "<text x=\"60\" y=\"196\">step " + std::to_string(d.steps.front().first) + "</text>\n";
  s += "<text x=\"940\" y=\"196\" text-anchor=\"end\">step " + std::to_string(d.steps.back().last) + "</text>\n";
  if (d.stop_step >= 0) {
    const std::string xs = fmt("%.1f", x(static_cast<double>(d.stop_step)));
    s += "<line x1=\"" + xs + "\" y1=\"10\" x2=\"" + xs + "\" y2=\"180\" stroke=\"#c62828\" stroke-dasharray=\"4 3\"/>\n";
    s += "<text x=\"" + xs + "\" y=\"210\" text-anchor=\"end\" fill=\"#c62828\">" + esc(d.outcome) + " at step " +
         std::to_string(d.stop_step) + "</text>\n";
  }
  s += "</svg>\n<p class=\"note\">" + std::to_string(d.steps_in_file) + " steps in steps.csv" +
       (d.steps.size() < static_cast<size_t>(d.steps_in_file)
            ? ", folded into " + std::to_string(d.steps.size()) + " points (dark: mean of each run of steps, light: its max)"
            : "") +
       ".</p>\n";
  return s;
}

std::string fr_section(const ReportData& d) {
  const FrAlignment& a = d.fr;
  std::string s = "<h2 id=\"fr\">Flight recorder at the stuck sequence number</h2>\n";
  if (a.ranks == 0) return s + "<p>No flight-recorder dumps in this folder.</p>\n";
  if (a.rows.empty()) return s + "<p>" + std::to_string(a.ranks) + " dumps read; diagnose names no sequence number to align at.</p>\n";
  s += "<p>pg " + esc(a.pg_name) + (a.pg_desc.empty() ? "" : " (" + esc(a.pg_desc) + ")") + ", " + (a.p2p ? "p2p seq " : "collective seq ") +
       std::to_string(a.seq) + ": each member's pg_status and its entry at that number (the group instance of the "
       "culprit, or of the first rank to time out). Ranks that agree share a row; "
       "the smallest groups (the odd ones out) come first.</p>\n";
  s += "<table><tr><th>ranks</th><th>count</th><th>last enqueued</th><th>last started</th><th>last completed</th><th>entry at seq " +
       std::to_string(a.seq) + "</th></tr>\n";
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const FrAlignRow& r = a.rows[i];
    const bool odd = a.rows.size() > 1 && i == 0 && r.ranks.size() < a.rows.back().ranks.size();
    s += std::string("<tr") + (odd ? " class=\"odd\"" : "") + "><td>" + format_rank_ranges(r.ranks) + "</td><td>" +
         std::to_string(r.ranks.size()) + "</td><td>" + std::to_string(r.last_enqueued) + "</td><td>" +
         std::to_string(r.last_started) + "</td><td>" + std::to_string(r.last_completed) + "</td><td>" + esc(r.entry) + "</td></tr>\n";
  }
  s += "</table>\n";
  if (a.rows_left_out > 0) s += "<p class=\"note\">" + std::to_string(a.rows_left_out) + " more groups not shown.</p>\n";
  return s;
}

std::string walk_section(const diagnose::Diagnosis& g) {
  std::string s = "<h2 id=\"walk\">The isolation-order walk</h2>\n<ol class=\"walk\">\n";
  for (const IsolationStepSpec& spec : kIsolationSteps) {
    const int n = isolation_step_number(spec.step);
    std::string items;
    for (const diagnose::Evidence& e : g.evidence)
      if (diagnose::isolation_step_of(e.step) == n) items += "<li>" + esc(e.text) + "</li>";
    if (items.empty()) continue;
    s += "<li value=\"" + std::to_string(n) + "\"><b>" + esc(spec.name) + "</b><ul>" + items + "</ul></li>\n";
  }
  std::string culprit;
  for (const diagnose::Evidence& e : g.evidence)
    if (e.step == 5) culprit += "<li>" + esc(e.text) + "</li>";
  if (!culprit.empty()) s += "</ol>\n<h3>Culprit</h3>\n<ul>" + culprit + "</ul>\n<ol class=\"walk\">\n";
  s += "</ol>\n<h2 id=\"fix\">The fix</h2>\n<pre>" + esc(g.advice) + "</pre>\n";
  return s;
}

}  // namespace

std::string render_html(const ReportData& d) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>fleetsim report: " +
                  esc(d.scenario.empty() ? d.dir : d.scenario) + "</title>\n<style>" + kPageStyle + "</style>\n</head>\n<body>\n";
  s += header(d) + heat_section(d) + step_chart(d) + fr_section(d) + walk_section(d.diagnosis);
  s += "<p class=\"note\">Written by fleetsim report. Bounded at any scale: at most " + std::to_string(kMaxRows) +
       " heat-map rows (" + std::to_string(kMaxBins) + " binned rank ranges and " + std::to_string(kMaxOutliers) +
       " ranks of their own) by " + std::to_string(kMaxCols) + " time columns, " + std::to_string(kMaxStepPoints) +
       " step points and " + std::to_string(kMaxFrGroups) + " flight-recorder rows.</p>\n";
  s += "<script type=\"application/json\" id=\"heat-data\">" + heat_data(d) + "</script>\n";
  s += std::string("<script>") + kPageScript + "</script>\n</body>\n</html>\n";
  return s;
}

}  // namespace fleetsim::report
