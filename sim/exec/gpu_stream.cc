// The GPU side of each rank: the launch queue as a ring buffer per rank, kernels
// timed by events, collectives handed to matching when they reach the head, and
// the end of a step when its marker does.
#include "sim/exec/gpu_stream.h"

#include <algorithm>

namespace fleetsim {

GpuStreams::GpuStreams(ExecContext& ctx) : ctx_(ctx) {
  const auto n = static_cast<size_t>(ctx.n);
  qcap_ = static_cast<uint32_t>(std::max(ctx.plan.scenario.job.launch_queue, 1) + 1);  // +1: step marker
  qhead_.assign(n, 0);
  qlen_.assign(n, 0);
  busy_.assign(n, 0);
  gen_.assign(n, 0);
  finished_step_.assign(n, 0);
}

void GpuStreams::allocate() {
  FLEETSIM_CHECK(queue_.empty());
  queue_.resize(static_cast<size_t>(ctx_.n) * qcap_);
}

void GpuStreams::adopt_all(std::vector<GpuItem>&& queue, std::span<const int64_t> finished_steps) {
  const auto n = static_cast<size_t>(ctx_.n);
  FLEETSIM_CHECK(queue_.empty() && queue.size() == n * qcap_ && finished_steps.size() == n);
  queue_ = std::move(queue);
  qhead_.assign(n, 0);
  qlen_.assign(n, qcap_);
  busy_.assign(n, 1);
  finished_step_.assign(finished_steps.begin(), finished_steps.end());
}

void GpuStreams::set_state(int r, GpuState s, int64_t step) {
  for (Observer* o : ctx_.obs) o->on_gpu_state(r, ctx_.now(), s, step);
}

GpuItem& GpuStreams::push(int r) {
  const auto ru = static_cast<size_t>(r);
  FLEETSIM_DCHECK(qlen_[ru] < qcap_);
  FLEETSIM_DCHECK(!ctx_.dead(r));
  const uint32_t idx = (qhead_[ru] + qlen_[ru]) % qcap_;
  ++qlen_[ru];
  GpuItem& it = queue_[ru * qcap_ + idx];
  it = GpuItem{};
  return it;
}

void GpuStreams::pop(int r) {
  const auto ru = static_cast<size_t>(r);
  FLEETSIM_DCHECK(qlen_[ru] > 0);
  qhead_[ru] = (qhead_[ru] + 1) % qcap_;
  --qlen_[ru];
}

void GpuStreams::end_step(int r, int64_t step) {
  if (drained(r)) {
    finish_step(r, step);
    return;
  }
  GpuItem& it = push(r);
  it.kind = ItemKind::kStepMarker;
  it.step = step;
}

void GpuStreams::finish_step(int r, int64_t step) {
  FLEETSIM_DCHECK(step == finished_step_[static_cast<size_t>(r)] + 1);  // steps finish in order
  finished_step_[static_cast<size_t>(r)] = step;
  for (Observer* o : ctx_.obs) o->on_step_end(r, step, ctx_.now());
  if (step == ctx_.plan.scenario.job.steps) ++ranks_done_;
  FLEETSIM_DCHECK(ranks_done_ <= ctx_.n);
}

bool GpuStreams::progress(int r, GpuItem** arrived) {
  const auto ru = static_cast<size_t>(r);
  *arrived = nullptr;
  bool moved = false;
  while (!busy_[ru] && qlen_[ru] > 0 && !ctx_.dead(r)) {
    GpuItem& h = head(r);
    moved = true;
    if (h.kind == ItemKind::kStepMarker) {
      const int64_t s = h.step;
      pop(r);
      finish_step(r, s);
      continue;
    }
    busy_[ru] = 1;
    h.begun = ctx_.now();
    if (h.kind == ItemKind::kCompute) {
      set_state(r, GpuState::kCompute, h.step);
      ctx_.schedule(ctx_.now().ns + h.dur_ns, Priority::kNormal, kGpuDone, static_cast<uint32_t>(r), gen_[ru]);
      break;
    }
    h.work.started = ctx_.now();
    h.work.state = WorkState::kStarted;
    set_state(r, GpuState::kSpin, h.step);
    for (Observer* o : ctx_.obs) o->on_work_started(h.work);
    *arrived = &h;
    break;
  }
  return moved;
}

bool GpuStreams::kernel_done(int r, uint32_t generation) {
  const auto ru = static_cast<size_t>(r);
  if (generation != gen_[ru]) return false;  // the rank crashed meanwhile
  GpuItem& h = head(r);
  FLEETSIM_DCHECK(busy_[ru] && h.kind == ItemKind::kCompute);
  for (Observer* o : ctx_.obs) o->on_compute(r, h.work.op, h.step, h.begun, ctx_.now(), false);
  busy_[ru] = 0;
  set_state(r, GpuState::kIdle, h.step);
  pop(r);
  return true;
}

void GpuStreams::complete_head(int r) {
  GpuItem& h = head(r);
  FLEETSIM_DCHECK(h.kind == ItemKind::kCollective || h.kind == ItemKind::kP2p);
  FLEETSIM_DCHECK(busy_[static_cast<size_t>(r)]);
  h.work.completed = ctx_.now();
  h.work.state = WorkState::kCompleted;
  for (Observer* o : ctx_.obs) o->on_work_completed(h.work);
  busy_[static_cast<size_t>(r)] = 0;
  set_state(r, GpuState::kIdle, h.step);
  pop(r);
}

void GpuStreams::kill(int r, int64_t step) {
  const auto ru = static_cast<size_t>(r);
  ++gen_[ru];
  busy_[ru] = 0;
  qlen_[ru] = 0;
  set_state(r, GpuState::kIdle, step);
}

void GpuStreams::spin_head(int r) {
  if (queued(r) > 0) set_state(r, GpuState::kSpin, head(r).step);
}

}  // namespace fleetsim
