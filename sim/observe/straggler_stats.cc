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
  if (w.started == SimTime::never()) return;
  add_wait(w.rank, (begin - w.started).ns);
  per_op_waits_ = true;
}

void StragglerStats::on_step_end(int rank, int64_t step, SimTime) { end_step(rank, step); }

// One pass over the ranks: the totals, and the step's least wait (lowest rank
// on ties) merged as end_step would merge it rank by rank. Per-op waits from
// the event callbacks (none under the lockstep executor) take the rank-by-rank way.
void StragglerStats::on_step_accounted(int64_t step, std::span<const int64_t> compute_ns,
                                       std::span<const int64_t> wait_ns) {
  if (per_op_waits_) {
    for (size_t r = 0; r < wait_ns.size(); ++r) {
      const int rank = static_cast<int>(r);
      add_compute(rank, compute_ns[r]);
      add_wait(rank, wait_ns[r]);
      end_step(rank, step);
    }
    return;
  }
  const size_t n = wait_ns.size();
  int64_t* total_wait = wait_ns_.data();
  int64_t* total_compute = compute_ns_.data();
  int64_t least = INT64_MAX;
  size_t who = n;
  for (size_t r = 0; r < n; ++r) {
    total_compute[r] += compute_ns[r];
    const int64_t w = wait_ns[r];
    total_wait[r] += w;
    if (w < least) {
      least = w;
      who = r;
    }
  }
  if (n == 0) return;
  const auto si = static_cast<size_t>(step);
  if (si >= best_.size()) best_.resize(si + 1);
  if (who == n) return;  // every wait INT64_MAX: end_step would keep the step's best too
  StepBest& b = best_[si];
  const auto rank = static_cast<int32_t>(who);
  if (least < b.wait_ns || (least == b.wait_ns && rank < b.rank)) {
    b.wait_ns = least;
    b.rank = rank;
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
