// The CPU side of each rank: the program interpreter, one op at a time, and what
// blocks it. A `false` from issue_op means the CPU blocked before issuing the op;
// it re-executes the op once unblocked.
#include "sim/exec/cpu_stream.h"

#include <algorithm>

namespace fleetsim {

CpuStreams::CpuStreams(ExecContext& ctx, GpuStreams& gpu, Watchdog& watchdog, FabricFaults& fabric, RankFaults& faults)
    : ctx_(ctx), gpu_(gpu), watchdog_(watchdog), fabric_(fabric), faults_(faults), compute_time_(ctx.plan) {
  const auto n = static_cast<size_t>(ctx.n);
  state_.assign(n, CpuState::kReady);
  pc_.assign(n, 0);
  step_.assign(n, 1);
  has_op_fault_.assign(n, 0);
  for (const Fault& f : ctx.plan.op_faults) has_op_fault_[static_cast<size_t>(f.ranks[0])] = 1;
  next_record_.assign(n, 0);
  coll_seq_.assign(n * kGroupKinds, 0);
  p2p_seq_.assign(n * kGroupKinds, 0);
  op_seq_.assign(n * kGroupKinds, 0);
}

void CpuStreams::begin_step(int r) {
  const auto ru = static_cast<size_t>(r);
  fabric_.begin_step(r, step_[ru]);  // a NIC dies as the first GPU it serves starts at_step
  const Fault* f = ctx_.plan.step_fault(r, step_[ru]);
  if (!f) return;
  if (f->kind == FaultKind::kCrash) {
    faults_.crash(r, step_[ru], *f);
    return;
  }
  state_[ru] = CpuState::kStalled;  // entered `where` and never returns
  for (Observer* o : ctx_.obs) o->on_fault(r, ctx_.now(), *f);
}

void CpuStreams::adopt_blocked(int r, int64_t step, uint32_t pc, uint32_t records,
                               const uint32_t (&seq)[kGroupKinds]) {
  const auto ru = static_cast<size_t>(r);
  state_[ru] = CpuState::kBlockedQueue;
  step_[ru] = step;
  pc_[ru] = pc;
  next_record_[ru] = records;
  for (size_t g = 0; g < kGroupKinds; ++g) {
    coll_seq_[ru * kGroupKinds + g] = seq[g];
    op_seq_[ru * kGroupKinds + g] = seq[g];
  }
}

bool CpuStreams::blocked_position(int r, Handover::Rank* out) const {
  const auto ru = static_cast<size_t>(r);
  if (state_[ru] != CpuState::kBlockedQueue) return false;
  for (size_t g = 0; g < kGroupKinds; ++g) {
    const size_t gi = ru * kGroupKinds + g;
    if (p2p_seq_[gi] != 0 || op_seq_[gi] != coll_seq_[gi]) return false;
    out->seq[g] = coll_seq_[gi];
  }
  out->cpu_step = step_[ru];
  out->cpu_pc = pc_[ru];
  out->records = next_record_[ru];
  return true;
}

void CpuStreams::wake(int r) {
  if (state_[static_cast<size_t>(r)] == CpuState::kBusy) state_[static_cast<size_t>(r)] = CpuState::kReady;
}

bool CpuStreams::progress(int r) {
  const auto ru = static_cast<size_t>(r);
  if (ctx_.dead(r)) return false;
  switch (state_[ru]) {
    case CpuState::kBlockedQueue:
      if (gpu_.full(r)) return false;
      state_[ru] = CpuState::kReady;
      interpret(r);
      return true;
    case CpuState::kBlockedSync:
      if (!gpu_.drained(r)) return false;
      state_[ru] = CpuState::kReady;
      interpret(r);
      return true;
    case CpuState::kReady:
      return interpret(r);
    default:
      return false;
  }
}

// Runs the CPU until it blocks, starts CPU work, or finishes the job.
bool CpuStreams::interpret(int r) {
  const auto ru = static_cast<size_t>(r);
  const Plan& plan = ctx_.plan;
  bool moved = false;
  while (state_[ru] == CpuState::kReady && !ctx_.stop && !ctx_.dead(r)) {
    moved = true;
    const uint32_t pc = pc_[ru];
    if (pc == plan.program.size()) {
      end_step(r);
      continue;
    }
    const Instr& in = plan.program[pc];
    if (in.kind == InstrKind::kJump) {
      pc_[ru] = in.target;
      continue;
    }
    if (in.kind == InstrKind::kBranch) {
      int64_t v = 0;
      if (!plan.exprs[in.index].eval(plan.vars(r, step_[ru]), &v)) {
        ctx_.runtime_error(in.index, false, "division by zero in `when` at rank " + std::to_string(r) +
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
bool CpuStreams::issue_op(int r, uint32_t op_index) {
  const auto ru = static_cast<size_t>(r);
  const PlanOp& op = ctx_.plan.ops[op_index];
  const SimTime now = ctx_.now();
  if (op.kind == OpKind::kCompute || op.kind == OpKind::kCpu) {
    if (const Fault* f = op_fault(r, op_index); f && f->kind == FaultKind::kSkip) {
      for (Observer* o : ctx_.obs) o->on_fault(r, now, *f);
      ++pc_[ru];
      return true;
    }
  }
  switch (op.kind) {
    case OpKind::kCompute: {
      if (gpu_.full(r)) { state_[ru] = CpuState::kBlockedQueue; return false; }
      GpuItem& it = gpu_.push(r);
      it.kind = ItemKind::kCompute;
      it.step = step_[ru];
      it.dur_ns = compute_time_.sample_ns(r, step_[ru], op_index);
      it.work.op = op_index;
      ++pc_[ru];
      return true;
    }
    case OpKind::kCpu: {
      if (const Fault* f = op_fault(r, op_index); f && f->kind == FaultKind::kStall) {
        state_[ru] = CpuState::kStalled;  // entered the op and never returns
        for (Observer* o : ctx_.obs) o->on_fault(r, now, *f);
        return false;
      }
      const int64_t d = compute_time_.sample_ns(r, step_[ru], op_index);
      for (Observer* o : ctx_.obs) o->on_compute(r, op_index, step_[ru], now, now + Duration{d}, true);
      state_[ru] = CpuState::kBusy;
      ++pc_[ru];
      ctx_.schedule(now.ns + d, Priority::kNormal, kCpuWake, static_cast<uint32_t>(r));
      return true;
    }
    case OpKind::kSync:
      ++pc_[ru];
      if (!gpu_.drained(r)) { state_[ru] = CpuState::kBlockedSync; return false; }
      return true;
    case OpKind::kLog:
      if (op.log_needs_sync && !gpu_.drained(r)) {
        state_[ru] = CpuState::kBlockedSync;  // re-executed once the GPU has drained
        return false;
      }
      {
        const std::string line = ctx_.plan.format_log(r, step_[ru], op_index);
        for (Observer* o : ctx_.obs) o->on_log(r, now, line);
      }
      ++pc_[ru];
      return true;
    case OpKind::kStoreBarrier:
      ++pc_[ru];
      state_[ru] = CpuState::kBlockedStore;
      store_barrier_arrive();
      return state_[ru] == CpuState::kReady;
    case OpKind::kWhen:
      FLEETSIM_CHECK(false);  // flattened by compile_plan
      return false;
    default:
      return issue_work(r, op_index);
  }
}

// Enqueues a collective or p2p op, applying skip/mismatch faults.
bool CpuStreams::issue_work(int r, uint32_t op_index) {
  const auto ru = static_cast<size_t>(r);
  const PlanOp& op = ctx_.plan.ops[op_index];
  const SimTime now = ctx_.now();
  const Fault* fault = op_fault(r, op_index);
  if (fault && fault->kind == FaultKind::kSkip) {
    for (Observer* o : ctx_.obs) o->on_fault(r, now, *fault);
    ++pc_[ru];
    return true;
  }
  if (gpu_.full(r)) { state_[ru] = CpuState::kBlockedQueue; return false; }
  int peer = -1;
  const bool p2p = op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
  if (p2p) {
    peer = r + op.peer_dir * ctx_.plan.tp * ctx_.plan.dp;
    if (peer < 0 || peer >= ctx_.n) {
      ctx_.runtime_error(op.source, true, std::string(op.kind == OpKind::kSend ? "send to" : "recv from") +
                                              (op.peer_dir > 0 ? " the next" : " the previous") +
                                              " pipeline stage, but rank " + std::to_string(r) +
                                              " has none (step " + std::to_string(step_[ru]) + ")");
      return false;
    }
  }
  GpuItem& it = gpu_.push(r);
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
  w.bytes = Plan::issued_bytes(op, fault);
  w.dtype = Plan::issued_dtype(op, fault);
  if (fault)
    for (Observer* o : ctx_.obs) o->on_fault(r, now, *fault);
  w.created = now;
  for (Observer* o : ctx_.obs) o->on_work_enqueued(w);
  watchdog_.on_enqueue();
  ++pc_[ru];
  // barrier() waits for its all-reduce; under gloo every call waits for its op
  // (collectives, send and recv alike), so nothing after it is enqueued first.
  if (op.kind == OpKind::kBarrier || ctx_.plan.scenario.job.backend == CommBackend::kGloo)
    state_[ru] = CpuState::kBlockedSync;
  return state_[ru] == CpuState::kReady;
}

// The skip/mismatch/stall fault that applies to `r` issuing `op_index` now, if any.
const Fault* CpuStreams::op_fault(int r, uint32_t op_index) const {
  const auto ru = static_cast<size_t>(r);
  return has_op_fault_[ru] ? ctx_.plan.op_fault(r, step_[ru], op_index) : nullptr;
}

void CpuStreams::end_step(int r) {
  const auto ru = static_cast<size_t>(r);
  if (!gpu_.drained(r) && gpu_.full(r)) { state_[ru] = CpuState::kBlockedQueue; return; }
  gpu_.end_step(r, step_[ru]);  // finishes the step now, or when its marker reaches the GPU
  pc_[ru] = 0;
  if (++step_[ru] > ctx_.plan.scenario.job.steps) {
    state_[ru] = CpuState::kDone;
    return;
  }
  begin_step(r);
}

// A CPU-side barrier through the TCPStore: every rank's CPU must arrive; GPUs
// are not involved (they drain and idle). There is one barrier in flight at a
// time, since no rank can pass it before all have arrived.
void CpuStreams::store_barrier_arrive() {
  FLEETSIM_DCHECK(store_arrived_ < ctx_.n);
  if (++store_arrived_ < ctx_.n) return;
  store_arrived_ = 0;
  for (int m = 0; m < ctx_.n; ++m)
    if (state_[static_cast<size_t>(m)] == CpuState::kBlockedStore) state_[static_cast<size_t>(m)] = CpuState::kReady;
  for (int m = 0; m < ctx_.n; ++m) ctx_.schedule(ctx_.now().ns, Priority::kNormal, kCpuWake, static_cast<uint32_t>(m));
}

}  // namespace fleetsim
