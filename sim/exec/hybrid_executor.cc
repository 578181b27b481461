// The hybrid executor's uniform stretch: which steps are uniform, running them
// item by item over every rank (hybrid_items.cc: ComputeTime::add_all for
// compute, max arrival plus cost for collectives), where the handover falls,
// and the run as a whole: stretches at lockstep speed, the event executor
// between them.
#include "sim/exec/hybrid_executor.h"

#include <algorithm>

#include "sim/exec/event_executor.h"

namespace fleetsim {

namespace {

constexpr int kMaxLaunchQueue = 64;
constexpr size_t kWindowSteps = 8;  // simulated steps kept unreported at most
constexpr int64_t kWatchdogPollNs = 100'000'000;  // the watchdog's check grid (watchdog.cc)
// The `when` variables with one value on every rank at a step.
constexpr uint32_t kRankFreeVars = (1u << static_cast<unsigned>(Var::kStep)) |
                                   (1u << static_cast<unsigned>(Var::kWorldSize));

// Ops a uniform step may hold: each is enqueued without the CPU waiting.
bool uniform_op(OpKind k) {
  return k == OpKind::kCompute ||
         (is_collective(k) && k != OpKind::kSend && k != OpKind::kRecv && k != OpKind::kBarrier);
}

// The ops this executor times as collectives: a uniform step's collectives.
bool timed_collective(OpKind k) { return uniform_op(k) && k != OpKind::kCompute; }

}  // namespace

Eligibility hybrid_eligible(const Plan& plan) {
  Eligibility e;
  const auto& job = plan.scenario.job;
  int crashes = 0;
  for (const Fault& f : plan.step_faults) crashes += f.kind == FaultKind::kCrash;
  if (job.collective_model == CollectiveModel::kSteps) e.why = "collective_model: steps needs the event executor";
  else if (!plan.link_faults.empty() || !plan.nic_faults.empty() || !plan.absent_ranks.empty())
    e.why = "link, gpudirect, nic_affinity, nic_down and absent faults need the event executor";
  else if (job.backend == CommBackend::kGloo) e.why = "backend gloo needs the event executor";
  else if (crashes > 1) e.why = "more than one crash fault needs the event executor";
  else if (job.launch_queue > kMaxLaunchQueue) e.why = "launch_queue above 64 needs the event executor";
  else e.ok = true;
  return e;
}

HybridSim::HybridSim(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers,
                     StepAccounting* accounting)
    : plan_(plan), cost_(cost), obs_(observers), accounting_(accounting), compute_time_(plan), n_(plan.ranks) {
  accounted_ = dynamic_cast<const Observer*>(accounting);
  qcap_ = std::max(plan.scenario.job.launch_queue, 1) + 1;
  ring_ = 2 * qcap_ + 3 * (static_cast<int64_t>(plan.ops.size()) + 1) + 8;
  // Not zeroed: a row is written before it is read, and a flat item's never
  // is (the jitter-free baseline's run touches few of the ring's pages).
  end_ = std::make_unique_for_overwrite<int64_t[]>(static_cast<size_t>(ring_) * static_cast<size_t>(n_));
  filled_.assign(static_cast<size_t>(ring_), 0);
  meta_.resize(static_cast<size_t>(ring_));
  flat_.assign(static_cast<size_t>(ring_), kNotFlat);
  for (const Fault& f : plan.step_faults) first_fault_step_ = std::min(first_fault_step_, f.at_step);
  for (const Fault& f : plan.op_faults) first_fault_step_ = std::min(first_fault_step_, f.at_step);
  if (plan.scenario.job.watchdog) timeout_ns_ = plan.scenario.job.watchdog->ns;
  GroupTable table = group_table(plan, cost, timed_collective);
  groups_ = std::move(table.groups);
  op_cost_ = std::move(table.op_cost);
  int most = 1;
  for (size_t g = 0; g < groups_.size(); ++g) {
    lanes_.push_back(interleaved(static_cast<GroupKind>(g), groups_[g]));
    most = std::max(most, lanes_.back());
  }
  lane_arrival_.resize(static_cast<size_t>(most));
  lane_done_.resize(static_cast<size_t>(most));
}

int64_t HybridSim::op_cost(uint32_t op, GroupKind g, int instance) const {
  return op_cost_[op][groups_[static_cast<size_t>(g)].shape_class[static_cast<size_t>(instance)]];
}

// The ops (instruction, op) every rank runs at `step`, in order, up to the
// step's end or the first point where ranks may part: a `when` whose value
// differs between ranks (or fails to evaluate; the event executor reports it),
// or an op a uniform step may not hold. True if that is the whole step.
bool HybridSim::shared_path(int64_t step, Path* path) const {
  path->clear();
  const VarValues vars0 = plan_.vars(0, step);
  for (uint32_t pc = 0; pc < plan_.program.size();) {
    const Instr& in = plan_.program[pc];
    if (in.kind == InstrKind::kJump) { pc = in.target; continue; }
    if (in.kind == InstrKind::kBranch) {
      const Expr& e = plan_.exprs[in.index];
      int64_t v = 0;
      // Decided for every rank at once when it can be; else rank by rank.
      if (rank_dependent(e) && e.eval_partial(vars0, kRankFreeVars, &v)) {
        pc = v != 0 ? pc + 1 : in.target;
        continue;
      }
      if (!e.eval(vars0, &v)) return false;
      if (rank_dependent(e)) {
        for (int r = 1; r < n_; ++r) {
          int64_t vr = 0;
          if (!e.eval(plan_.vars(r, step), &vr) || (vr != 0) != (v != 0)) return false;
        }
      }
      pc = v != 0 ? pc + 1 : in.target;
      continue;
    }
    if (!uniform_op(plan_.ops[in.index].kind)) return false;
    path->emplace_back(pc, in.index);
    ++pc;
  }
  return true;
}

// The ops every rank runs at `step`, if the step is uniform: no fault from
// this step on, the whole step shared by every rank, and at least one op.
bool HybridSim::uniform_path(int64_t step, Path* path) const {
  if (step >= first_fault_step_) {
    path->clear();
    return false;
  }
  return shared_path(step, path) && !path->empty();
}

bool HybridSim::uniform(int64_t step, Path* path) {
  const auto si = static_cast<size_t>(step);
  if (si < not_uniform_.size() && not_uniform_[si]) return false;
  if (uniform_path(step, path)) return true;
  if (si >= not_uniform_.size()) not_uniform_.resize(si + 1, 0);
  not_uniform_[si] = 1;
  return false;
}

// Item next_item_ (the op `at` of `step`, or its marker when null) over every
// rank, its metadata first, then the starts a return fixed and the first
// watchdog check; moves on to the next item.
void HybridSim::next_item(int64_t step, const std::pair<uint32_t, uint32_t>* at, StepRec& rec, StepSums* sums) {
  ItemMeta& m = meta_[static_cast<size_t>(next_item_ % ring_)];
  m = ItemMeta{};
  m.step = step;
  m.records = records_;
  std::copy(std::begin(seq_), std::end(seq_), std::begin(m.seq));
  simulate_item(at, rec, sums);
  // After a return, a rank that had passed this item ran its next from the time FleetSim gave.
  for (; next_start_ < starts_.size() && starts_[next_start_].first == next_item_; ++next_start_) {
    const int r = starts_[next_start_].second;
    row(next_item_)[r] = ret_begun_[static_cast<size_t>(r)];
    flat_[static_cast<size_t>(next_item_ % ring_)] = kNotFlat;
  }
  // The first collective's enqueue arms the first watchdog check.
  if (timeout_ns_ >= 0 && watchdog_at_ < 0 && first_collective_ >= 0 && next_item_ >= first_collective_ - qcap_) {
    const int64_t k = first_collective_ - qcap_;
    int64_t enq = k < 0 || flat(k) == kNotFlat ? INT64_MAX : flat(k);
    if (enq == INT64_MAX)
      for (int r = 0; r < n_; ++r) enq = std::min(enq, end(k, r));
    armed_at_ = enq;
    watchdog_at_ = (enq + timeout_ns_ + kWatchdogPollNs - 1) / kWatchdogPollNs * kWatchdogPollNs;
  }
  ++next_item_;
}

// Runs `step` over every rank, one ring row per item. False if the ring would
// overwrite an item that an unreported step (or the handover) still needs.
bool HybridSim::simulate_step(int64_t step, const Path& path) {
  if (window_.size() == kWindowSteps) return false;
  if (spare_.empty()) spare_.emplace_back();
  StepRec rec = std::move(spare_.back());
  spare_.pop_back();
  rec.step = step;
  rec.first_item = next_item_;
  rec.partial = false;
  rec.last_arrival = Arrival{};
  rec.latest_rank = -1;
  // The step's first compute op and first collective over every rank store
  // their times rather than add them: no zeroing pass, unless none comes.
  // Without an accounting (the jitter-free baseline's run) nobody reads the
  // sums: they stay empty and are not kept.
  rec.compute.resize(accounting_ ? static_cast<size_t>(n_) : 0);
  rec.wait.resize(accounting_ ? static_cast<size_t>(n_) : 0);
  StepSums sums;
  const int64_t oldest_needed = (window_.empty() ? next_item_ : window_.front().first_item) - qcap_;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (next_item_ - ring_ >= 0 && next_item_ - ring_ >= oldest_needed) return false;
    next_item(step, i < path.size() ? &path[i] : nullptr, rec, &sums);
  }
  if (!sums.compute) std::fill(rec.compute.begin(), rec.compute.end(), 0);
  if (!sums.wait) std::fill(rec.wait.begin(), rec.wait.end(), 0);
  rec.marker_item = next_item_ - 1;
  window_.push_back(std::move(rec));
  last_step_ = step;
  return true;
}

// After the uniform steps, the ops every rank runs at the start of `step` (not
// uniform) before any rank's path parts from the others', at most a launch
// queue of them (so each ends after the handover, none straddles it): run
// like a uniform step's items, but for no step record. The handover then falls
// when the first CPU issues the last of them, not when it begins the step: as
// every CPU is still blocked on its full queue at a shared item, the event
// executor starts a queue's worth of items later. Returns that time, or -1 if
// there are none (or they do not fit in the kept history).
int64_t HybridSim::shared_prefix(int64_t step) {
  if (step >= first_fault_step_ || window_.empty()) return -1;
  shared_path(step, &path_);
  if (static_cast<int64_t>(path_.size()) > qcap_) path_.resize(static_cast<size_t>(qcap_));
  const auto len = static_cast<int64_t>(path_.size());
  if (len == 0 || next_item_ + len - 1 - ring_ >= window_.front().first_item - qcap_) return -1;
  StepRec& rec = prefix_rec_;  // keeps no sums; its arrival is not reported: the items end after the handover
  rec.step = step;
  rec.last_arrival = Arrival{};
  StepSums sums;
  for (const auto& at : path_) next_item(step, &at, rec, &sums);
  shared_items_ += len;
  return cpu_reaches_next_step();
}

// The earliest time a CPU issues the last simulated item (a step's marker: it
// then begins the next step): the GPU end of the item a launch queue before it.
int64_t HybridSim::cpu_reaches_next_step() const {
  const int64_t k = next_item_ - 1 - qcap_;
  if (k < 0) return 0;
  const auto slot = static_cast<size_t>(k % ring_);
  if (flat_[slot] != kNotFlat) return flat_[slot];  // every rank's, written out or not
  const int64_t* e = end_.get() + slot * static_cast<size_t>(n_);  // not flat: written out
  int64_t t = INT64_MAX;
  for (int r = 0; r < n_; ++r) t = std::min(t, e[r]);
  return t;
}

// Reports, oldest first, the kept steps that every rank finished before `before_ns`.
void HybridSim::feed_whole_steps(int64_t before_ns) {
  size_t fed = 0;
  for (; fed < window_.size(); ++fed) {
    StepRec& rec = window_[fed];
    int64_t last = 0;
    if (!rec.partial) {
      if (rec.latest_rank < 0) {  // found once: the marker's row does not change
        rec.latest_ns = 0;
        rec.latest_rank = 0;
        if (flat(rec.marker_item) != kNotFlat) {
          rec.latest_ns = flat(rec.marker_item);  // rank 0, the lowest
        } else {
          const int64_t* ends = row(rec.marker_item);
          for (int r = 0; r < n_; ++r)
            if (ends[r] > rec.latest_ns) {
              rec.latest_ns = ends[r];
              rec.latest_rank = r;
            }
        }
      }
      last = rec.latest_ns;
    } else {  // ranks that had finished it before the return are FleetSim's
      for (int r = 0; r < n_; ++r)
        if (ret_head_[static_cast<size_t>(r)] <= rec.marker_item) last = std::max(last, end(rec.marker_item, r));
    }
    if (last >= before_ns) break;
    if (rec.partial) {  // begun under the event executor: the rest rank by rank
      feed_partial(rec, INT64_MAX);
      fed_events_ += events_in(rec, INT64_MAX);
      continue;
    }
    if (rec.last_arrival.rank >= 0) {
      WorkRecord w;
      w.rank = rec.last_arrival.rank;
      w.step = rec.step;
      w.started = SimTime{rec.last_arrival.ns};
      for (Observer* o : obs_) o->on_work_started(w);
    }
    StepEnds ends;
    ends.step = rec.step;
    ends.end_ns = std::span<const int64_t>(ends_of(rec.marker_item), static_cast<size_t>(n_));
    ends.latest_ns = rec.latest_ns;
    ends.latest_rank = rec.latest_rank;
    for (Observer* o : obs_)
      if (o != accounted_) o->on_step_end_all(ends);
    if (accounting_) accounting_->on_step_accounted(rec.step, rec.compute, rec.wait);
    for (int64_t k = rec.first_item; k < rec.marker_item; ++k) {  // one event per kernel and per collective instance
      const ItemMeta& m = meta(k);
      fed_events_ += m.kind == ItemKind::kCompute
                         ? static_cast<uint64_t>(n_)
                         : static_cast<uint64_t>(groups_[static_cast<size_t>(plan_.ops[m.op].group)].count);
    }
  }
  for (size_t i = 0; i < fed; ++i) spare_.push_back(std::move(window_[i]));
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(fed));
}

// Simulates uniform steps from *step on, until one is not (*step then names
// it) or the watchdog's pending check comes first. Returns the handover time:
// when the first CPU begins the step after the last simulated, or the check;
// -1 if a step does not fit in the kept history.
int64_t HybridSim::stretch(int64_t* step) {
  const int64_t steps = plan_.scenario.job.steps;
  int64_t t = next_item_ > 0 ? cpu_reaches_next_step() : 0;  // after a return: past its resumed steps
  min_head_step_ = 0;
  const int64_t first = *step;
  for (; *step <= steps; ++*step) {
    if (watchdog_at_ >= 0 && t >= watchdog_at_) return watchdog_at_;  // no check may run before the handover
    if (!uniform(*step, &path_)) {
      min_head_step_ = *step + 1;
      break;
    }
    if (!simulate_step(*step, path_)) return -1;
    t = cpu_reaches_next_step();
    if (watchdog_at_ < 0 || t < watchdog_at_) feed_whole_steps(t);
  }
  if (*step > steps) min_head_step_ = steps + 1;  // the rest is the last steps' drain: no return
  if (watchdog_at_ >= 0 && t >= watchdog_at_) return watchdog_at_;
  if (*step <= steps && *step > first)  // a divergent step after uniform ones
    if (const int64_t later = shared_prefix(*step); later >= 0) t = later;
  if (watchdog_at_ >= 0 && t >= watchdog_at_) return watchdog_at_;
  return t;
}

// Runs the event executor from the handover at `since` until it ends, or until
// it is quiet with uniform steps ahead and take_back brings the run back (true).
bool HybridSim::run_events(FleetSim& sim, int64_t since, int64_t* step) {
  const int64_t steps = plan_.scenario.job.steps;
  int64_t next_try = since + try_every_ns_;
  for (;;) {
    while (sim.peek().ns < next_try && sim.step()) {
    }
    if (sim.peek() == SimTime::never()) return false;
    if (min_head_step_ > steps || min_head_step_ >= first_fault_step_) {  // nothing uniform ahead
      while (sim.step()) {
      }
      return false;
    }
    if (take_back(sim)) {
      *step = last_step_ + 1;
      return true;
    }
    next_try = sim.peek().ns + try_every_ns_;
  }
}

bool HybridSim::run(RunResult* out) {
  ret_head_.assign(static_cast<size_t>(n_), 0);
  ret_next_.assign(static_cast<size_t>(n_), 0);
  int64_t step = 1;
  std::unique_ptr<FleetSim> sim;
  for (;;) {
    const int64_t t = stretch(&step);
    if (t < 0 || (returns_ == 0 && t <= 0)) return false;  // a step too long for the ring, or none uniform
    if (returns_ == 0) try_every_ns_ = std::max<int64_t>(1000, t / std::max<int64_t>(last_step_, 1) / 4);
    sim.reset();  // the last one's state is not needed: at most one FleetSim at a time
    {
      Handover h;
      if (!hand_over(t, &h)) return false;
      sim = std::make_unique<FleetSim>(plan_, cost_, obs_);
      sim->resume(h);
    }
    if (!run_events(*sim, t, &step)) break;
  }
  *out = sim->finish();
  return out->errors.empty();
}

}  // namespace fleetsim
