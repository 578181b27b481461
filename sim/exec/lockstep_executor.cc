// The lockstep executor. Why it matches the event executor on eligible plans:
// compute and collective enqueues take no CPU time, so a rank's CPU is never
// behind its GPU and the GPU never idles for lack of work; a GPU then runs its
// ops back to back, and a collective completes at max(member arrivals) + cost
// whatever order the events would have popped in. Steps end when the GPU
// finishes the step's last op. The watchdog check below bounds, per step, the
// time any collective could have spent since its CPU enqueue.
#include "sim/exec/lockstep_executor.h"

#include <algorithm>
#include <span>

namespace fleetsim {

namespace {

std::string where(const Plan& plan, uint32_t op_index) {
  const OpSource& s = plan.sources[plan.ops[op_index].source];
  return "op '" + s.name + "' (" + op_yaml_name(plan.ops[op_index].kind) + ") at " + s.loc.file + ":" +
         std::to_string(s.loc.line) + ":" + std::to_string(s.loc.col);
}

// The ops this executor times as collectives (send and recv are not eligible).
bool timed_collective(OpKind k) { return is_collective(k) && k != OpKind::kSend && k != OpKind::kRecv; }

}  // namespace

Eligibility lockstep_eligible(const Plan& plan) {
  Eligibility e;
  for (const Instr& in : plan.program) {
    if (in.kind == InstrKind::kBranch && rank_dependent(plan.exprs[in.index])) {
      e.why = "`when: " + plan.exprs[in.index].text() + "` depends on the rank";
      return e;
    }
    if (in.kind != InstrKind::kOp) continue;
    const OpKind k = plan.ops[in.index].kind;
    const bool ok = k == OpKind::kCompute || k == OpKind::kSync ||
                    (is_collective(k) && k != OpKind::kSend && k != OpKind::kRecv);
    if (!ok) {
      e.why = where(plan, in.index) + " needs the event executor";
      return e;
    }
  }
  if (plan.scenario.job.collective_model == CollectiveModel::kSteps) {  // times collectives from every member's arrival
    e.why = "collective_model: steps needs the event executor";
    return e;
  }
  if (!plan.link_faults.empty()) {  // degraded groups need their own collective times
    e.why = "link, gpudirect and nic_affinity faults need the event executor";
    return e;
  }
  if (!plan.step_faults.empty() || !plan.op_faults.empty() || !plan.absent_ranks.empty() ||
      !plan.nic_faults.empty()) {
    e.why = "stall, crash, skip, mismatch, absent and nic_down faults need the event executor";
    return e;
  }
  e.ok = true;
  return e;
}

LockstepSim::LockstepSim(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers,
                         StepAccounting* accounting)
    : plan_(plan), cost_(cost), obs_(observers), accounting_(accounting), compute_time_(plan), n_(plan.ranks) {
  clock_.assign(static_cast<size_t>(n_), 0);
  if (accounting_) {
    step_compute_.assign(static_cast<size_t>(n_), 0);
    step_wait_.assign(static_cast<size_t>(n_), 0);
  }
  GroupTable table = group_table(plan, cost, timed_collective);
  groups_ = std::move(table.groups);
  op_cost_ = std::move(table.op_cost);
  // The instances partition the ranks (collective() keeps range_ by that); a
  // lone instance is every rank in rank order.
  for (const GroupLayout& L : groups_) {
    if (L.count == 0) continue;
    FLEETSIM_CHECK(L.count * L.size == n_);
    FLEETSIM_CHECK(L.count != 1 || L.stride == 1);
  }
  const int qcap = std::max(plan.scenario.job.launch_queue, 1) + 1;
  min_end_.assign(static_cast<size_t>(qcap + 1), 0);
  if (plan.scenario.job.watchdog) timeout_ns_ = plan.scenario.job.watchdog->ns;
}

// The clocks' lowest value is needed only where a step ends on a compute op
// (a collective finds its own), so the compute loop leaves it to end_step.
void LockstepSim::compute(int64_t step, uint32_t op) {
  const auto sum = compute_stale_ ? ComputeTime::Sum::kStore : ComputeTime::Sum::kAdd;
  compute_time_.add_all(step, op, clock_.data(), accounting_ ? step_compute_.data() : nullptr, sum, &range_,
                        ComputeTime::Span::kHigh);
  low_known_ = false;
  compute_stale_ = false;
}

namespace {

// Sets every member's clock to `done` and (kWait 1: stores, 2: adds) its wait
// from its arrival to `latest`. Members are base, base + stride, ... < end; a
// stride of 1 gets its own loop, which the compiler vectorizes.
template <int kWait>
void finish_members(int64_t* clock, int64_t* wait, int base, int end, int stride, int64_t latest, int64_t done) {
  auto one = [&](size_t r) {
    if constexpr (kWait == 1) wait[r] = latest - clock[r];
    if constexpr (kWait == 2) wait[r] += latest - clock[r];
    clock[r] = done;
  };
  if (stride == 1) {
    for (auto r = static_cast<size_t>(base); r < static_cast<size_t>(end); ++r) one(r);
  } else {
    for (int r = base; r < end; r += stride) one(static_cast<size_t>(r));
  }
}

}  // namespace

// Every instance of the op's group: the members' latest arrival, then all of
// them done at once. A group of one instance holds every rank in rank order,
// so its latest arrival is the clocks' range, known from the op before.
void LockstepSim::collective(int64_t, uint32_t op) {
  const GroupKind g = plan_.ops[op].group;
  const GroupLayout& L = groups_[static_cast<size_t>(g)];
  const int64_t* cost = op_cost_[op].data();
  int64_t* clock = clock_.data();
  int64_t* wait = accounting_ ? step_wait_.data() : nullptr;
  const bool store = wait_stale_;
  wait_stale_ = false;
  ComputeTime::ClockRange ends;
  for (int inst = 0; inst < L.count; ++inst) {
    const int base = first_member(plan_, g, inst);
    const int end = base + L.size * L.stride;
    const Arrival a = L.count > 1 ? latest_arrival(clock, base, L) : Arrival{range_.hi, range_.hi_rank};
    keep_latest(a, &last_arrival_);
    const int64_t m = a.ns;
    const int64_t done = m + cost[L.shape_class[static_cast<size_t>(inst)]];
    if (wait && store) finish_members<1>(clock, wait, base, end, L.stride, m, done);
    else if (wait) finish_members<2>(clock, wait, base, end, L.stride, m, done);
    else finish_members<0>(clock, wait, base, end, L.stride, m, done);
    ends.lo = std::min(ends.lo, done);
    if (done > ends.hi || (done == ends.hi && base < ends.hi_rank)) {
      ends.hi = done;
      ends.hi_rank = base;  // the instance's lowest rank
    }
  }
  range_ = ends;
  low_known_ = true;
}

// Reports the step to observers; false if a collective of this step could
// have been timed out by the watchdog (its CPU enqueue is no earlier than the
// rank's end of the step launch_queue + 2 GPU-busy steps back).
bool LockstepSim::end_step(int64_t step) {
  if (last_arrival_.rank >= 0) {
    WorkRecord w;
    w.rank = last_arrival_.rank;
    w.step = step;
    w.started = SimTime{last_arrival_.ns};
    for (Observer* o : obs_) o->on_work_started(w);
    last_arrival_ = Arrival{};
  }
  report_ends(step);
  account_step(step);
  if (!low_known_) {
    range_.lo = *std::min_element(clock_.begin(), clock_.end());
    low_known_ = true;
  }
  const int64_t lo = range_.lo, hi = range_.hi;
  const size_t k = min_end_.size();
  const int64_t oldest = min_end_[static_cast<size_t>(step) % k];  // end of step - k (0 before step 1)
  if (timeout_ns_ >= 0 && hi - oldest >= timeout_ns_) return false;
  min_end_[static_cast<size_t>(step) % k] = lo;
  max_end_ = hi;
  return true;
}

void LockstepSim::report_ends(int64_t step) {
  const StepEnds e{step, clock_, range_.hi, range_.hi_rank};
  for (Observer* o : obs_) o->on_step_end_all(e);
}

// Hands the step's compute and waits to the accounting. The step's first
// compute op and first collective store their values rather than add them;
// an array no op wrote this step is zeroed here.
void LockstepSim::account_step(int64_t step) {
  if (!accounting_) return;
  if (compute_stale_) std::fill(step_compute_.begin(), step_compute_.end(), 0);
  if (wait_stale_) std::fill(step_wait_.begin(), step_wait_.end(), 0);
  accounting_->on_step_accounted(step, std::span<const int64_t>(step_compute_), std::span<const int64_t>(step_wait_));
  compute_stale_ = wait_stale_ = true;
}

bool LockstepSim::run(RunResult* out) {
  const int64_t steps = plan_.scenario.job.steps;
  for (int64_t s = 1; s <= steps; ++s) {
    const VarValues vars = plan_.vars(0, s);
    bool busy = false;
    for (uint32_t pc = 0; pc < plan_.program.size();) {
      const Instr& in = plan_.program[pc];
      if (in.kind == InstrKind::kJump) { pc = in.target; continue; }
      if (in.kind == InstrKind::kBranch) {
        int64_t v = 0;
        if (!plan_.exprs[in.index].eval(vars, &v)) return false;  // FleetSim reports the error
        pc = v != 0 ? pc + 1 : in.target;
        continue;
      }
      const OpKind k = plan_.ops[in.index].kind;
      if (k == OpKind::kCompute) { compute(s, in.index); busy = true; }
      else if (k != OpKind::kSync) { collective(s, in.index); busy = true; }
      ++pc;
    }
    if (!busy) {
      // A step without GPU work ends where the GPU already is; the watchdog
      // ring only advances on steps that queue work, so skip its update.
      report_ends(s);
      account_step(s);
      continue;
    }
    if (!end_step(s)) return false;
  }
  RunResult r;
  r.outcome = Outcome::kCompleted;
  r.end = SimTime{max_end_};
  r.steps_completed = steps;
  r.events = 0;
  for (Observer* o : obs_) o->on_end(r.end, r.outcome);
  *out = r;
  return true;
}

double LockstepSim::bytes_per_rank() const {
  size_t b = clock_.capacity() * sizeof(int64_t) + static_cast<size_t>(n_) * ComputeTime::kBytesPerRank;
  for (const GroupLayout& L : groups_) b += L.shape_class.capacity() * sizeof(uint16_t);
  b += (step_compute_.capacity() + step_wait_.capacity()) * sizeof(int64_t);
  return static_cast<double>(b) / n_;
}

}  // namespace fleetsim
