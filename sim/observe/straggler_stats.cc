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
  if (n == 0) return;
  const auto [least, who] = sum_and_least(compute_ns.data(), wait_ns.data(), n);
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

// Adds the step's compute and waits to the totals and finds the least wait
// and its lowest rank (n if every wait is INT64_MAX). Four lanes, each keeping
// the first least of the ranks it sees in rank order (rank r in lane r mod 4;
// the last n mod 4 in lane 0), so no compare waits on another lane's; merged
// by (wait, rank), they give what one pass in rank order gives.
std::pair<int64_t, size_t> StragglerStats::sum_and_least(const int64_t* compute, const int64_t* wait, size_t n) {
  struct Lane {
    int64_t least = INT64_MAX;
    size_t who;
  };
  int64_t* total_wait = wait_ns_.data();
  int64_t* total_compute = compute_ns_.data();
  auto visit = [&](Lane& lane, size_t r) {
    total_compute[r] += compute[r];
    const int64_t w = wait[r];
    total_wait[r] += w;
    if (w < lane.least) {
      lane.least = w;
      lane.who = r;
    }
  };
  Lane l0{INT64_MAX, n}, l1{INT64_MAX, n}, l2{INT64_MAX, n}, l3{INT64_MAX, n};
  size_t r = 0;
  for (; r + 4 <= n; r += 4) {
    visit(l0, r);
    visit(l1, r + 1);
    visit(l2, r + 2);
    visit(l3, r + 3);
  }
  for (; r < n; ++r) visit(l0, r);
  Lane best = l0;
  for (const Lane& l : {l1, l2, l3})
    if (l.least < best.least || (l.least == best.least && l.who < best.who)) best = l;
  return {best.least, best.who};
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
