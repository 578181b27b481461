// The hybrid executor's return: after a divergent stretch, once the event
// executor's run is quiet (every rank's CPU blocked on its full launch queue,
// every queued item and the CPU's next in uniform steps, nothing failed and no
// event pending but kernel and transfer ends, the sample and the watchdog's
// check), the per-rank end times follow from FleetSim's queues and the run
// goes on at lockstep speed (docs/engine.md, "Return").
#include <algorithm>

#include "sim/exec/event_executor.h"
#include "sim/exec/hybrid_executor.h"

namespace fleetsim {

bool HybridSim::take_back(FleetSim& sim) {
  Handover& h = back_;
  if (!sim.hand_back(&h, min_head_step_, &probe_)) return false;
  // With the watchdog on and no check pending, the next enqueue arms one: not modelled.
  if (timeout_ns_ >= 0 && h.watchdog_at < 0) return false;
  const size_t q = h.qlen;
  int64_t lo = INT64_MAX, hi = 0;
  for (int r = 0; r < n_; ++r) {
    lo = std::min(lo, h.queue[static_cast<size_t>(r) * q].step);
    hi = std::max(hi, h.ranks[static_cast<size_t>(r)].cpu_step);
  }
  for (int64_t s = lo; s <= hi; ++s) {
    if (!uniform(s, &path_)) {
      min_head_step_ = s + 1;
      return false;
    }
  }
  const int64_t last_step = last_step_;
  for (StepRec& rec : window_) spare_.push_back(std::move(rec));
  window_.clear();
  // The ring goes on at a fresh item; the row before it holds the start times
  // of the heads at its first item.
  const int64_t k0 = next_item_ + 1;
  if (!place_ranks(h, lo, hi, k0)) {
    last_step_ = last_step;
    return false;
  }
  for (StepRec& rec : window_) {
    for (int r = 0; r < n_ && !rec.partial; ++r) {
      const int64_t head = ret_head_[static_cast<size_t>(r)];
      rec.partial = head > rec.first_item || (head == rec.first_item && meta(head).kind == ItemKind::kCollective);
    }
  }
  if (!queues_match(h) || expected_agenda() != h.agenda) {
    last_step_ = last_step;
    return false;
  }
  from_ = h.at;
  events_base_ = h.events;
  fed_events_ = 0;
  watchdog_at_ = h.watchdog_at;
  watchdog_gen_ = h.watchdog_gen;
  armed_at_ = watchdog_at_ >= 0 ? 0 : -1;
  probe_ = 0;
  ++returns_;
  back_ = Handover{};  // its queues (n x capacity items) are not needed until the next try
  return true;
}

// Numbers the items of steps lo..hi from k0 on and finds each rank's head and
// CPU among them, then simulates those steps: a rank's items before its head
// are FleetSim's (their end times are not known; nothing reads them), its head
// started when FleetSim says. False if a CPU is not on its step's path or the
// steps do not fit in the kept history.
bool HybridSim::place_ranks(const Handover& h, int64_t lo, int64_t hi, int64_t k0) {
  std::vector<Path> paths(static_cast<size_t>(hi - lo + 1));
  std::vector<int64_t> first(paths.size());
  int64_t k = k0;
  for (int64_t s = lo; s <= hi; ++s) {
    Path& p = paths[static_cast<size_t>(s - lo)];
    uniform(s, &p);
    first[static_cast<size_t>(s - lo)] = k;
    k += static_cast<int64_t>(p.size()) + 1;
  }
  const size_t q = h.qlen;
  ret_begun_.assign(static_cast<size_t>(n_), 0);
  ret_created_.assign(static_cast<size_t>(n_) * q, 0);
  starts_.clear();
  const auto program_end = static_cast<uint32_t>(plan_.program.size());
  for (int r = 0; r < n_; ++r) {
    const auto ru = static_cast<size_t>(r);
    const Handover::Rank& hr = h.ranks[ru];
    const Path& p = paths[static_cast<size_t>(hr.cpu_step - lo)];
    size_t j = 0;
    if (hr.cpu_pc != program_end) {
      while (j < p.size() && p[j].first != hr.cpu_pc) ++j;
      if (j == p.size()) return false;
    } else {
      j = p.size();
    }
    ret_next_[ru] = first[static_cast<size_t>(hr.cpu_step - lo)] + static_cast<int64_t>(j);
    ret_head_[ru] = ret_next_[ru] - qcap_;
    if (ret_head_[ru] < k0) return false;
    ret_begun_[ru] = h.queue[ru * q].begun.ns;
    for (size_t i = 0; i < q; ++i) ret_created_[ru * q + i] = h.queue[ru * q + i].work.created.ns;
    starts_.emplace_back(ret_head_[ru] - 1, r);
  }
  std::sort(starts_.begin(), starts_.end());
  // Flight-recorder ids at k0: rank 0's, less the collectives between k0 and its CPU.
  records_ = h.ranks[0].records;
  std::copy(std::begin(h.ranks[0].seq), std::end(h.ranks[0].seq), std::begin(seq_));
  for (int64_t s = lo; s <= hi; ++s) {
    const Path& p = paths[static_cast<size_t>(s - lo)];
    for (size_t j = 0; j < p.size(); ++j) {
      if (first[static_cast<size_t>(s - lo)] + static_cast<int64_t>(j) >= ret_next_[0]) break;
      const PlanOp& op = plan_.ops[p[j].second];
      if (op.kind == OpKind::kCompute) continue;
      --records_;
      --seq_[static_cast<size_t>(op.group)];
    }
  }
  next_item_ = k0 - 1;
  ItemMeta& m = meta_[static_cast<size_t>(next_item_ % ring_)];
  m = ItemMeta{};
  m.kind = ItemKind::kStepMarker;
  m.step = lo - 1;
  m.pc = program_end;
  std::fill_n(fresh_row(next_item_), n_, 0);
  flat_[static_cast<size_t>(next_item_ % ring_)] = kNotFlat;
  for (next_start_ = 0; next_start_ < starts_.size() && starts_[next_start_].first == next_item_; ++next_start_)
    row(next_item_)[starts_[next_start_].second] = ret_begun_[static_cast<size_t>(starts_[next_start_].second)];
  ++next_item_;
  for (int64_t s = lo; s <= hi; ++s)
    if (!simulate_step(s, paths[static_cast<size_t>(s - lo)])) return false;
  return next_start_ == starts_.size();
}

// Whether every rank's queue and CPU are what the numbered items say: kind,
// step and op of each item, a collective's ids, bytes and dtype, the CPU's ids.
bool HybridSim::queues_match(const Handover& h) const {
  const size_t q = h.qlen;
  for (int r = 0; r < n_; ++r) {
    const auto ru = static_cast<size_t>(r);
    const Handover::Rank& hr = h.ranks[ru];
    const ItemMeta& next = meta(ret_next_[ru]);
    if (hr.records != next.records || !std::equal(std::begin(hr.seq), std::end(hr.seq), std::begin(next.seq)))
      return false;
    for (size_t i = 0; i < q; ++i) {
      const int64_t k = ret_head_[ru] + static_cast<int64_t>(i);
      const GpuItem& it = h.queue[ru * q + i];
      const ItemMeta& m = meta(k);
      if (it.kind != m.kind || it.step != m.step) return false;
      if (m.kind == ItemKind::kStepMarker) continue;
      if (it.work.op != m.op) return false;
      if (m.kind != ItemKind::kCollective) continue;
      const WorkRecord want = work(r, k);
      const WorkRecord& got = it.work;
      if (got.record_id != want.record_id || got.group != want.group ||
          got.collective_seq_id != want.collective_seq_id || got.op_id != want.op_id || got.p2p_seq_id != 0 ||
          got.bytes != want.bytes || got.dtype != want.dtype || got.step != want.step)
        return false;
    }
  }
  return true;
}

// The events FleetSim has pending at a return if nothing else is: each running
// kernel's end, each transfer's end (an instance whose members all arrived),
// the next sample, the watchdog's check.
uint64_t HybridSim::expected_agenda() const {
  uint64_t count = 0;
  for (int r = 0; r < n_; ++r) {
    const int64_t head = ret_head_[static_cast<size_t>(r)];
    const ItemMeta& m = meta(head);
    if (m.kind == ItemKind::kCompute) {
      ++count;
      continue;
    }
    const GroupKind g = plan_.ops[m.op].group;
    const GroupLayout& L = groups_[static_cast<size_t>(g)];
    const int base = first_member(plan_, g, plan_.group_instance(g, r));
    if (r != base) continue;
    bool all = true;
    for (int i = 0; i < L.size && all; ++i) all = ret_head_[static_cast<size_t>(base + i * L.stride)] == head;
    count += all;
  }
  count += plan_.scenario.job.telemetry_period.ns > 0;
  count += back_.watchdog_at >= 0;
  return count;
}

}  // namespace fleetsim
