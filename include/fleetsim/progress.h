// Progress on stderr for work that runs longer than ~2 s (a run's steps, a
// sweep's tasks, a calibration's measurements, diagnose's dumps): done/total,
// simulated time, rate and ETA. Redrawn in place
// with \r on a terminal; plain lines every ~5 s when forced (--progress) on a
// pipe; nothing otherwise. Off unless the command line turns it on.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>


namespace fleetsim {

// Set once by the command line: `terminal` when stderr is one (progress is
// redrawn there), `forced` for --progress (plain lines when not a terminal).
void set_progress_output(bool terminal, bool forced);
// True when progress lines would be written.
bool progress_enabled();

// One progress line. update() reads the wall clock: call it every few
// thousand events at most. Nothing is drawn in the first ~2 s.
class ProgressMeter {
 public:
  ProgressMeter(std::string label, std::string unit, int64_t total);
  ~ProgressMeter();  // finishes the line if one was drawn
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  // `done` of total so far; `sim_s` the simulated time (< 0: none).
  void update(int64_t done, double sim_s = -1);
  // The last line, then a newline on a terminal; idempotent.
  void finish();

  // The text of one line (no \r or newline), for tests.
  static std::string format(const std::string& label, const std::string& unit, int64_t done, int64_t total,
                            double sim_s, double wall_s);

 private:
  using Clock = std::chrono::steady_clock;
  void draw(bool last);

  std::string label_, unit_;
  int64_t total_ = 0, done_ = 0;
  double sim_s_ = -1;
  Clock::time_point start_, last_draw_;
  bool drawn_ = false, finished_ = false;
};

}  // namespace fleetsim
