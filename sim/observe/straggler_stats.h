// The straggler tax's evidence, per rank: how often the rank was the slowest
// in a step (the one that waited least in that step's collectives), how long
// it spun in collectives before their transfer began, and how long it computed.
// An Observer for the event executor; the lockstep executor reports the same
// numbers per step through StepAccounting, so both report alike.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "fleetsim/observer.h"

namespace fleetsim {

class StragglerStats final : public Observer, public StepAccounting {
 public:
  explicit StragglerStats(const Plan& plan);

  // Event executor callbacks.
  void on_compute(int rank, uint32_t op, int64_t step, SimTime begin, SimTime end, bool cpu) override;
  void on_transfer(const WorkRecord& w, SimTime begin, SimTime end, int64_t nic_bytes) override;
  void on_step_end(int rank, int64_t step, SimTime t) override;

  // Lockstep executor: a whole step at once.
  void on_step_accounted(int64_t step, std::span<const int64_t> compute_ns,
                         std::span<const int64_t> wait_ns) override;

  // Per rank, over the run: steps it was the slowest in (of the steps every
  // rank finished, ties to the lowest rank), collective wait and compute (ns).
  std::vector<int64_t> slowest_counts(int64_t steps_completed) const;
  const std::vector<int64_t>& wait_ns() const { return wait_ns_; }
  const std::vector<int64_t>& compute_ns() const { return compute_ns_; }

 private:
  void add_compute(int rank, int64_t ns) { compute_ns_[static_cast<size_t>(rank)] += ns; }
  void add_wait(int rank, int64_t ns) {
    wait_ns_[static_cast<size_t>(rank)] += ns;
    step_wait_ns_[static_cast<size_t>(rank)] += ns;
  }
  void end_step(int rank, int64_t step);
  std::pair<int64_t, size_t> sum_and_least(const int64_t* compute, const int64_t* wait, size_t n);

  struct StepBest {
    int64_t wait_ns = INT64_MAX;
    int32_t rank = -1;
  };
  std::vector<int64_t> wait_ns_, compute_ns_, step_wait_ns_;  // per rank
  std::vector<StepBest> best_;                                // per step ended so far
  bool per_op_waits_ = false;  // on_transfer has added to step_wait_ns_
};

}  // namespace fleetsim
