// Collective and p2p matching. A rank's k-th collective on a group instance is
// matched with every member's k-th, by order, never by name: each instance has one
// slot, since no member's GPU can pass a collective that has not completed. When
// the last member arrives, the cost model times the transfer and every member's
// GPU moves data until kCollDone. Ops that differ in type, size, dtype or root
// (a mismatch), or whose traffic crosses a dead NIC, never complete: members spin.
// Send/recv pairs match per (sender, direction) in order. Owns the slots.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/exec/exec_context.h"
#include "sim/exec/fabric_faults.h"
#include "sim/exec/gpu_stream.h"

namespace fleetsim {

class Matcher {
 public:
  Matcher(ExecContext& ctx, GpuStreams& gpu, FabricFaults& fabric);

  // Rank r's GPU reached `item` (a collective or p2p op at its head).
  void arrive(int r, GpuItem& item);
  // Handover (hybrid_executor.h): r reached the healthy collective `item`
  // before the handover; only the slot is updated (the caller schedules the
  // transfer's end if r was the last member).
  void adopt_arrival(int r, const GpuItem& item);
  // kCollDone: true if the collective completed on every member (the caller
  // then lets each member's streams advance); false if a member died during
  // the transfer or its NIC went down (the others keep spinning).
  bool complete_collective(GroupKind g, int instance);
  // kP2pDone: the same for p2p slot `slot`; sets the pair on success.
  bool complete_p2p(uint32_t slot, int* sender, int* receiver);
  // Rank r died: peers that were moving data with it fall back to spinning.
  void fall_back_to_spin(int r);

 private:
  // Matching state of one group instance.
  struct Slot {
    int32_t arrived = 0;
    int64_t last_arrival = 0;
    uint32_t seq = 0;  // collective_seq_id of the op being matched (the same on every member)
    OpKind kind = OpKind::kAllReduce;
    int64_t bytes = 0;
    DType dtype = DType::kFloat;
    int32_t root = 0;
    bool mismatch = false;
    bool sizes_differ = false;  // a mismatch in bytes (gloo fails it; NCCL spins)
    // The first member to arrive sets what the others must match.
    void open(const WorkRecord& w, const PlanOp& op) {
      seq = w.collective_seq_id;
      kind = op.kind;
      bytes = w.bytes;
      dtype = w.dtype;
      root = op.root;
    }
  };
  // One direction of a pipeline pair (sender, +1 or -1).
  struct P2pSlot {
    bool send_arrived = false, recv_arrived = false;
    int64_t send_bytes = 0, recv_bytes = 0;
    int64_t last_arrival = 0;
  };

  void arrive_p2p(int r, GpuItem& item);
  // Members of instance `instance` of `g`, into members_ (no allocation once sized).
  const std::vector<int>& members(GroupKind g, int instance);
  int64_t transfer_ns(const Slot& s, GroupKind g, int instance, const GroupShape& shape, size_t first) const;

  ExecContext& ctx_;
  GpuStreams& gpu_;
  FabricFaults& fabric_;
  std::array<std::vector<Slot>, kGroupKinds> slots_;  // per group kind and instance
  std::vector<P2pSlot> p2p_;                          // n * 2 (empty without a pp group)
  // Per-member arrival times (ns) per group instance, instance-major, kept only
  // for cost models that time collectives from every member's arrival
  // (CostModel::wants_arrivals, job.collective_model: steps).
  bool want_arrivals_ = false;
  std::array<std::vector<int64_t>, kGroupKinds> arrivals_;
  std::vector<int> members_;  // scratch
};

}  // namespace fleetsim
