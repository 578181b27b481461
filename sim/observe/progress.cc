// The run's progress observer (progress.h). It counts callbacks and consults the
// wall clock only every kCheckEvery of them, so the event loop pays an increment
// and a compare per event.
#include "sim/observe/progress.h"

#include <algorithm>

namespace fleetsim {
namespace {

constexpr uint32_t kCheckEvery = 4096;

class ProgressObserver final : public Observer {
 public:
  explicit ProgressObserver(const Plan& plan)
      : meter_("run", "steps", plan.scenario.job.steps), ranks_(std::max(plan.ranks, 1)) {}

  void on_step_end(int /*rank*/, int64_t /*step*/, SimTime t) override {
    ++step_ends_;
    tick(t);
  }
  void on_step_end_all(const StepEnds& e) override {
    if (e.end_ns.empty()) return;
    step_ends_ += static_cast<int64_t>(e.end_ns.size());
    tick(SimTime{e.end_ns.back()}, e.end_ns.size());
  }
  void on_tick(SimTime t) override { tick(t); }
  void on_end(SimTime t, Outcome /*o*/) override {
    meter_.update(step_ends_ / ranks_, t.to_seconds());
    meter_.finish();
  }

 private:
  // `n` callbacks' worth (a whole step of ranks counts as one per rank).
  void tick(SimTime t, size_t n = 1) {
    calls_ += n;
    if (calls_ < kCheckEvery) return;
    calls_ = 0;
    meter_.update(step_ends_ / ranks_, t.to_seconds());
  }

  ProgressMeter meter_;
  int64_t ranks_;
  int64_t step_ends_ = 0;
  size_t calls_ = 0;
};

}  // namespace

std::unique_ptr<Observer> make_progress_observer(const Plan& plan) {
  if (!progress_enabled()) return nullptr;
  return std::make_unique<ProgressObserver>(plan);
}

}  // namespace fleetsim
