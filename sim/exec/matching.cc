// Arrival at a collective or p2p slot, the transfer once all have arrived (its
// duration from the cost model, its NIC bytes), and completion on every member.
#include "sim/exec/matching.h"

#include <algorithm>
#include <span>

namespace fleetsim {

Matcher::Matcher(ExecContext& ctx, GpuStreams& gpu, FabricFaults& fabric) : ctx_(ctx), gpu_(gpu), fabric_(fabric) {
  const Plan& plan = ctx.plan;
  for (int g = 0; g < kGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (plan.group_exists(kind)) slots_[static_cast<size_t>(g)].resize(static_cast<size_t>(plan.group_count(kind)));
  }
  if (plan.pp_group) p2p_.resize(static_cast<size_t>(ctx.n) * 2);
  want_arrivals_ = ctx.cost.wants_arrivals();
  for (int g = 0; g < kGroupKinds && want_arrivals_; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (plan.group_exists(kind))
      arrivals_[static_cast<size_t>(g)].assign(
          static_cast<size_t>(plan.group_count(kind)) * static_cast<size_t>(plan.group_size(kind)), 0);
  }
}

const std::vector<int>& Matcher::members(GroupKind g, int instance) {
  members_.clear();
  for (int i = 0; i < ctx_.plan.group_size(g); ++i) members_.push_back(ctx_.plan.group_member(g, instance, i));
  return members_;
}

void Matcher::arrive(int r, GpuItem& item) {
  if (item.kind == ItemKind::kP2p) {
    arrive_p2p(r, item);
    return;
  }
  const Plan& plan = ctx_.plan;
  const WorkRecord& w = item.work;
  const PlanOp& op = plan.ops[w.op];
  const int inst = plan.group_instance(w.group, r);
  Slot& s = slots_[static_cast<size_t>(w.group)][static_cast<size_t>(inst)];
  if (s.arrived == 0) {
    s = Slot{};
    s.open(w, op);
  } else if (s.kind != op.kind || s.bytes != w.bytes || s.dtype != w.dtype || s.root != op.root) {
    s.mismatch = true;  // NCCL would never finish (or corrupt); we model: never completes
    s.sizes_differ = s.sizes_differ || s.bytes != w.bytes;
  }
  FLEETSIM_DCHECK(w.collective_seq_id == s.seq);  // the k-th on every member
  s.last_arrival = ctx_.now().ns;
  const int size = plan.group_size(w.group);
  FLEETSIM_DCHECK(s.arrived < size);  // each member arrives once per match
  const size_t first = static_cast<size_t>(inst) * static_cast<size_t>(size);
  if (want_arrivals_)
    arrivals_[static_cast<size_t>(w.group)][first + static_cast<size_t>(plan.group_index(w.group, r))] = ctx_.now().ns;
  if (++s.arrived < size) return;
  if (s.mismatch) {
    // gloo compares each message's size with what the op expects: the member
    // whose op is smaller aborts (job.backend, docs/scenario-format.md).
    if (s.sizes_differ && plan.scenario.job.backend == CommBackend::kGloo)
      ctx_.schedule(ctx_.now().ns, Priority::kFault, kGlooMismatch, static_cast<uint32_t>(w.group),
                    static_cast<uint32_t>(inst));
    return;
  }
  // A member that arrived and then died (a crash) never sends its share: the
  // live members spin until the launcher tears the job down.
  for (int i = 0; i < size; ++i)
    if (ctx_.dead(plan.group_member(w.group, inst, i))) return;
  if (fabric_.any_nic_faults()) {
    const std::vector<int>& m = members(w.group, inst);
    if (const int k = fabric_.dead_nic(m); k >= 0) {
      s.mismatch = true;  // never completes: its traffic crosses a dead NIC
      fabric_.stall_on_dead_nic(k, m, w.group);
      return;
    }
  }
  const GroupShape shape = plan.group_shape(w.group, inst);
  const SimTime end = ctx_.now() + Duration{transfer_ns(s, w.group, inst, shape, first)};
  const double frac = shape.nodes > 1 ? static_cast<double>(shape.nodes) / shape.ranks : 0.0;
  const auto nic = static_cast<int64_t>(ring_bytes_sent_per_rank(s.kind, s.bytes, shape.ranks) * frac);
  for (int i = 0; i < shape.ranks; ++i) {
    const int m = plan.group_member(w.group, inst, i);
    GpuItem& h = gpu_.head(m);
    gpu_.set_state(m, GpuState::kTransfer, h.step);
    for (Observer* o : ctx_.obs) o->on_transfer(h.work, ctx_.now(), end, nic);
  }
  ctx_.schedule(end.ns, Priority::kNormal, kCollDone, static_cast<uint32_t>(w.group), static_cast<uint32_t>(inst));
}

void Matcher::adopt_arrival(int r, const GpuItem& item) {
  const WorkRecord& w = item.work;
  const PlanOp& op = ctx_.plan.ops[w.op];
  Slot& s = slots_[static_cast<size_t>(w.group)][static_cast<size_t>(ctx_.plan.group_instance(w.group, r))];
  FLEETSIM_CHECK(item.kind == ItemKind::kCollective && !want_arrivals_);
  if (s.arrived == 0) s.open(w, op);
  FLEETSIM_CHECK(s.seq == w.collective_seq_id && s.bytes == w.bytes && s.kind == op.kind);
  s.last_arrival = std::max(s.last_arrival, w.started.ns);
  ++s.arrived;
}

// How long the matched collective in `s` moves data; `first` indexes the
// instance's member arrivals.
int64_t Matcher::transfer_ns(const Slot& s, GroupKind g, int instance, const GroupShape& shape, size_t first) const {
  const std::vector<LinkDegradation>* degraded = fabric_.degradation(g, instance);
  if (want_arrivals_) {  // the step model: early members may have started the pipeline
    static const std::vector<LinkDegradation> kHealthy;
    const std::span<const int64_t> arrived(arrivals_[static_cast<size_t>(g)].data() + first,
                                           static_cast<size_t>(ctx_.plan.group_size(g)));
    return ctx_.cost.collective_time_after(s.kind, s.bytes, shape, degraded ? *degraded : kHealthy, arrived, s.root).ns;
  }
  return (degraded ? ctx_.cost.collective_time_degraded(s.kind, s.bytes, shape, *degraded)
                   : ctx_.cost.collective_time(s.kind, s.bytes, shape))
      .ns;
}

void Matcher::arrive_p2p(int r, GpuItem& item) {
  const Plan& plan = ctx_.plan;
  const WorkRecord& w = item.work;
  const bool send = plan.ops[w.op].kind == OpKind::kSend;
  const int sender = send ? r : w.peer;
  const int dir = (send ? plan.ops[w.op].peer_dir : -plan.ops[w.op].peer_dir) > 0 ? 0 : 1;
  const uint32_t si = static_cast<uint32_t>(sender) * 2 + static_cast<uint32_t>(dir);
  P2pSlot& s = p2p_[si];
  FLEETSIM_DCHECK(!(send ? s.send_arrived : s.recv_arrived));  // each side arrives once per match
  (send ? s.send_arrived : s.recv_arrived) = true;
  (send ? s.send_bytes : s.recv_bytes) = w.bytes;
  s.last_arrival = ctx_.now().ns;
  if (!s.send_arrived || !s.recv_arrived) return;
  if (s.send_bytes != s.recv_bytes) {
    // gloo: a receiver whose buffer is smaller than the message aborts; one
    // whose buffer is larger takes the message. NCCL: both wait, forever.
    if (plan.scenario.job.backend != CommBackend::kGloo) return;
    if (s.send_bytes > s.recv_bytes) {
      ctx_.schedule(ctx_.now().ns, Priority::kFault, kGlooMismatch, kP2pGroup, si);
      return;
    }
  }
  const int receiver = send ? w.peer : r;
  // A side that arrived and then died (a crash) never moves its data: the live
  // side spins until the launcher tears the job down.
  if (ctx_.dead(sender) || ctx_.dead(receiver)) return;
  if (fabric_.any_nic_faults()) {
    members_.assign({sender, receiver});
    if (const int k = fabric_.dead_nic(members_); k >= 0) {
      s.send_bytes = -1;  // never completes: it crosses a dead NIC
      fabric_.stall_on_dead_nic(k, members_, plan.ops[w.op].group);
      return;
    }
  }
  const int gpn = plan.scenario.fleet.gpus_per_node;
  GroupShape shape;
  shape.ranks = 2;
  shape.nodes = sender / gpn == receiver / gpn ? 1 : 2;
  shape.ranks_per_node = shape.nodes == 1 ? 2 : 1;
  const int64_t d = ctx_.cost.collective_time(OpKind::kSend, s.send_bytes, shape).ns;
  const SimTime end = ctx_.now() + Duration{d};
  for (int m : {sender, receiver}) {
    GpuItem& h = gpu_.head(m);
    gpu_.set_state(m, GpuState::kTransfer, h.step);
    const int64_t nic = (m == sender && shape.nodes > 1) ? s.send_bytes : 0;
    for (Observer* o : ctx_.obs) o->on_transfer(h.work, ctx_.now(), end, nic);
  }
  ctx_.schedule(end.ns, Priority::kNormal, kP2pDone, si);
}

bool Matcher::complete_collective(GroupKind g, int instance) {
  const Plan& plan = ctx_.plan;
  const int size = plan.group_size(g);
  if (fabric_.any_nic_faults()) {  // the NIC died during the transfer: the rest never arrives
    const std::vector<int>& m = members(g, instance);
    if (const int k = fabric_.dead_nic(m); k >= 0) {
      fabric_.stall_on_dead_nic(k, m, g);
      return false;
    }
  }
  // A member that died during the transfer never sends its share: the others
  // keep spinning until the launcher tears the job down.
  for (int i = 0; i < size; ++i)
    if (ctx_.dead(plan.group_member(g, instance, i))) return false;
  Slot& s = slots_[static_cast<size_t>(g)][static_cast<size_t>(instance)];
  FLEETSIM_DCHECK(s.arrived == size && !s.mismatch);
  s = Slot{};
  for (int i = 0; i < size; ++i) gpu_.complete_head(plan.group_member(g, instance, i));
  return true;
}

bool Matcher::complete_p2p(uint32_t si, int* sender, int* receiver) {
  const int snd = static_cast<int>(si / 2);
  const int rcv = snd + ((si % 2) == 0 ? 1 : -1) * ctx_.plan.tp * ctx_.plan.dp;
  if (ctx_.dead(snd) || ctx_.dead(rcv)) return false;  // a peer died mid-transfer: the other side never completes
  if (fabric_.any_nic_faults()) {
    members_.assign({snd, rcv});
    if (const int k = fabric_.dead_nic(members_); k >= 0) {
      fabric_.stall_on_dead_nic(k, members_, GroupKind::kPp);
      return false;
    }
  }
  p2p_[si] = P2pSlot{};
  gpu_.complete_head(snd);
  gpu_.complete_head(rcv);
  *sender = snd;
  *receiver = rcv;
  return true;
}

void Matcher::fall_back_to_spin(int r) {
  const Plan& plan = ctx_.plan;
  for (int g = 0; g < kGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (!plan.group_exists(kind)) continue;
    const int inst = plan.group_instance(kind, r);
    const Slot& s = slots_[static_cast<size_t>(g)][static_cast<size_t>(inst)];
    if (s.arrived < plan.group_size(kind) || s.mismatch) continue;  // no transfer in flight
    for (int i = 0; i < plan.group_size(kind); ++i) {
      const int m = plan.group_member(kind, inst, i);
      if (m != r) gpu_.spin_head(m);
    }
  }
}

}  // namespace fleetsim
