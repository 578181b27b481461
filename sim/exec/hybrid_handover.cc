// The hybrid executor's handover: the event executor's state at time t after a
// uniform stretch (every event before t processed, none at or after it), and
// the observer callbacks of the steps that straddle t (or a return). In a uniform stretch a
// rank's CPU issues its k-th queue item when item k - capacity leaves the GPU,
// so each rank's queue, CPU position and enqueue times follow from its items'
// GPU end times; which items are done, running or waiting follows from t.
#include <algorithm>
#include <tuple>

#include "sim/exec/hybrid_executor.h"

namespace fleetsim {

WorkRecord HybridSim::work(int r, int64_t item) const {
  const ItemMeta& m = meta(item);
  const PlanOp& op = plan_.ops[m.op];
  const uint32_t seq = m.seq[static_cast<size_t>(op.group)] + 1;
  WorkRecord w;
  w.rank = r;
  w.record_id = m.records;
  w.group = op.group;
  w.collective_seq_id = seq;
  w.op_id = seq;  // a uniform stretch issues no send/recv
  w.op = m.op;
  w.step = m.step;
  w.bytes = Plan::issued_bytes(op, nullptr);
  w.dtype = Plan::issued_dtype(op, nullptr);
  w.created = SimTime{issued(item, r)};
  return w;
}

// An item r's CPU enqueued before the last return: the time FleetSim gave;
// after it, the CPU, blocked on its full queue, enqueued it as the item a
// queue capacity earlier left the GPU.
int64_t HybridSim::issued(int64_t item, int r) const {
  const auto ru = static_cast<size_t>(r);
  if (item < ret_next_[ru]) return ret_created_[ru * static_cast<size_t>(qcap_) + static_cast<size_t>(item - ret_head_[ru])];
  return item < qcap_ ? 0 : end(item - qcap_, r);
}

// Rank r's queue (head first), GPU and CPU at t. False if they fall outside the kept items.
bool HybridSim::build_rank(int r, int64_t t, Handover* h) {
  int64_t head = std::max(window_.front().first_item, ret_head_[static_cast<size_t>(r)]);
  while (head < next_item_ && end(head, r) < t) ++head;
  heads_[static_cast<size_t>(r)] = head;
  const int64_t first_timed = std::max(head, ret_next_[static_cast<size_t>(r)]);  // enqueued at an item's end
  if (head + qcap_ >= next_item_ || (first_timed - qcap_ >= 0 && !kept(first_timed - qcap_))) return false;
  FLEETSIM_CHECK(meta(head).kind != ItemKind::kStepMarker);  // a marker leaves with the item before it
  GpuItem* q = h->queue.data() + static_cast<size_t>(r) * static_cast<size_t>(qcap_);
  for (int64_t i = 0; i < qcap_; ++i) {
    const int64_t k = head + i;
    const ItemMeta& m = meta(k);
    GpuItem& it = q[i];
    it = GpuItem{};
    it.kind = m.kind;
    it.step = m.step;
    if (m.kind == ItemKind::kCompute) {
      it.dur_ns = compute_time_.sample_ns(r, m.step, m.op);
      it.work.op = m.op;
    } else if (m.kind == ItemKind::kCollective) {
      it.work = work(r, k);
    }
  }
  q[0].begun = SimTime{end(head - 1, r)};
  if (q[0].kind == ItemKind::kCollective) {
    q[0].work.started = q[0].begun;
    q[0].work.state = WorkState::kStarted;
  }
  const ItemMeta& next = meta(head + qcap_);  // the item the blocked CPU issues next
  Handover::Rank& hr = h->ranks[static_cast<size_t>(r)];
  hr.finished_step = meta(head).step - 1;
  hr.cpu_step = next.step;
  hr.cpu_pc = next.pc;
  hr.records = next.records;
  std::copy(std::begin(next.seq), std::end(next.seq), std::begin(hr.seq));
  return true;
}

// The agenda at t: running kernels' ends, transfers' ends, the next sample, the
// watchdog check. Same-instant events of one priority go by when they were
// scheduled, then by kind and rank or group (docs/engine.md says why any order
// of those gives the same outputs).
void HybridSim::add_pending(int64_t t, Handover* h) {
  std::vector<std::pair<int64_t, Event>> normal;  // (when scheduled, event)
  for (int r = 0; r < n_; ++r) {
    const GpuItem& head = h->queue[static_cast<size_t>(r) * static_cast<size_t>(qcap_)];
    Event e;
    e.priority = Priority::kNormal;
    e.time_ns = end(heads_[static_cast<size_t>(r)], r);
    if (head.kind == ItemKind::kCompute) {
      FLEETSIM_CHECK(e.time_ns == head.begun.ns + head.dur_ns);
      e.kind = kGpuDone;
      e.a = static_cast<uint32_t>(r);
      normal.emplace_back(head.begun.ns, e);
      continue;
    }
    const GroupKind g = head.work.group;
    const int inst = plan_.group_instance(g, r);
    const int64_t start = e.time_ns - op_cost(head.work.op, g, inst);  // the last member's arrival
    if (r != first_member(plan_, g, inst) || start >= t) continue;  // reported once; or still waiting
    e.kind = kCollDone;
    e.a = static_cast<uint32_t>(g);
    e.b = static_cast<uint32_t>(inst);
    normal.emplace_back(start, e);
  }
  std::sort(normal.begin(), normal.end(), [](const auto& x, const auto& y) {
    return std::tie(x.second.time_ns, x.first, x.second.kind, x.second.a, x.second.b) <
           std::tie(y.second.time_ns, y.first, y.second.kind, y.second.a, y.second.b);
  });
  h->pending.clear();
  for (const auto& [sched, e] : normal) h->pending.push_back(e);
  const int64_t period = plan_.scenario.job.telemetry_period.ns;
  if (period > 0) {
    Event e;
    e.time_ns = ((t - 1) / period + 1) * period;
    e.priority = Priority::kObserve;
    e.kind = kTick;
    h->pending.push_back(e);
  }
  if (armed_at_ >= 0 && armed_at_ < t) {  // by the first collective's enqueue, or before a return
    Event e;
    e.time_ns = watchdog_at_;
    e.priority = Priority::kWatchdog;
    e.kind = kWatchdog;
    e.b = watchdog_gen_;
    h->pending.push_back(e);
    h->watchdog_at = watchdog_at_;
    h->watchdog_gen = watchdog_gen_;
  }
}

// What observers saw of `rec` from from_ (the stretch's start) to `before`,
// rank by rank in item order: kernels that ended, collectives reached and
// transfers begun, steps finished. Items a rank had passed at a return are
// FleetSim's. (No allowed observer reads GPU states or enqueues.)
void HybridSim::feed_partial(const StepRec& rec, int64_t before) {
  for (int r = 0; r < n_; ++r) {
    for (int64_t k = std::max(rec.first_item, ret_head_[static_cast<size_t>(r)]); k <= rec.marker_item; ++k) {
      const ItemMeta& m = meta(k);
      const int64_t e = end(k, r);
      if (m.kind == ItemKind::kStepMarker) {
        if (e < before)
          for (Observer* o : obs_) o->on_step_end(r, m.step, SimTime{e});
        break;
      }
      const int64_t begin = end(k - 1, r);
      if (m.kind == ItemKind::kCompute) {
        if (e >= before) break;
        for (Observer* o : obs_) o->on_compute(r, m.op, m.step, SimTime{begin}, SimTime{e}, false);
        continue;
      }
      if (begin >= before) break;
      WorkRecord w = work(r, k);
      w.started = SimTime{begin};
      w.state = WorkState::kStarted;
      if (begin >= from_)
        for (Observer* o : obs_) o->on_work_started(w);
      const GroupKind g = w.group;
      const int inst = plan_.group_instance(g, r);
      const int64_t start = e - op_cost(m.op, g, inst);
      if (start >= before) break;
      if (start >= from_) {
        const GroupShape& shape = groups_[static_cast<size_t>(g)].shapes[
            groups_[static_cast<size_t>(g)].shape_class[static_cast<size_t>(inst)]];
        const double frac = shape.nodes > 1 ? static_cast<double>(shape.nodes) / shape.ranks : 0.0;
        const auto nic = static_cast<int64_t>(ring_bytes_sent_per_rank(plan_.ops[m.op].kind, w.bytes, shape.ranks) * frac);
        for (Observer* o : obs_) o->on_transfer(w, SimTime{start}, SimTime{e}, nic);
      }
      if (e >= before) break;
    }
  }
}

// Events the event executor processes for `rec` from from_ to `before`: a
// kernel's end per rank, a transfer's end per group instance.
uint64_t HybridSim::events_in(const StepRec& rec, int64_t before) const {
  uint64_t events = 0;
  for (int64_t k = rec.first_item; k < rec.marker_item; ++k) {
    const ItemMeta& m = meta(k);
    uint64_t done = 0;
    for (int r = 0; r < n_; ++r) done += k >= ret_head_[static_cast<size_t>(r)] && end(k, r) < before;
    events += m.kind == ItemKind::kCompute
                  ? done
                  : done / static_cast<uint64_t>(groups_[static_cast<size_t>(plan_.ops[m.op].group)].size);
  }
  return events;
}

bool HybridSim::hand_over(int64_t t, Handover* h) {
  feed_whole_steps(t);
  FLEETSIM_CHECK(!window_.empty());
  h->ranks.assign(static_cast<size_t>(n_), Handover::Rank{});
  h->qlen = static_cast<uint32_t>(qcap_);
  h->queue.resize(static_cast<size_t>(n_) * static_cast<size_t>(qcap_));
  heads_.assign(static_cast<size_t>(n_), 0);
  for (int r = 0; r < n_; ++r)
    if (!build_rank(r, t, h)) return false;
  add_pending(t, h);
  h->events = events_base_ + fed_events_;
  for (const StepRec& rec : window_) {
    feed_partial(rec, t);
    h->events += events_in(rec, t);
  }
  const int64_t period = plan_.scenario.job.telemetry_period.ns;
  if (period > 0) {  // the samples since from_ (FleetSim took those before it)
    for (int64_t at = std::max(period, (from_ + period - 1) / period * period); at < t; at += period) {
      for (Observer* o : obs_) o->on_tick(SimTime{at});
      ++h->events;
    }
  }
  return true;
}

}  // namespace fleetsim
