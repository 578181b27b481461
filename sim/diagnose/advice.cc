// Step 6 of the walk, the fix: what to do about the cause, naming the op that blocked
// when the evidence holds it (trace.json's CPU ops, the flight recorder's frames and
// `when`, the watchdog's log line) and its length against the watchdog; generic advice
// only when nothing names it. The wording of what blocked is shared with the drill.
#include <algorithm>

#include "sim/diagnose/walk_context.h"

namespace fleetsim::diagnose {
namespace {

std::string python_fix() {
  return "    if step % 400 == 0:\n        m = all_reduce(x)\n        if rank == 0:\n"
         "            print(m)\n"
         "Or log a rank-local value. Never put all_reduce, barrier, broadcast_object_list, "
         "checkpoint saves or metric syncs under rank == 0.";
}

}  // namespace

// The watchdog's timeout and how long the first rank to time out had waited: its log
// line; else the timeout_ms the flight recorder holds on the work.
void WalkContext::fill_watchdog(BlockedOp& b) const {
  if (!watchdogs.empty()) {
    const WatchdogLine& w = watchdogs.front();
    if (w.timeout_ms > 0) b.watchdog_s = static_cast<double>(w.timeout_ms) / 1000;
    b.waited_ms = w.ran_for_ms;
  }
  if (b.watchdog_s >= 0) return;
  // The timeout on the work where the culprit was named, else on the newest entry.
  int64_t newest = -1;
  for (const auto& [r, dump] : rec.dumps) {
    for (const FrEntry& e : dump.entries) {
      if (e.timeout_ms() <= 0) continue;
      const bool at_divergence = blamed_ && e.pg_name() == blamed_->pg_name &&
                                 (blamed_->p2p ? e.is_p2p && e.p2p_seq_id == blamed_->seq
                                               : !e.is_p2p && e.collective_seq_id == blamed_->seq);
      if (at_divergence) {
        b.watchdog_s = static_cast<double>(e.timeout_ms()) / 1000;
        return;
      }
      if (e.time_created_ns > newest) {
        newest = e.time_created_ns;
        b.watchdog_s = static_cast<double>(e.timeout_ms()) / 1000;
      }
    }
  }
}

// "only rank 0 runs it" when trace.json shows the CPU op on some ranks only.
std::string WalkContext::only_ranks_note(const std::string& cpu_op) const {
  auto it = rec.cpu_op_ranks.find(cpu_op);
  if (it == rec.cpu_op_ranks.end() || it->second.empty() || static_cast<int>(it->second.size()) >= rank_count()) return "";
  const std::vector<int>& r = it->second;
  if (r.size() == 1) return "only rank " + std::to_string(r[0]) + " runs it";
  if (r.size() <= 8) return "only ranks " + format_ranks(r) + " run it";
  return "run by " + std::to_string(r.size()) + " of " + std::to_string(rank_count()) + " ranks";
}

// A culprit's CPU op from trace.json: one it entered and never left, or one still
// running after the others began to wait that lasts longer than the watchdog.
std::optional<BlockedOp> WalkContext::cpu_blocked_op(int rank) const {
  auto last = rec.last_cpu_op.find(rank);
  auto stuck = rec.cpu_stuck.find(rank);
  BlockedOp b;
  b.rank = rank;
  fill_watchdog(b);
  if (stuck != rec.cpu_stuck.end()) {
    b.kind = BlockedOp::Kind::kNeverReturned;
    b.name = stuck->second.where;
    if (last != rec.last_cpu_op.end() && last->second.never_returned && last->second.name == b.name) {
      b.length_s = last->second.dur_s;
    }
    if (rec.summary && rec.summary->hang_step >= 0) {
      b.step = rec.summary->hang_step;
    } else if (!rec.steps.empty()) {
      b.step = rec.steps.back().step + 1;  // the step after the last one the job completed
    }
  } else if (last != rec.last_cpu_op.end() && !last->second.never_returned && b.watchdog_s > 0 &&
             last->second.dur_s >= b.watchdog_s &&
             (!blamed_ || last->second.start_s + last->second.dur_s >= static_cast<double>(blamed_->time_ns) / 1e9)) {
    b.kind = BlockedOp::Kind::kOutlastsWatchdog;
    b.name = last->second.name;
    b.length_s = last->second.dur_s;
    b.step = last->second.step;
  } else {
    return std::nullopt;
  }
  b.note = only_ranks_note(b.name);
  return b;
}

std::optional<BlockedOp> WalkContext::blocked_op() const {
  if (d.culprit_ranks.empty()) return std::nullopt;
  if (d.cause == Cause::kRankStalled || d.cause == Cause::kCpuBlocked) {
    for (int r : d.culprit_ranks) {
      std::optional<BlockedOp> b = cpu_blocked_op(r);
      if (!b) continue;
      b->store_barrier = d.cause == Cause::kCpuBlocked;
      if (!b->store_barrier) b->waiting_in = d.op_name.empty() ? d.op : d.op_name;
      return b;
    }
    return std::nullopt;
  }
  // A collective under a rank condition that only the culprit takes.
  if (d.cause != Cause::kExtraCollective || !blamed_ || !is_rank_condition(when_) || d.culprit_ranks.size() != 1) {
    return std::nullopt;
  }
  BlockedOp b;
  b.kind = BlockedOp::Kind::kRankOnlySync;
  b.rank = d.culprit_ranks[0];
  b.name = d.op_name.empty() ? d.op : d.op_name;
  b.note = d.op_name.empty() ? "" : d.op;
  b.site = blamed_->site;
  b.when = when_;
  b.step = blamed_->step;
  b.sync = true;
  fill_watchdog(b);
  return b;
}

// The op the culprit was named at: "`grads` (dp.yaml:12, under `...`, nccl:all_reduce on pg 2 seq 59)
// at step 30", the profiling name when frames do not name it.
std::string WalkContext::named_op_advice(const BlockedOp& b) const {
  if (b.name.empty()) return "the collective";
  BlockedOp placed = b;
  placed.note = (b.note.empty() ? "" : b.note + " ") + "on pg " + d.pg_name +
                (d.collective_seq_id >= 0 ? " seq " + std::to_string(d.collective_seq_id) : "") +
                (d.p2p_seq_id >= 0 ? " p2p_seq_id " + std::to_string(d.p2p_seq_id) : "");
  return op_phrase(placed) + (b.step >= 0 ? " at step " + std::to_string(b.step) : "");
}

// The causes whose fix names no op.
std::string WalkContext::other_advice(const std::string& who) const {
  switch (d.cause) {
    case Cause::kRankCrashed:
      return "Read " + who + "'s own log and stderr, dmesg/XIDs and DCGM diagnostics on its node; the "
             "other ranks are victims. Restart from the last checkpoint without that node if it is hardware.";
    case Cause::kStraggler:
      return "Bisect: exclude " + who + "'s node or halve the node set; run nccl-tests all_reduce_perf on "
             "one node and on node pairs; check its clocks and thermals (nvidia-smi -q -d PERFORMANCE) and XIDs.";
    case Cause::kSlowLink:
      if (d.culprit_ranks.empty()) {
        return "Every " + d.pg_desc + " group is slower than the fabric allows, so a link they all cross "
               "is slow. Bisect: run nccl-tests all_reduce_perf on node pairs to find the node in every slow "
               "pair; on it check GPUDirect RDMA (nvidia-peermem loaded, NCCL_DEBUG=INFO shows GDRDMA), the "
               "NIC-GPU NUMA affinity (nvidia-smi topo -m), NIC/cable errors and link speeds (ibstat).";
      }
      return "Run nccl-tests on the node pairs of " + who + ", check NIC/cable errors and link speeds "
             "(ibstat), and bisect the group.";
    case Cause::kNvlinkDegraded:
      return "The slow group talks over NVLink only, so a GPU's NVLink or an NVSwitch port on the node of " +
             who + " is degraded. On that node: nvidia-smi nvlink --status (link speeds; a link down or "
             "trained slow), nvidia-smi nvlink -e (error counters), nvidia-smi -q for XIDs and row remaps, "
             "dcgmi diag -r 2; nccl-tests all_reduce_perf on that node alone against a healthy one. Drain the "
             "node if a link is down.";
    case Cause::kRanksAbsent:
      return "The job started without its full gang: " + who + " never ran. Check the scheduler and the "
             "launcher's logs on their nodes (container pull, OOM at start, a bad node), then relaunch; "
             "set a short rendezvous/first-collective timeout so this fails in minutes, not at the watchdog.";
    case Cause::kCpuBlocked:
      if (d.blocked_op) return blocked_text(*d.blocked_op);
      return "Every rank waits on CPU-side work (a store barrier), so no GPU spins and no NCCL watchdog "
             "fires. py-spy dump " + who + ": it is stuck before the barrier (e.g. a checkpoint write on a "
             "hung filesystem). Add a timeout to that I/O and to the barrier (monitored_barrier names the "
             "ranks that did not arrive).";
    case Cause::kRotatingStraggler:
      return "No single rank is slow: a short stall hits a different rank each time, and in a synchronous "
             "job every stall costs every rank. Catch one: py-spy dump --native on the slowest rank during "
             "a slow step. Python garbage collection is the usual suspect (gc.freeze() after setup, "
             "gc.disable() and a gc.collect() on every rank at the same step); then data-loader workers, "
             "host memory pressure and noisy neighbours.";
    case Cause::kNetworkError:
      return "The NIC (or its cable or switch port) serving " + who + " failed; NCCL picks NICs at communicator "
             "creation and does not fail over, so the job died after the IB retry timeout. On that node: ibstat / "
             "ibv_devinfo (port state), dmesg (mlx5 link down), the switch port's counters. Restart from the last "
             "checkpoint without that node, or after the link is fixed; raising NCCL_IB_TIMEOUT only delays the error.";
    default: break;
  }
  return "Query ncclras twice and look for a gap that does not move; diff opCount with "
         "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL on a repro; if no software desync turns up, check "
         "hardware (nccl-tests on node pairs, XIDs, DCGM).";
}

std::string WalkContext::advice() const {
  const std::string who = d.culprit_ranks.empty() ? "the culprit" : ranks_text(d.culprit_ranks);
  // The op the divergence names, for causes whose fix is about a collective.
  BlockedOp named;
  named.name = d.op_name.empty() ? d.op : d.op_name;
  named.note = d.op_name.empty() ? "" : d.op;
  if (blamed_) {
    // A send or recv never posted: the frames and condition are its partner's, only the step is shared.
    if (blamed_->partner_op.empty()) {
      named.site = blamed_->site;
      named.when = blamed_->when;
    }
    named.step = blamed_->step;
  }
  fill_watchdog(named);
  const std::string their_wait = "; its peers wait in it until " + watchdog_phrase(named) + " fires" +
                                 (named.waited_ms >= 0 ? " (the watchdog's line: ran for " +
                                                             std::to_string(named.waited_ms) + " ms)"
                                                       : "");
  switch (d.cause) {
    case Cause::kNone: return "Nothing to fix.";
    case Cause::kExtraCollective:
      if (d.blocked_op) return blocked_text(*d.blocked_op) + "\n" + python_fix();
      return "Make the collective unconditional: " + who + " issues an extra " + named_op_advice(named) +
             " the others never call (NCCL pairs collectives by order, not name). Find the "
             "rank-dependent branch (py-spy dump every rank) and call it on every rank.";
    case Cause::kMissingCollective:
      return "Make the collective unconditional and data-independent: " + who + " skipped " +
             named_op_advice(named) + (d.op.empty() ? "" : their_wait) +
             ". Look for a skip such as `if p.grad is not None: all_reduce` or uneven batch counts; issue it on "
             "every rank, with a zero tensor if needed. Confirm with TORCH_DISTRIBUTED_DEBUG=DETAIL on a repro.";
    case Cause::kMismatchedCollective:
      return "Use the same shapes and dtypes on every rank: " + who + " calls " + d.op + " with " +
             found_ + " where its peers use " + expected_ +
             ". Reproduce with TORCH_DISTRIBUTED_DEBUG=DETAIL and a short timeout to turn the hang into "
             "an error naming both.";
    case Cause::kRankStalled:
      if (d.blocked_op && d.blocked_op->kind == BlockedOp::Kind::kOutlastsWatchdog) return blocked_text(*d.blocked_op);
      if (d.blocked_op) {
        return blocked_text(*d.blocked_op) + " py-spy dump --pid on rank " + std::to_string(d.blocked_op->rank) +
               " (or /handler/dump_traceback) shows where in it the CPU waits.";
      }
      return "py-spy dump --pid on " + who + " (or /handler/dump_traceback): its CPU is stuck "
             "(data loading, I/O, a lock, a recompile) and it never issued " +
             (d.op.empty() ? "the collective" : named_op_advice(named) + their_wait) + ".";
    default: break;
  }
  return other_advice(who);
}

}  // namespace fleetsim::diagnose
