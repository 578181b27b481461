// Executor choice and the jitter-free baseline: analytic for uniform
// lockstep-eligible plans, else a run of the jitter-free plan whose step
// durations are measured as steps.csv measures them.
#include "sim/exec/executor.h"

#include <algorithm>
#include <memory>
#include <vector>

namespace fleetsim {

const char* executor_name(ExecutorKind k) {
  switch (k) {
    case ExecutorKind::kLockstep: return "lockstep";
    case ExecutorKind::kHybrid: return "hybrid";
    case ExecutorKind::kEvent: break;
  }
  return "event";
}

namespace {

// A step's duration, as steps.csv has it: from the end of the previous step
// (the moment its last rank finished it) to the moment the last rank finishes
// this one. Keeps only their sum and count.
class StepDurations final : public Observer {
 public:
  explicit StepDurations(const Plan& plan)
      : ranks_(plan.ranks) {}

  void on_step_end(int /*rank*/, int64_t step, SimTime t) override { ended(step, 1, t.ns); }
  // The same as on_step_end for each rank, without a call per rank.
  void on_step_end_all(const StepEnds& e) override {
    ended(e.step, static_cast<int32_t>(e.end_ns.size()), e.latest_ns);
  }
  double mean_ns() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_ns_ / static_cast<long double>(count_)); }

 private:
  // `ranks` more ranks ended `step`, the latest of them at `latest_ns`.
  void ended(int64_t step, int32_t ranks, int64_t latest_ns) {
    const auto i = static_cast<size_t>(step);
    if (i >= agg_.size()) agg_.resize(i + 1);  // grows as steps end, not to job.steps up front
    Agg& a = agg_[i];
    a.end_ns = std::max(a.end_ns, latest_ns);
    a.count += ranks;
    if (a.count < ranks_) return;
    sum_ns_ += static_cast<long double>(a.end_ns - prev_end_);
    ++count_;
    prev_end_ = a.end_ns;
  }

  struct Agg {
    int32_t count = 0;
    int64_t end_ns = 0;
  };
  int ranks_;
  std::vector<Agg> agg_;  // per step ended so far
  int64_t prev_end_ = 0;
  long double sum_ns_ = 0;
  int64_t count_ = 0;
};

// True if every instance of every group the plan's collectives use has the same shape.
bool uniform_groups(const Plan& plan) {
  bool used[kGroupKinds] = {};
  for (const PlanOp& op : plan.ops)
    if (is_collective(op.kind)) used[static_cast<size_t>(op.group)] = true;
  for (int gi = 0; gi < kGroupKinds; ++gi) {
    const auto g = static_cast<GroupKind>(gi);
    if (!used[gi] || !plan.group_exists(g)) continue;
    const GroupShape s0 = plan.group_shape(g, 0);
    for (int i = 1; i < plan.group_count(g); ++i) {
      const GroupShape s = plan.group_shape(g, i);
      if (s.ranks != s0.ranks || s.nodes != s0.nodes || s.ranks_per_node != s0.ranks_per_node) return false;
    }
  }
  return true;
}

// One representative rank of a jitter-free, fault-free, uniform plan.
Baseline analytic_baseline(const Plan& p, const CostModel& cost) {
  // Each collective's time on first use: group_shape walks every member, too
  // slow to repeat each step at 131,072 ranks.
  std::vector<int64_t> collective_ns(p.ops.size(), -1);
  int64_t clock = 0;
  for (int64_t s = 1; s <= p.scenario.job.steps; ++s) {
    const VarValues vars = p.vars(0, s);
    for (uint32_t pc = 0; pc < p.program.size();) {
      const Instr& in = p.program[pc];
      if (in.kind == InstrKind::kJump) { pc = in.target; continue; }
      if (in.kind == InstrKind::kBranch) {
        int64_t v = 0;
        if (!p.exprs[in.index].eval(vars, &v)) v = 0;
        pc = v != 0 ? pc + 1 : in.target;
        continue;
      }
      const PlanOp& op = p.ops[in.index];
      if (op.kind == OpKind::kCompute) clock += op.time.ns;
      else if (op.kind != OpKind::kSync) {
        int64_t& ns = collective_ns[in.index];
        if (ns < 0) ns = cost.collective_time(op.kind, op.bytes, p.group_shape(op.group, 0)).ns;
        clock += ns;
      }
      ++pc;
    }
  }
  return {static_cast<double>(clock) / static_cast<double>(p.scenario.job.steps), "analytic"};
}

}  // namespace

Baseline baseline_step(const Plan& plan, const CostModel& cost) {
  const Plan p = jitter_free(plan);
  if (lockstep_eligible(p).ok && uniform_groups(p)) return analytic_baseline(p, cost);
  std::unique_ptr<StepDurations> steps;
  const Executed ex = execute_plan(p, cost, FastExecutors{true, true}, [&](ExecutorKind, StepAccounting**) {
    steps = std::make_unique<StepDurations>(p);
    return std::vector<Observer*>{steps.get()};
  });
  Baseline b;
  b.mean_step_ns = steps->mean_ns();
  b.how = executor_name(ex.executor);
  return b;
}

}  // namespace fleetsim
