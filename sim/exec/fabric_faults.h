// What faulty links and NICs do to transfers. Degraded links (link, gpudirect,
// nic_affinity faults) are mapped once per group instance to the degradations its
// collectives see. A nic_down fault's NIC dies as the first GPU it serves starts
// the fault's step; transfers crossing it then never move data (their members
// spin) and, once NCCL's IB retries run out, the completion error surfaces
// (kNicError; the engine loop then crashes the ranks the NIC serves).
// Owns the per-instance degradations and the state of each nic_down fault.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/exec/exec_context.h"
#include "sim/exec/gpu_stream.h"

namespace fleetsim {

class FabricFaults {
 public:
  FabricFaults(ExecContext& ctx, GpuStreams& gpu);

  // The degradations instance `instance` of `g` sees, or null if its links are healthy.
  const std::vector<LinkDegradation>* degradation(GroupKind g, int instance) const {
    const auto& idx = degraded_index_[static_cast<size_t>(g)];
    const int32_t d = idx.empty() ? -1 : idx[static_cast<size_t>(instance)];
    return d < 0 ? nullptr : &degraded_[static_cast<size_t>(d)];
  }

  // Whether the plan has nic_down faults at all (else dead_nic is always -1).
  bool any_nic_faults() const { return !nic_down_at_.empty(); }
  // `r` starts `step`: NICs of nic_down faults at that step that serve r go down.
  void begin_step(int r, int64_t step);
  // The index of a nic_down fault whose NIC is down now and which traffic
  // among `ranks` crosses, or -1.
  int dead_nic(const std::vector<int>& ranks) const;
  // NIC fault `k` stalls a transfer among `ranks` on group `g`: the members
  // spin with nothing moving; the IB error is scheduled (once per NIC).
  void stall_on_dead_nic(int k, const std::vector<int>& ranks, GroupKind g);

  // The IB error of NIC fault `k`: whether it takes down rank r, and the fault
  // as it is reported (its `where` is the process group that saw the error).
  bool error_hits(int k, int r) const;
  Fault error_fault(int k) const;

 private:
  ExecContext& ctx_;
  GpuStreams& gpu_;
  // Per group kind and instance: index into degraded_, -1 = healthy (empty
  // when the plan has no link faults).
  std::array<std::vector<int32_t>, kGroupKinds> degraded_index_;
  std::vector<std::vector<LinkDegradation>> degraded_;
  // Per nic_down fault (index into Plan::nic_faults).
  std::vector<int64_t> nic_down_at_;      // when the NIC went down, -1 while up
  std::vector<uint8_t> nic_err_pending_;  // the IB error is scheduled
  std::vector<GroupKind> nic_err_group_;  // the group whose traffic hit it first
};

}  // namespace fleetsim
