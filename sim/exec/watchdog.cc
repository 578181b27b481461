// Watchdog checks on the 100 ms grid, the first timeout's consequences (dumps,
// the monitor poll, the abort), and the later timeouts logged before the abort.
#include "sim/exec/watchdog.h"

#include <algorithm>
#include <string>

namespace fleetsim {

namespace {
constexpr int64_t kWatchdogPollNs = 100'000'000;   // kWatchdogThreadSleepMillis = 100
constexpr int64_t kMonitorPollNs = 1'000'000'000;  // TORCH_NCCL_COORD_CHECK_MILSEC = 1000
int64_t ceil_to(int64_t t, int64_t q) { return (t + q - 1) / q * q; }
}  // namespace

Watchdog::Watchdog(ExecContext& ctx, GpuStreams& gpu)
    : ctx_(ctx), gpu_(gpu), dumped_(static_cast<size_t>(ctx.n), 0) {
  if (ctx.plan.scenario.job.watchdog) timeout_ns_ = ctx.plan.scenario.job.watchdog->ns;
}

void Watchdog::arm(SimTime deadline) {
  const int64_t at = ceil_to(deadline.ns, kWatchdogPollNs);
  if (at_ >= 0 && at_ <= at) return;
  at_ = at;
  ctx_.schedule(at, Priority::kWatchdog, kWatchdog, 0, ++gen_);
}

// Every rank's watchdog: the oldest incomplete collective past its timeout fires.
void Watchdog::check(uint32_t generation) {
  if (generation != gen_) return;  // superseded by an earlier check
  at_ = -1;
  const int64_t now = ctx_.now().ns;
  int64_t next = INT64_MAX;
  for (int r = 0; r < ctx_.n && !ctx_.stop; ++r) {
    if (ctx_.dead(r)) continue;
    for (uint32_t i = 0; i < gpu_.queued(r); ++i) {
      GpuItem& it = gpu_.item(r, i);
      if (it.kind != ItemKind::kCollective && it.kind != ItemKind::kP2p) continue;
      if (it.work.timed_out) break;  // this rank has already fired
      const int64_t deadline = it.work.created.ns + timeout_ns_;
      if (deadline <= now) fire(r, it); else next = std::min(next, deadline);
      break;
    }
  }
  if (next != INT64_MAX && !ctx_.stop) arm(SimTime{next});
}

void Watchdog::fire(int r, GpuItem& item) {
  const SimTime now = ctx_.now();
  item.work.timed_out = true;
  for (Observer* o : ctx_.obs) o->on_timeout(item.work, now);
  RunResult& res = ctx_.result;
  res.hang.timed_out_ranks.push_back(r);
  if (!dumped_[static_cast<size_t>(r)]) {
    dumped_[static_cast<size_t>(r)] = 1;
    for (Observer* o : ctx_.obs) o->on_dump(r, now);
  }
  if (hung_) return;
  hung_ = true;
  res.outcome = Outcome::kHang;
  res.hang.stuck_since = item.work.created;
  res.hang.detected_at = now;
  res.hang.first_timeout_rank = r;
  res.hang.group = item.work.group;
  res.hang.collective_seq_id = item.work.collective_seq_id;
  res.hang.op = item.work.op;
  ctx_.schedule(ceil_to(now.ns + 1, kMonitorPollNs), Priority::kNormal, kDumpAll);
  ctx_.schedule(now.ns + ctx_.plan.scenario.job.dump_wait.ns, Priority::kFault, kAbort);
}

void Watchdog::dump_all() {
  // Under gloo no heartbeat monitor relays the signal: each process dumps its own
  // recorder when its op times out (the exported script does), with no log line.
  const bool relayed = ctx_.plan.scenario.job.backend == CommBackend::kNccl;
  for (int r = 0; r < ctx_.n; ++r) {
    if (dumped_[static_cast<size_t>(r)] || ctx_.dead(r)) continue;
    dumped_[static_cast<size_t>(r)] = 1;
    const std::string line = "[PG ID 0 PG GUID 0(default_pg) Rank " + std::to_string(r) +
                             "] Observed flight recorder dump signal from another rank via TCPStore.";
    for (Observer* o : ctx_.obs) {
      if (relayed) o->on_log(r, ctx_.now(), line);
      o->on_dump(r, ctx_.now());
    }
  }
}

}  // namespace fleetsim
