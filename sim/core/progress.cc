// The progress line (fleetsim/progress.h): when to draw, and how a line reads.
#include "fleetsim/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>

namespace fleetsim {
namespace {

bool g_terminal = false;
bool g_forced = false;

constexpr double kQuietS = 2.0;     // nothing is drawn before this much wall time
constexpr double kRedrawS = 0.25;   // a terminal line is redrawn this often
constexpr double kLineEveryS = 5.0; // a plain line (not a terminal) this often

std::string fmt_duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  const auto t = static_cast<int64_t>(std::llround(s));
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%" PRId64 "h%02" PRId64 "m", t / 3600, t / 60 % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%" PRId64 "m%02" PRId64 "s", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%" PRId64 "s", t);
  return buf;
}


}  // namespace

void set_progress_output(bool terminal, bool forced) {
  g_terminal = terminal;
  g_forced = forced;
}

bool progress_enabled() { return g_terminal || g_forced; }

ProgressMeter::ProgressMeter(std::string label, std::string unit, int64_t total)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), start_(Clock::now()), last_draw_(start_) {}

ProgressMeter::~ProgressMeter() { finish(); }

std::string ProgressMeter::format(const std::string& label, const std::string& unit, int64_t done, int64_t total,
                                  double sim_s, double wall_s) {
  char buf[256];
  const double rate = wall_s > 0 ? static_cast<double>(done) / wall_s : 0;
  const std::string eta = rate > 0 ? fmt_duration(static_cast<double>(total - done) / rate) : "?";
  std::string sim;
  if (sim_s >= 0) sim = "  sim " + fmt_duration(sim_s);
  std::snprintf(buf, sizeof buf, "%s %" PRId64 "/%" PRId64 " %s (%.0f%%)%s  %.1f %s/s  elapsed %s  ETA %s",
                label.c_str(), done, total, unit.c_str(),
                total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0, sim.c_str(),
                rate, unit.c_str(), fmt_duration(wall_s).c_str(), eta.c_str());
  return buf;
}

void ProgressMeter::update(int64_t done, double sim_s) {
  done_ = done;
  sim_s_ = sim_s;
  if (finished_ || !progress_enabled()) return;
  const Clock::time_point now = Clock::now();
  const double since_start = std::chrono::duration<double>(now - start_).count();
  const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  if (since_start < kQuietS || since_draw < (g_terminal ? kRedrawS : kLineEveryS)) return;
  last_draw_ = now;
  draw(false);
}

void ProgressMeter::finish() {
  if (finished_) return;
  finished_ = true;
  if (drawn_) draw(true);
}

void ProgressMeter::draw(bool last) {
  const double wall = std::chrono::duration<double>(Clock::now() - start_).count();
  const std::string line = format(label_, unit_, done_, total_, sim_s_, wall);
  if (g_terminal) std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), last ? "\n" : "");
  else std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}


}  // namespace fleetsim
