// The engine loop. start() sets the ranks going; step() pops the next event and
// dispatches it on its kind; a rank whose CPU or GPU an event concerns then
// advances (both streams run until neither can move). The parts do the work; the
// loop only routes events and decides when the run is over.
#include "sim/exec/event_executor.h"

#include <algorithm>

namespace fleetsim {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kCompleted: return "completed";
    case Outcome::kHang: return "hang";
    case Outcome::kCrash: return "crash";
    case Outcome::kDeadlock: return "deadlock";
  }
  return "?";
}

FleetSim::FleetSim(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers)
    : ctx_(plan, cost, observers),
      gpu_(ctx_),
      fabric_(ctx_, gpu_),
      watchdog_(ctx_, gpu_),
      matcher_(ctx_, gpu_, fabric_),
      faults_(ctx_, gpu_, matcher_),
      cpu_(ctx_, gpu_, watchdog_, fabric_, faults_) {}

void FleetSim::start() {
  gpu_.allocate();
  faults_.mark_absent();
  for (int r = 0; r < ctx_.n; ++r)
    if (!ctx_.dead(r)) cpu_.begin_step(r);
  for (int r = 0; r < ctx_.n && !ctx_.stop; ++r) advance(r);
  const int64_t period = ctx_.plan.scenario.job.telemetry_period.ns;
  if (period > 0) ctx_.schedule(period, Priority::kObserve, kTick);
}

void FleetSim::resume(Handover& h) {
  const auto n = static_cast<size_t>(ctx_.n);
  FLEETSIM_CHECK(h.ranks.size() == n && h.qlen == gpu_.capacity() && h.queue.size() == n * h.qlen);
  std::vector<int64_t> finished(n);
  for (size_t r = 0; r < n; ++r) finished[r] = h.ranks[r].finished_step;
  gpu_.adopt_all(std::move(h.queue), finished);
  h.queue.clear();
  for (int r = 0; r < ctx_.n; ++r) {
    const Handover::Rank& hr = h.ranks[static_cast<size_t>(r)];
    cpu_.adopt_blocked(r, hr.cpu_step, hr.cpu_pc, hr.records, hr.seq);
    if (GpuItem& head = gpu_.head(r); head.kind == ItemKind::kCollective) matcher_.adopt_arrival(r, head);
  }
  watchdog_.adopt(h.watchdog_at, h.watchdog_gen);
  for (const Event& e : h.pending) ctx_.sched.schedule(e);
  ctx_.result.events = h.events;
}

bool FleetSim::hand_back(Handover* h, int64_t min_step, int* probe) {
  const RunResult& res = ctx_.result;
  if (over() || res.outcome != Outcome::kCompleted || !res.errors.empty() || !res.hang.timed_out_ranks.empty())
    return false;
  const int n = ctx_.n;
  for (int i = 0; i < n; ++i) {  // cheap checks first, from the rank that failed last
    const int r = (*probe + i) % n;
    if (ctx_.dead(r) || !gpu_.full(r) || !gpu_.busy(r) || !cpu_.blocked_on_queue(r) || gpu_.head(r).step < min_step) {
      *probe = r;
      return false;
    }
  }
  const uint32_t q = gpu_.capacity();
  h->ranks.assign(static_cast<size_t>(n), Handover::Rank{});
  h->qlen = q;
  h->queue.resize(static_cast<size_t>(n) * q);
  for (int r = 0; r < n; ++r) {
    Handover::Rank& hr = h->ranks[static_cast<size_t>(r)];
    if (!cpu_.blocked_position(r, &hr)) {
      *probe = r;
      return false;
    }
    hr.finished_step = gpu_.finished_step(r);
    for (uint32_t i = 0; i < q; ++i) h->queue[static_cast<size_t>(r) * q + i] = gpu_.item(r, i);
  }
  h->pending.clear();
  h->watchdog_at = watchdog_.pending_at();
  h->watchdog_gen = watchdog_.generation();
  h->events = res.events;
  h->at = ctx_.sched.peek().ns;
  h->agenda = ctx_.sched.pending();
  return true;
}

bool FleetSim::over() const { return all_done_ || ctx_.stop || !ctx_.sched.live(); }

// The next event, if it concerns one rank's CPU or GPU (a kernel or cpu op end).
const Event* FleetSim::rank_event_next() const {
  const Event* e = ctx_.sched.next();
  return e && (e->kind == kGpuDone || e->kind == kCpuWake) ? e : nullptr;
}

// Events of a large fleet touch each rank's state in no cache-friendly order
// (kernel ends jitter), so each step hints the next event's rank into the cache
// while it handles this one: its per-rank words first, then (their head index
// now loaded) its queue's head item. Hints only: the run is unchanged.
bool FleetSim::step() {
  if (over()) return false;
  const Event e = ctx_.sched.pop();
  ++ctx_.result.events;
  if (const Event* next = rank_event_next()) {
    const int r = static_cast<int>(next->a);
    gpu_.prefetch_state(r);
    cpu_.prefetch_state(r);
    ctx_.prefetch_dead(r);
  }
  dispatch(e);
  if (const Event* next = rank_event_next(); next && next->kind == kGpuDone)
    gpu_.prefetch_head(static_cast<int>(next->a));
  all_done_ = gpu_.ranks_done() == ctx_.n && ctx_.result.outcome == Outcome::kCompleted;
  return true;
}

SimTime FleetSim::peek() const { return over() ? SimTime::never() : ctx_.sched.peek(); }

void FleetSim::run_until(SimTime t) {
  while (peek() <= t && step()) {
  }
}

RunResult FleetSim::run() {
  start();
  while (step()) {
  }
  return finish();
}

void FleetSim::dispatch(const Event& e) {
  switch (static_cast<EventKind>(e.kind)) {
    case kCpuWake:
      cpu_.wake(static_cast<int>(e.a));
      advance(static_cast<int>(e.a));
      break;
    case kGpuDone:
      if (gpu_.kernel_done(static_cast<int>(e.a), e.b)) advance(static_cast<int>(e.a));
      break;
    case kCollDone: {
      const auto g = static_cast<GroupKind>(e.a);
      const auto inst = static_cast<int>(e.b);
      if (!matcher_.complete_collective(g, inst)) break;
      for (int i = 0; i < ctx_.plan.group_size(g); ++i) advance(ctx_.plan.group_member(g, inst, i));
      break;
    }
    case kP2pDone: {
      int sender = -1, receiver = -1;
      if (!matcher_.complete_p2p(e.a, &sender, &receiver)) break;
      advance(sender);
      advance(receiver);
      break;
    }
    case kTick:
      for (Observer* o : ctx_.obs) o->on_tick(ctx_.now());
      if (ctx_.sched.live())
        ctx_.schedule(ctx_.now().ns + ctx_.plan.scenario.job.telemetry_period.ns, Priority::kObserve, kTick);
      break;
    case kWatchdog: watchdog_.check(e.b); break;
    case kDumpAll: watchdog_.dump_all(); break;
    case kAbort: ctx_.stop = true; break;
    case kNicError: nic_error(static_cast<int>(e.a)); break;
    case kGlooMismatch: gloo_mismatch(e.a, e.b); break;
  }
}

// Runs rank r's GPU and CPU until neither can move: the GPU starts what is at
// the head of its queue (arriving at a collective hands it to matching), the
// CPU issues what the queue has room for.
void FleetSim::advance(int r) {
  for (int guard = 0; !ctx_.stop; ++guard) {
    FLEETSIM_DCHECK(guard < 1'000'000);
    GpuItem* arrived = nullptr;
    bool moved = gpu_.progress(r, &arrived);
    if (arrived) matcher_.arrive(r, *arrived);
    moved = cpu_.progress(r) || moved;
    if (!moved) return;
  }
}

// The IB error of NIC fault k takes down every live rank the NIC serves.
void FleetSim::nic_error(int k) {
  const Fault logged = fabric_.error_fault(k);
  for (int r = 0; r < ctx_.n; ++r)
    if (fabric_.error_hits(k, r) && !ctx_.dead(r)) faults_.crash(r, cpu_.step(r), logged);
}

// gloo found a matched op whose members' sizes differ (matching.cc): each member
// that receives a message larger than its op expects aborts (gloo's
// EnforceNotMet); the others then see the connection close and fail too. gloo's
// ring sends chunks of S/(2n) (a 1 MiB all-reduce on 4 ranks: 131072-byte
// messages, measured with torch 2.15's gloo).
void FleetSim::gloo_mismatch(uint32_t group, uint32_t instance) {
  std::vector<int>& m = gloo_members_;
  std::vector<int64_t>& bytes = gloo_bytes_;
  m.clear();
  int n = 2;
  if (group == kP2pGroup) {
    const int snd = static_cast<int>(instance / 2);
    m = {snd + ((instance % 2) == 0 ? 1 : -1) * ctx_.plan.tp * ctx_.plan.dp, snd};  // receiver first
  } else {
    const auto g = static_cast<GroupKind>(group);
    n = ctx_.plan.group_size(g);
    for (int i = 0; i < n; ++i) m.push_back(ctx_.plan.group_member(g, static_cast<int>(instance), i));
  }
  bytes.clear();
  int64_t largest = 0;
  for (int r : m) {
    if (ctx_.dead(r)) return;  // already torn down by an earlier failure
    bytes.push_back(gpu_.head(r).work.bytes);
    largest = std::max(largest, bytes.back());
  }
  const auto chunk = [&](int64_t b, int64_t elem) {
    return group == kP2pGroup ? b : std::max(b / (2 * static_cast<int64_t>(n)), std::min(b, elem));
  };
  for (const bool smaller : {true, false}) {
    for (size_t i = 0; i < m.size(); ++i) {
      const int r = m[i];
      if ((bytes[i] < largest) != smaller) continue;
      const WorkRecord& w = gpu_.head(r).work;
      const int64_t elem = dtype_bytes(w.dtype);
      const BackendFailure f = smaller ? BackendFailure::kSizeMismatch : BackendFailure::kPeerClosed;
      for (Observer* o : ctx_.obs) o->on_backend_failure(r, ctx_.now(), f, w, chunk(largest, elem), chunk(bytes[i], elem));
      faults_.backend_abort(r, gpu_.head(r).step);
    }
  }
}

// The step `r` is stuck in: that of its oldest unfinished GPU item, else its CPU's.
int64_t FleetSim::stuck_step(int r) {
  const int64_t steps = ctx_.plan.scenario.job.steps;
  if (gpu_.finished_step(r) == steps) return INT64_MAX;
  if (gpu_.queued(r) > 0) return gpu_.head(r).step;
  return std::min(cpu_.step(r), steps);
}

RunResult FleetSim::finish() {
  RunResult& res = ctx_.result;
  res.end = ctx_.now();
  if (!ctx_.stop && gpu_.ranks_done() < ctx_.n) {
    res.outcome = Outcome::kDeadlock;
    int64_t lowest = INT64_MAX;
    for (int r = 0; r < ctx_.n; ++r) lowest = std::min(lowest, stuck_step(r));
    res.stuck_step = lowest;
  }
  if (res.outcome == Outcome::kHang) {
    int64_t lowest = INT64_MAX;
    for (int r = 0; r < ctx_.n; ++r) lowest = std::min(lowest, stuck_step(r));
    res.hang.step = lowest;
  }
  int64_t completed = INT64_MAX;
  for (int r = 0; r < ctx_.n; ++r) completed = std::min(completed, gpu_.finished_step(r));
  res.steps_completed = completed;
  if (res.errors.empty())
    for (Observer* o : ctx_.obs) o->on_end(ctx_.now(), res.outcome);
  return res;
}

RunResult run_simulation(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers) {
  FleetSim sim(plan, cost, observers);
  return sim.run();
}

}  // namespace fleetsim
