// steps.csv and the step-time statistics of summary.json. A step is finished
// when every rank has finished it; its row is written at that moment. Its
// slowest_rank is the rank the others waited for: the last to reach any of the
// step's collectives (a collective ends at once on every member, so the last to
// finish says nothing), or the last to finish a step without collectives.
#pragma once

#include <cstdio>
#include <vector>

#include "fleetsim/observer.h"

namespace fleetsim {

struct StepStats {
  int64_t count = 0;
  double mean_s = 0, p50_s = 0, p99_s = 0, max_s = 0;
};

class StepTable final : public Observer {
 public:
  // `out` may be null: statistics are still kept.
  StepTable(const Plan& plan, std::FILE* out);

  void on_work_started(const WorkRecord& w) override;
  void on_step_end(int rank, int64_t step, SimTime t) override;
  void on_step_end_all(const StepEnds& e) override;
  void on_end(SimTime t, Outcome o) override;

  StepStats stats() const;
  const std::vector<int64_t>& durations_ns() const { return durations_; }

 private:
  struct Agg {
    int32_t count = 0;
    int32_t slowest = -1;     // the last rank to finish the step
    int32_t last_arrival = -1;  // the last rank to reach one of the step's collectives
    int64_t end_ns = 0;
    int64_t arrival_ns = 0;
  };
  // The step's aggregate; the table grows as steps are reached, never to
  // job.steps up front (a huge job.steps must not allocate before it runs).
  Agg& at(int64_t step);
  // Writes the step's row once its last rank is counted.
  void finish(int64_t step, const Agg& a);

  const Plan& plan_;
  std::FILE* out_;
  std::vector<Agg> agg_;  // per step reached so far
  std::vector<int64_t> durations_;
  int64_t prev_end_ = 0;
};

}  // namespace fleetsim
