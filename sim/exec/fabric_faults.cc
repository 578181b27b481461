// Link degradations per group instance, and dead NICs: when they go down, which
// transfers they stall, and when NCCL gives up on them.
#include "sim/exec/fabric_faults.h"

#include <cstdlib>
#include <string>

namespace fleetsim {

FabricFaults::FabricFaults(ExecContext& ctx, GpuStreams& gpu) : ctx_(ctx), gpu_(gpu) {
  const Plan& plan = ctx.plan;
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
  nic_down_at_.assign(plan.nic_faults.size(), -1);
  nic_err_pending_.assign(plan.nic_faults.size(), 0);
  nic_err_group_.assign(plan.nic_faults.size(), GroupKind::kWorld);
}

void FabricFaults::begin_step(int r, int64_t step) {
  for (size_t k = 0; k < ctx_.plan.nic_faults.size(); ++k) {
    const Fault& f = ctx_.plan.nic_faults[k];
    if (nic_down_at_[k] < 0 && f.at_step == step && ctx_.plan.nic_serves(r, f.node, f.nic))
      nic_down_at_[k] = ctx_.now().ns;
  }
}

int FabricFaults::dead_nic(const std::vector<int>& ranks) const {
  for (size_t k = 0; k < ctx_.plan.nic_faults.size(); ++k) {
    const Fault& f = ctx_.plan.nic_faults[k];
    if (nic_down_at_[k] >= 0 && nic_down_at_[k] <= ctx_.now().ns && ctx_.plan.crosses_nic(ranks, f.node, f.nic))
      return static_cast<int>(k);
  }
  return -1;
}

// NCCL does not fail over to another NIC: the transfer's work requests on the dead
// port are retried until the IB retry count runs out (NCCL_IB_TIMEOUT,
// NCCL_IB_RETRY_CNT = 7), then the proxy reports a completion error. Until then
// every member's kernel spins with nothing moving.
void FabricFaults::stall_on_dead_nic(int k, const std::vector<int>& ranks, GroupKind g) {
  for (int m : ranks)
    if (!ctx_.dead(m)) gpu_.spin_head(m);
  const auto ku = static_cast<size_t>(k);
  if (nic_err_pending_[ku]) return;
  nic_err_pending_[ku] = 1;
  nic_err_group_[ku] = g;
  // 4.096 us x 2^NCCL_IB_TIMEOUT per try, 7 retries: 20 since NCCL 2.23 (~30 s), 18 before (~7.5 s).
  const std::string& v = ctx_.plan.scenario.job.nccl_version;
  const int minor = v.size() > 2 ? std::atoi(v.c_str() + 2) : 30;
  const int64_t per_try_ns = int64_t{4096} << (minor >= 23 ? 20 : 18);
  ctx_.schedule(ctx_.now().ns + 7 * per_try_ns, Priority::kFault, kNicError, static_cast<uint32_t>(k));
}

// The IB completion error: on every rank the dead NIC serves, ProcessGroupNCCL's
// watchdog sees ncclRemoteError from ncclCommGetAsyncError, logs it and takes the
// process down (SIGABRT); the launcher then tears the job down.
bool FabricFaults::error_hits(int k, int r) const {
  const Fault& f = ctx_.plan.nic_faults[static_cast<size_t>(k)];
  return ctx_.plan.nic_serves(r, f.node, f.nic);
}

Fault FabricFaults::error_fault(int k) const {
  Fault logged = ctx_.plan.nic_faults[static_cast<size_t>(k)];
  logged.where = group_name(nic_err_group_[static_cast<size_t>(k)]);
  return logged;
}

}  // namespace fleetsim
