// Straggler bookkeeping. A collective's wait is the time from the rank's GPU
// reaching it (WorkRecord::started) to the transfer's start, when the last
// member arrived; the rank that waited least in a step held the others up.
#include "sim/observe/straggler_stats.h"

namespace fleetsim {

StragglerStats::StragglerStats(const Plan& plan)
    : wait_ns_(static_cast<size_t>(plan.ranks), 0),
      compute_ns_(static_cast<size_t>(plan.ranks), 0),
      step_wait_ns_(static_cast<size_t>(plan.ranks), 0) {}

void StragglerStats::on_compute(int rank, uint32_t, int64_t, SimTime begin, SimTime end, bool cpu) {
  if (!cpu) add_compute(rank, (end - begin).ns);
}

void StragglerStats::on_transfer(const WorkRecord& w, SimTime begin, SimTime, int64_t) {
  if (w.started != SimTime::never()) add_wait(w.rank, (begin - w.started).ns);
}

void StragglerStats::on_step_end(int rank, int64_t step, SimTime) { end_step(rank, step); }

void StragglerStats::on_step_accounted(int64_t step, std::span<const int64_t> compute_ns,
                                       std::span<const int64_t> wait_ns) {
  for (size_t r = 0; r < wait_ns.size(); ++r) {
    const int rank = static_cast<int>(r);
    add_compute(rank, compute_ns[r]);
    add_wait(rank, wait_ns[r]);
    end_step(rank, step);
  }
}

void StragglerStats::end_step(int rank, int64_t step) {
  const auto ru = static_cast<size_t>(rank);
  const auto si = static_cast<size_t>(step);
  if (si >= best_.size()) best_.resize(si + 1);  // grows as steps end, not to job.steps up front
  StepBest& b = best_[si];
  const int64_t w = step_wait_ns_[ru];
  if (w < b.wait_ns || (w == b.wait_ns && rank < b.rank)) {
    b.wait_ns = w;
    b.rank = rank;
  }
  step_wait_ns_[ru] = 0;
}

std::vector<int64_t> StragglerStats::slowest_counts(int64_t steps_completed) const {
  std::vector<int64_t> counts(wait_ns_.size(), 0);
  for (int64_t s = 1; s <= steps_completed && s < static_cast<int64_t>(best_.size()); ++s) {
    const StepBest& b = best_[static_cast<size_t>(s)];
    if (b.rank >= 0) ++counts[static_cast<size_t>(b.rank)];
  }
  return counts;
}

}  // namespace fleetsim
