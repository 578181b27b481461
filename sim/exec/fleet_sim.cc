// The executor's state machines. A rank's CPU interprets its step program and
// enqueues GPU items (compute, collectives, p2p, step markers) into a bounded
// launch queue; its GPU runs the queue in order. Collectives match by per-group
// order; a mismatched or incomplete match never completes, and its members spin.
// The watchdog times collectives from their CPU enqueue, as ProcessGroupNCCL does.
#include "sim/exec/fleet_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>

#include "fleetsim/rng.h"

namespace fleetsim {

namespace {
constexpr int64_t kWatchdogPollNs = 100'000'000;   // kWatchdogThreadSleepMillis = 100
constexpr int64_t kMonitorPollNs = 1'000'000'000;  // TORCH_NCCL_COORD_CHECK_MILSEC = 1000
int64_t ceil_to(int64_t t, int64_t q) { return (t + q - 1) / q * q; }
}  // namespace

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
    : plan_(plan), cost_(cost), obs_(observers), n_(plan.ranks), compute_time_(plan) {
  const auto n = static_cast<size_t>(n_);
  qcap_ = static_cast<uint32_t>(std::max(plan.scenario.job.launch_queue, 1) + 1);  // +1: step marker
  cpu_.assign(n, CpuState::kReady);
  pc_.assign(n, 0);
  step_.assign(n, 1);
  finished_step_.assign(n, 0);
  gpu_busy_.assign(n, 0);
  gpu_gen_.assign(n, 0);
  qhead_.assign(n, 0);
  qlen_.assign(n, 0);
  queue_.resize(n * qcap_);
  next_record_.assign(n, 0);
  coll_seq_.assign(n * kGroupKinds, 0);
  p2p_seq_.assign(n * kGroupKinds, 0);
  op_seq_.assign(n * kGroupKinds, 0);
  has_op_fault_.assign(n, 0);
  dumped_.assign(n, 0);
  for (const Fault& f : plan.op_faults) has_op_fault_[static_cast<size_t>(f.ranks[0])] = 1;
  for (int g = 0; g < kGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (plan.group_exists(kind)) slots_[static_cast<size_t>(g)].resize(static_cast<size_t>(plan.group_count(kind)));
  }
  if (plan.pp_group) p2p_.resize(n * 2);
  for (int g = 0; g < kGroupKinds && !plan.link_faults.empty(); ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (!plan.group_exists(kind)) continue;
    auto& idx = degraded_index_[static_cast<size_t>(g)];
    idx.assign(static_cast<size_t>(plan.group_count(kind)), -1);
    for (int i = 0; i < plan.group_count(kind); ++i) {
      auto d = plan.group_degradations(kind, i);
      if (d.empty()) continue;
      idx[static_cast<size_t>(i)] = static_cast<int32_t>(degraded_.size());
      degraded_.push_back(std::move(d));
    }
  }
  want_arrivals_ = cost.wants_arrivals();
  for (int g = 0; g < kGroupKinds && want_arrivals_; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (plan.group_exists(kind))
      arrivals_[static_cast<size_t>(g)].assign(
          static_cast<size_t>(plan.group_count(kind)) * static_cast<size_t>(plan.group_size(kind)), 0);
  }
  if (plan.scenario.job.watchdog) timeout_ns_ = plan.scenario.job.watchdog->ns;
  nic_down_at_.assign(plan.nic_faults.size(), -1);
  nic_err_pending_.assign(plan.nic_faults.size(), 0);
  nic_err_group_.assign(plan.nic_faults.size(), GroupKind::kWorld);
  q_.reserve(n * 2 + 16);
}

void FleetSim::schedule(int64_t t, Priority p, EventKind k, uint32_t a, uint32_t b, uint32_t c) {
  Event e;
  e.time_ns = t;
  e.priority = p;
  e.kind = k;
  e.a = a;
  e.b = b;
  e.c = c;
  if (k != kTick) ++live_;
  q_.push(e);
}

RunResult FleetSim::run() {
  for (int r : plan_.absent_ranks) {
    cpu_[static_cast<size_t>(r)] = CpuState::kCrashed;  // never started: no process, no dump
    for (const Fault& f : plan_.scenario.faults)
      if (f.kind == FaultKind::kAbsent)
        for (Observer* o : obs_) o->on_fault(r, now_, f);
  }
  for (int r = 0; r < n_; ++r)
    if (cpu_[static_cast<size_t>(r)] != CpuState::kCrashed) begin_step(r);
  for (int r = 0; r < n_ && !stop_; ++r) advance(r);
  const int64_t period = plan_.scenario.job.telemetry_period.ns;
  if (period > 0) schedule(period, Priority::kObserve, kTick);
  while (!stop_ && live_ > 0 && !q_.empty()) {
    const Event e = q_.pop();
    now_ = SimTime{e.time_ns};
    if (e.kind != kTick) --live_;
    ++result_.events;
    dispatch(e);
    if (ranks_done_ == n_ && result_.outcome == Outcome::kCompleted) break;
  }
  result_.end = now_;
  if (!stop_ && ranks_done_ < n_) {
    result_.outcome = Outcome::kDeadlock;
    int64_t lowest = INT64_MAX;
    for (int r = 0; r < n_; ++r) lowest = std::min(lowest, stuck_step(r));
    result_.stuck_step = lowest;
  }
  if (result_.outcome == Outcome::kHang) {
    int64_t lowest = INT64_MAX;
    for (int r = 0; r < n_; ++r) lowest = std::min(lowest, stuck_step(r));
    result_.hang.step = lowest;
  }
  result_.steps_completed = *std::min_element(finished_step_.begin(), finished_step_.end());
  if (result_.errors.empty())
    for (Observer* o : obs_) o->on_end(now_, result_.outcome);
  return result_;
}

void FleetSim::dispatch(const Event& e) {
  switch (static_cast<EventKind>(e.kind)) {
    case kCpuWake: {
      const int r = static_cast<int>(e.a);
      if (cpu_[static_cast<size_t>(r)] == CpuState::kBusy) cpu_[static_cast<size_t>(r)] = CpuState::kReady;
      advance(r);
      break;
    }
    case kGpuDone: {
      const int r = static_cast<int>(e.a);
      if (e.b != gpu_gen_[static_cast<size_t>(r)]) break;  // the rank crashed meanwhile
      GpuItem& h = head(r);
      for (Observer* o : obs_) o->on_compute(r, h.work.op, h.step, h.begun, now_, false);
      gpu_busy_[static_cast<size_t>(r)] = 0;
      set_gpu(r, GpuState::kIdle, h.step);
      pop_item(r);
      advance(r);
      break;
    }
    case kCollDone: complete_collective(static_cast<GroupKind>(e.a), static_cast<int>(e.b)); break;
    case kP2pDone: complete_p2p(e.a); break;
    case kTick:
      for (Observer* o : obs_) o->on_tick(now_);
      if (live_ > 0) schedule(now_.ns + plan_.scenario.job.telemetry_period.ns, Priority::kObserve, kTick);
      break;
    case kWatchdog:
      if (e.b == watchdog_gen_) {
        watchdog_at_ = -1;
        watchdog_check();
      }
      break;
    case kDumpAll:
      for (int r = 0; r < n_; ++r) {
        if (dumped_[static_cast<size_t>(r)] || cpu_[static_cast<size_t>(r)] == CpuState::kCrashed) continue;
        dumped_[static_cast<size_t>(r)] = 1;
        for (Observer* o : obs_) {
          o->on_log(r, now_, "[PG ID 0 PG GUID 0(default_pg) Rank " + std::to_string(r) +
                                 "] Observed flight recorder dump signal from another rank via TCPStore.");
          o->on_dump(r, now_);
        }
      }
      break;
    case kAbort:
      stop_ = true;
      break;
    case kNicError: nic_error(static_cast<int>(e.a)); break;
  }
}

void FleetSim::advance(int r) {
  for (int guard = 0; !stop_; ++guard) {
    FLEETSIM_DCHECK(guard < 1'000'000);
    bool moved = gpu_progress(r);
    moved = cpu_progress(r) || moved;
    if (!moved) return;
  }
}

void FleetSim::set_gpu(int r, GpuState s, int64_t step) {
  for (Observer* o : obs_) o->on_gpu_state(r, now_, s, step);
}

FleetSim::GpuItem& FleetSim::push_item(int r) {
  const auto ru = static_cast<size_t>(r);
  FLEETSIM_DCHECK(qlen_[ru] < qcap_);
  const uint32_t idx = (qhead_[ru] + qlen_[ru]) % qcap_;
  ++qlen_[ru];
  GpuItem& it = queue_[ru * qcap_ + idx];
  it = GpuItem{};
  return it;
}

void FleetSim::pop_item(int r) {
  const auto ru = static_cast<size_t>(r);
  FLEETSIM_DCHECK(qlen_[ru] > 0);
  qhead_[ru] = (qhead_[ru] + 1) % qcap_;
  --qlen_[ru];
}

// Starts whatever is at the head of an idle GPU. Step markers complete inline.
bool FleetSim::gpu_progress(int r) {
  const auto ru = static_cast<size_t>(r);
  bool moved = false;
  while (!gpu_busy_[ru] && qlen_[ru] > 0 && cpu_[ru] != CpuState::kCrashed) {
    GpuItem& h = head(r);
    moved = true;
    if (h.kind == ItemKind::kStepMarker) {
      const int64_t s = h.step;
      pop_item(r);
      finish_step(r, s);
      continue;
    }
    gpu_busy_[ru] = 1;
    h.begun = now_;
    if (h.kind == ItemKind::kCompute) {
      set_gpu(r, GpuState::kCompute, h.step);
      schedule(now_.ns + h.dur_ns, Priority::kNormal, kGpuDone, static_cast<uint32_t>(r), gpu_gen_[ru]);
      break;
    }
    h.work.started = now_;
    h.work.state = WorkState::kStarted;
    set_gpu(r, GpuState::kSpin, h.step);
    for (Observer* o : obs_) o->on_work_started(h.work);
    if (h.kind == ItemKind::kCollective) arrive(r, h); else arrive_p2p(r, h);
    break;
  }
  return moved;
}

bool FleetSim::cpu_progress(int r) {
  const auto ru = static_cast<size_t>(r);
  switch (cpu_[ru]) {
    case CpuState::kBlockedQueue:
      if (queue_full(r)) return false;
      cpu_[ru] = CpuState::kReady;
      interpret(r);
      return true;
    case CpuState::kBlockedSync:
      if (qlen_[ru] > 0 || gpu_busy_[ru]) return false;
      cpu_[ru] = CpuState::kReady;
      interpret(r);
      return true;
    case CpuState::kReady:
      return interpret(r);
    default:
      return false;
  }
}

// Runs the CPU until it blocks, starts CPU work, or finishes the job.
bool FleetSim::interpret(int r) {
  const auto ru = static_cast<size_t>(r);
  bool moved = false;
  while (cpu_[ru] == CpuState::kReady && !stop_) {
    moved = true;
    const uint32_t pc = pc_[ru];
    if (pc == plan_.program.size()) {
      end_step(r);
      continue;
    }
    const Instr& in = plan_.program[pc];
    if (in.kind == InstrKind::kJump) {
      pc_[ru] = in.target;
      continue;
    }
    if (in.kind == InstrKind::kBranch) {
      int64_t v = 0;
      if (!plan_.exprs[in.index].eval(plan_.vars(r, step_[ru]), &v)) {
        runtime_error(in.index, false, "division by zero in `when` at rank " + std::to_string(r) +
                                           ", step " + std::to_string(step_[ru]));
        return moved;
      }
      pc_[ru] = v != 0 ? pc + 1 : in.target;
      continue;
    }
    if (!issue_op(r, in.index)) break;
  }
  return moved;
}

// Executes one op on the CPU. Returns false if the CPU blocked before issuing it.
bool FleetSim::issue_op(int r, uint32_t op_index) {
  const auto ru = static_cast<size_t>(r);
  const PlanOp& op = plan_.ops[op_index];
  if (op.kind == OpKind::kCompute || op.kind == OpKind::kCpu) {
    if (const Fault* f = op_fault(r, op_index); f && f->kind == FaultKind::kSkip) {
      for (Observer* o : obs_) o->on_fault(r, now_, *f);
      ++pc_[ru];
      return true;
    }
  }
  switch (op.kind) {
    case OpKind::kCompute: {
      if (queue_full(r)) { cpu_[ru] = CpuState::kBlockedQueue; return false; }
      GpuItem& it = push_item(r);
      it.kind = ItemKind::kCompute;
      it.step = step_[ru];
      it.dur_ns = compute_time_.sample_ns(r, step_[ru], op_index);
      it.work.op = op_index;
      ++pc_[ru];
      return true;
    }
    case OpKind::kCpu: {
      if (const Fault* f = op_fault(r, op_index); f && f->kind == FaultKind::kStall) {
        cpu_[ru] = CpuState::kStalled;  // entered the op and never returns
        for (Observer* o : obs_) o->on_fault(r, now_, *f);
        return false;
      }
      const int64_t d = compute_time_.sample_ns(r, step_[ru], op_index);
      for (Observer* o : obs_) o->on_compute(r, op_index, step_[ru], now_, now_ + Duration{d}, true);
      cpu_[ru] = CpuState::kBusy;
      ++pc_[ru];
      schedule(now_.ns + d, Priority::kNormal, kCpuWake, static_cast<uint32_t>(r));
      return true;
    }
    case OpKind::kSync:
      ++pc_[ru];
      if (qlen_[ru] > 0 || gpu_busy_[ru]) { cpu_[ru] = CpuState::kBlockedSync; return false; }
      return true;
    case OpKind::kLog:
      if (op.log_needs_sync && (qlen_[ru] > 0 || gpu_busy_[ru])) {
        cpu_[ru] = CpuState::kBlockedSync;  // re-executed once the GPU has drained
        return false;
      }
      {
        const std::string line = plan_.format_log(r, step_[ru], op_index);
        for (Observer* o : obs_) o->on_log(r, now_, line);
      }
      ++pc_[ru];
      return true;
    case OpKind::kStoreBarrier:
      ++pc_[ru];
      cpu_[ru] = CpuState::kBlockedStore;
      store_barrier_arrive(r);
      return cpu_[ru] == CpuState::kReady;
    case OpKind::kWhen:
      FLEETSIM_CHECK(false);  // flattened by compile_plan
      return false;
    default:
      return issue_work(r, op_index);
  }
}

// Enqueues a collective or p2p op, applying skip/mismatch faults.
bool FleetSim::issue_work(int r, uint32_t op_index) {
  const auto ru = static_cast<size_t>(r);
  const PlanOp& op = plan_.ops[op_index];
  const Fault* fault = op_fault(r, op_index);
  if (fault && fault->kind == FaultKind::kSkip) {
    for (Observer* o : obs_) o->on_fault(r, now_, *fault);
    ++pc_[ru];
    return true;
  }
  if (queue_full(r)) { cpu_[ru] = CpuState::kBlockedQueue; return false; }
  int peer = -1;
  const bool p2p = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
  if (p2p) {
    peer = r + op.peer_dir * plan_.tp * plan_.dp;
    if (peer < 0 || peer >= n_) {
      runtime_error(op.source, true, std::string(op.kind == OpKind::kSend ? "send to" : "recv from") +
                                         (op.peer_dir > 0 ? " the next" : " the previous") +
                                         " pipeline stage, but rank " + std::to_string(r) +
                                         " has none (step " + std::to_string(step_[ru]) + ")");
      return false;
    }
  }
  GpuItem& it = push_item(r);
  it.kind = p2p ? ItemKind::kP2p : ItemKind::kCollective;
  it.step = step_[ru];
  WorkRecord& w = it.work;
  w.rank = r;
  w.record_id = next_record_[ru]++;
  w.group = op.group;
  const size_t gi = ru * kGroupKinds + static_cast<size_t>(op.group);
  if (p2p) {
    w.p2p_seq_id = ++p2p_seq_[gi];
    w.collective_seq_id = coll_seq_[gi];
  } else {
    w.collective_seq_id = ++coll_seq_[gi];
    w.p2p_seq_id = p2p_seq_[gi];
  }
  w.op_id = ++op_seq_[gi];
  w.op = op_index;
  w.peer = peer;
  w.step = step_[ru];
  w.bytes = op.bytes;
  w.dtype = op.dtype;
  if (fault) {
    if (fault->bytes) w.bytes = *fault->bytes;
    if (fault->dtype) w.dtype = *fault->dtype;
    for (Observer* o : obs_) o->on_fault(r, now_, *fault);
  }
  w.created = now_;
  for (Observer* o : obs_) o->on_work_enqueued(w);
  if (timeout_ns_ >= 0) arm_watchdog(now_ + Duration{timeout_ns_});
  ++pc_[ru];
  if (op.kind == OpKind::kBarrier) cpu_[ru] = CpuState::kBlockedSync;  // barrier() waits for its all-reduce
  return cpu_[ru] == CpuState::kReady;
}

// The skip/mismatch/stall fault that applies to `r` issuing `op_index` now, if any.
const Fault* FleetSim::op_fault(int r, uint32_t op_index) const {
  const auto ru = static_cast<size_t>(r);
  if (!has_op_fault_[ru]) return nullptr;
  const std::string& name = plan_.sources[plan_.ops[op_index].source].name;
  for (const Fault& f : plan_.op_faults)
    if (f.ranks[0] == r && f.at_step == step_[ru] && f.op == name) return &f;
  return nullptr;
}

void FleetSim::begin_step(int r) {
  const auto ru = static_cast<size_t>(r);
  for (size_t k = 0; k < plan_.nic_faults.size(); ++k) {  // the NIC dies as the first GPU it serves starts at_step
    const Fault& f = plan_.nic_faults[k];
    if (nic_down_at_[k] < 0 && f.at_step == step_[ru] && plan_.nic_serves(r, f.node, f.nic)) nic_down_at_[k] = now_.ns;
  }
  for (const Fault& f : plan_.step_faults) {
    if (f.ranks[0] != r || f.at_step != step_[ru]) continue;
    if (f.kind == FaultKind::kCrash) {
      crash(r, f);
      return;
    }
    cpu_[ru] = CpuState::kStalled;
    for (Observer* o : obs_) o->on_fault(r, now_, f);
    return;
  }
}

void FleetSim::end_step(int r) {
  const auto ru = static_cast<size_t>(r);
  if (qlen_[ru] == 0 && !gpu_busy_[ru]) {
    finish_step(r, step_[ru]);
  } else {
    if (queue_full(r)) { cpu_[ru] = CpuState::kBlockedQueue; return; }
    GpuItem& it = push_item(r);
    it.kind = ItemKind::kStepMarker;
    it.step = step_[ru];
  }
  pc_[ru] = 0;
  if (++step_[ru] > plan_.scenario.job.steps) {
    cpu_[ru] = CpuState::kDone;
    return;
  }
  begin_step(r);
}

void FleetSim::finish_step(int r, int64_t step) {
  finished_step_[static_cast<size_t>(r)] = step;
  for (Observer* o : obs_) o->on_step_end(r, step, now_);
  if (step == plan_.scenario.job.steps) ++ranks_done_;
}

void FleetSim::arrive(int r, GpuItem& item) {
  const WorkRecord& w = item.work;
  const PlanOp& op = plan_.ops[w.op];
  const int inst = plan_.group_instance(w.group, r);
  Slot& s = slots_[static_cast<size_t>(w.group)][static_cast<size_t>(inst)];
  if (s.arrived == 0) {
    s.kind = op.kind;
    s.bytes = w.bytes;
    s.dtype = w.dtype;
    s.root = op.root;
    s.mismatch = false;
  } else if (s.kind != op.kind || s.bytes != w.bytes || s.dtype != w.dtype || s.root != op.root) {
    s.mismatch = true;  // NCCL would never finish (or corrupt); we model: never completes
  }
  s.last_arrival = now_.ns;
  const int size = plan_.group_size(w.group);
  const size_t first = static_cast<size_t>(inst) * static_cast<size_t>(size);
  if (want_arrivals_)
    arrivals_[static_cast<size_t>(w.group)][first + static_cast<size_t>(plan_.group_index(w.group, r))] = now_.ns;
  if (++s.arrived < size || s.mismatch) return;
  if (!plan_.nic_faults.empty()) {
    members_tmp_.clear();
    for (int i = 0; i < size; ++i) members_tmp_.push_back(plan_.group_member(w.group, inst, i));
    if (const int k = dead_nic(members_tmp_); k >= 0) {
      s.mismatch = true;  // never completes: its traffic crosses a dead NIC
      stall_on_dead_nic(k, members_tmp_, w.group);
      return;
    }
  }
  const GroupShape shape = plan_.group_shape(w.group, inst);
  const auto& di = degraded_index_[static_cast<size_t>(w.group)];
  const int32_t dix = di.empty() ? -1 : di[static_cast<size_t>(inst)];
  int64_t d = 0;
  if (want_arrivals_) {  // the step model: early members may have started the pipeline
    static const std::vector<LinkDegradation> kHealthy;
    const std::span<const int64_t> arrived(arrivals_[static_cast<size_t>(w.group)].data() + first,
                                           static_cast<size_t>(size));
    d = cost_.collective_time_after(s.kind, s.bytes, shape, dix < 0 ? kHealthy : degraded_[static_cast<size_t>(dix)],
                                    arrived, s.root).ns;
  } else {
    d = (dix < 0 ? cost_.collective_time(s.kind, s.bytes, shape)
                 : cost_.collective_time_degraded(s.kind, s.bytes, shape, degraded_[static_cast<size_t>(dix)]))
            .ns;
  }
  const SimTime end = now_ + Duration{d};
  const double frac = shape.nodes > 1 ? static_cast<double>(shape.nodes) / shape.ranks : 0.0;
  const auto nic = static_cast<int64_t>(ring_bytes_sent_per_rank(s.kind, s.bytes, shape.ranks) * frac);
  for (int i = 0; i < shape.ranks; ++i) {
    const int m = plan_.group_member(w.group, inst, i);
    GpuItem& h = head(m);
    set_gpu(m, GpuState::kTransfer, h.step);
    for (Observer* o : obs_) o->on_transfer(h.work, now_, end, nic);
  }
  schedule(end.ns, Priority::kNormal, kCollDone, static_cast<uint32_t>(w.group), static_cast<uint32_t>(inst));
}

void FleetSim::arrive_p2p(int r, GpuItem& item) {
  const WorkRecord& w = item.work;
  const bool send = plan_.ops[w.op].kind == OpKind::kSend;
  const int sender = send ? r : w.peer;
  const int dir = (send ? plan_.ops[w.op].peer_dir : -plan_.ops[w.op].peer_dir) > 0 ? 0 : 1;
  const uint32_t si = static_cast<uint32_t>(sender) * 2 + static_cast<uint32_t>(dir);
  P2pSlot& s = p2p_[si];
  (send ? s.send_arrived : s.recv_arrived) = true;
  (send ? s.send_bytes : s.recv_bytes) = w.bytes;
  s.last_arrival = now_.ns;
  if (!s.send_arrived || !s.recv_arrived || s.send_bytes != s.recv_bytes) return;
  const int receiver = send ? w.peer : r;
  if (!plan_.nic_faults.empty()) {
    members_tmp_.assign({sender, receiver});
    if (const int k = dead_nic(members_tmp_); k >= 0) {
      s.send_bytes = -1;  // never completes: it crosses a dead NIC
      stall_on_dead_nic(k, members_tmp_, plan_.ops[w.op].group);
      return;
    }
  }
  const int gpn = plan_.scenario.fleet.gpus_per_node;
  GroupShape shape;
  shape.ranks = 2;
  shape.nodes = sender / gpn == receiver / gpn ? 1 : 2;
  shape.ranks_per_node = shape.nodes == 1 ? 2 : 1;
  const int64_t d = cost_.collective_time(OpKind::kSend, s.send_bytes, shape).ns;
  const SimTime end = now_ + Duration{d};
  for (int m : {sender, receiver}) {
    GpuItem& h = head(m);
    set_gpu(m, GpuState::kTransfer, h.step);
    const int64_t nic = (m == sender && shape.nodes > 1) ? s.send_bytes : 0;
    for (Observer* o : obs_) o->on_transfer(h.work, now_, end, nic);
  }
  schedule(end.ns, Priority::kNormal, kP2pDone, si);
}

void FleetSim::pop_head_work(int r) {
  const auto ru = static_cast<size_t>(r);
  GpuItem& h = head(r);
  FLEETSIM_DCHECK(h.kind == ItemKind::kCollective || h.kind == ItemKind::kP2p);
  h.work.completed = now_;
  h.work.state = WorkState::kCompleted;
  for (Observer* o : obs_) o->on_work_completed(h.work);
  gpu_busy_[ru] = 0;
  set_gpu(r, GpuState::kIdle, h.step);
  pop_item(r);
}

void FleetSim::complete_collective(GroupKind g, int instance) {
  const int size = plan_.group_size(g);
  if (!plan_.nic_faults.empty()) {  // the NIC died during the transfer: the rest never arrives
    members_tmp_.clear();
    for (int i = 0; i < size; ++i) members_tmp_.push_back(plan_.group_member(g, instance, i));
    if (const int k = dead_nic(members_tmp_); k >= 0) {
      stall_on_dead_nic(k, members_tmp_, g);
      return;
    }
  }
  // A member that died during the transfer never sends its share: the others
  // keep spinning until the launcher tears the job down.
  for (int i = 0; i < size; ++i)
    if (cpu_[static_cast<size_t>(plan_.group_member(g, instance, i))] == CpuState::kCrashed) return;
  slots_[static_cast<size_t>(g)][static_cast<size_t>(instance)] = Slot{};
  for (int i = 0; i < size; ++i) pop_head_work(plan_.group_member(g, instance, i));
  for (int i = 0; i < size; ++i) advance(plan_.group_member(g, instance, i));
}

void FleetSim::complete_p2p(uint32_t si) {
  const int sender = static_cast<int>(si / 2);
  const int receiver = sender + ((si % 2) == 0 ? 1 : -1) * plan_.tp * plan_.dp;
  if (cpu_[static_cast<size_t>(sender)] == CpuState::kCrashed ||
      cpu_[static_cast<size_t>(receiver)] == CpuState::kCrashed)
    return;  // a peer died mid-transfer: the other side never completes
  if (!plan_.nic_faults.empty()) {
    members_tmp_.assign({sender, receiver});
    if (const int k = dead_nic(members_tmp_); k >= 0) {
      stall_on_dead_nic(k, members_tmp_, GroupKind::kPp);
      return;
    }
  }
  p2p_[si] = P2pSlot{};
  pop_head_work(sender);
  pop_head_work(receiver);
  advance(sender);
  advance(receiver);
}

void FleetSim::arm_watchdog(SimTime deadline) {
  const int64_t at = ceil_to(deadline.ns, kWatchdogPollNs);
  if (watchdog_at_ >= 0 && watchdog_at_ <= at) return;
  watchdog_at_ = at;
  schedule(at, Priority::kWatchdog, kWatchdog, 0, ++watchdog_gen_);
}

// Every rank's watchdog: the oldest incomplete collective past its timeout fires.
void FleetSim::watchdog_check() {
  int64_t next = INT64_MAX;
  for (int r = 0; r < n_ && !stop_; ++r) {
    const auto ru = static_cast<size_t>(r);
    if (cpu_[ru] == CpuState::kCrashed) continue;
    for (uint32_t i = 0; i < qlen_[ru]; ++i) {
      GpuItem& it = queue_[ru * qcap_ + (qhead_[ru] + i) % qcap_];
      if (it.kind != ItemKind::kCollective && it.kind != ItemKind::kP2p) continue;
      if (it.work.timed_out) break;  // this rank has already fired
      const int64_t deadline = it.work.created.ns + timeout_ns_;
      if (deadline <= now_.ns) fire_timeout(r, it); else next = std::min(next, deadline);
      break;
    }
  }
  if (next != INT64_MAX && !stop_) arm_watchdog(SimTime{next});
}

void FleetSim::fire_timeout(int r, GpuItem& item) {
  item.work.timed_out = true;
  for (Observer* o : obs_) o->on_timeout(item.work, now_);
  result_.hang.timed_out_ranks.push_back(r);
  if (!dumped_[static_cast<size_t>(r)]) {
    dumped_[static_cast<size_t>(r)] = 1;
    for (Observer* o : obs_) o->on_dump(r, now_);
  }
  if (hung_) return;
  hung_ = true;
  result_.outcome = Outcome::kHang;
  result_.hang.stuck_since = item.work.created;
  result_.hang.detected_at = now_;
  result_.hang.first_timeout_rank = r;
  result_.hang.group = item.work.group;
  result_.hang.collective_seq_id = item.work.collective_seq_id;
  result_.hang.op = item.work.op;
  schedule(ceil_to(now_.ns + 1, kMonitorPollNs), Priority::kNormal, kDumpAll);
  schedule(now_.ns + plan_.scenario.job.dump_wait.ns, Priority::kFault, kAbort);
}

void FleetSim::crash(int r, const Fault& f) {
  const auto ru = static_cast<size_t>(r);
  cpu_[ru] = CpuState::kCrashed;
  ++gpu_gen_[ru];
  gpu_busy_[ru] = 0;
  qlen_[ru] = 0;
  set_gpu(r, GpuState::kIdle, step_[ru]);
  for (Observer* o : obs_) o->on_fault(r, now_, f);
  // Peers already moving data with the dead rank fall back to spinning (their
  // completion events will find the dead member and not complete).
  for (int g = 0; g < kGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (!plan_.group_exists(kind)) continue;
    const int inst = plan_.group_instance(kind, r);
    const Slot& s = slots_[static_cast<size_t>(g)][static_cast<size_t>(inst)];
    if (s.arrived < plan_.group_size(kind) || s.mismatch) continue;
    for (int i = 0; i < plan_.group_size(kind); ++i) {
      const int m = plan_.group_member(kind, inst, i);
      if (m != r && qlen_[static_cast<size_t>(m)] > 0) set_gpu(m, GpuState::kSpin, head(m).step);
    }
  }
  if (result_.outcome == Outcome::kCompleted) {
    result_.outcome = Outcome::kCrash;
    result_.crash.rank = r;
    result_.crash.step = step_[ru];
    result_.crash.at = now_;
    result_.crash.detected_at = now_ + plan_.scenario.job.crash_detect;
    schedule(result_.crash.detected_at.ns, Priority::kFault, kAbort);
  }
}

int FleetSim::dead_nic(const std::vector<int>& ranks) const {
  for (size_t k = 0; k < plan_.nic_faults.size(); ++k) {
    const Fault& f = plan_.nic_faults[k];
    if (nic_down_at_[k] >= 0 && nic_down_at_[k] <= now_.ns && plan_.crosses_nic(ranks, f.node, f.nic))
      return static_cast<int>(k);
  }
  return -1;
}

// NCCL does not fail over to another NIC: the transfer's work requests on the dead
// port are retried until the IB retry count runs out (NCCL_IB_TIMEOUT,
// NCCL_IB_RETRY_CNT = 7), then the proxy reports a completion error. Until then
// every member's kernel spins with nothing moving.
void FleetSim::stall_on_dead_nic(int k, const std::vector<int>& ranks, GroupKind g) {
  for (int m : ranks) {
    if (cpu_[static_cast<size_t>(m)] != CpuState::kCrashed && qlen_[static_cast<size_t>(m)] > 0)
      set_gpu(m, GpuState::kSpin, head(m).step);
  }
  const auto ku = static_cast<size_t>(k);
  if (nic_err_pending_[ku]) return;
  nic_err_pending_[ku] = 1;
  nic_err_group_[ku] = g;
  // 4.096 us x 2^NCCL_IB_TIMEOUT per try, 7 retries: 20 since NCCL 2.23 (~30 s), 18 before (~7.5 s).
  const std::string& v = plan_.scenario.job.nccl_version;
  const int minor = v.size() > 2 ? std::atoi(v.c_str() + 2) : 30;
  const int64_t per_try_ns = int64_t{4096} << (minor >= 23 ? 20 : 18);
  schedule(now_.ns + 7 * per_try_ns, Priority::kFault, kNicError, static_cast<uint32_t>(k));
}

// The IB completion error: on every rank the dead NIC serves, ProcessGroupNCCL's
// watchdog sees ncclRemoteError from ncclCommGetAsyncError, logs it and takes the
// process down (SIGABRT); the launcher then tears the job down.
void FleetSim::nic_error(int k) {
  const Fault& f = plan_.nic_faults[static_cast<size_t>(k)];
  Fault logged = f;
  logged.where = group_name(nic_err_group_[static_cast<size_t>(k)]);  // the process group that saw the error
  for (int r = 0; r < n_; ++r) {
    if (plan_.nic_serves(r, f.node, f.nic) && cpu_[static_cast<size_t>(r)] != CpuState::kCrashed) crash(r, logged);
  }
}

void FleetSim::runtime_error(uint32_t index, bool is_source, const std::string& what) {
  Diagnostic d;
  if (is_source) {
    d.loc = plan_.sources[index].loc;
  } else {
    for (const OpSource& s : plan_.sources)
      if (s.when == plan_.exprs[index].text()) { d.loc = s.when_loc; break; }
    if (d.loc.file.empty()) d.loc.file = plan_.scenario.file;
  }
  d.message = what;
  result_.errors.push_back(std::move(d));
  stop_ = true;
}

// A CPU-side barrier through the TCPStore: every rank's CPU must arrive; GPUs
// are not involved (they drain and idle). There is one barrier in flight at a
// time, since no rank can pass it before all have arrived.
void FleetSim::store_barrier_arrive(int /*r*/) {
  if (++store_arrived_ < n_) return;
  store_arrived_ = 0;
  for (int m = 0; m < n_; ++m)
    if (cpu_[static_cast<size_t>(m)] == CpuState::kBlockedStore) cpu_[static_cast<size_t>(m)] = CpuState::kReady;
  for (int m = 0; m < n_; ++m) schedule(now_.ns, Priority::kNormal, kCpuWake, static_cast<uint32_t>(m));
}

// The step `r` is stuck in: that of its oldest unfinished GPU item, else its CPU's.
int64_t FleetSim::stuck_step(int r) {
  const auto ru = static_cast<size_t>(r);
  if (finished_step_[ru] == plan_.scenario.job.steps) return INT64_MAX;
  if (qlen_[ru] > 0) return head(r).step;
  return std::min(step_[ru], plan_.scenario.job.steps);
}

RunResult run_simulation(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers) {
  FleetSim sim(plan, cost, observers);
  return sim.run();
}

}  // namespace fleetsim
