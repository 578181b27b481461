// job.log in PyTorch's wording. The watchdog text follows ProcessGroupNCCL:
// "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=..., OpType=...,
// NumelIn=..., NumelOut=..., Timeout(ms)=...) ran for ... milliseconds before
// timing out." (ProcessGroupNCCL.cpp's wording; docs/diagnose.md quotes it).
// Under job.backend: gloo, timeouts and size mismatches read as PyTorch 2.15's
// gloo prints them (tests/fixtures/gloo/ holds the real logs they follow).
#include "sim/observe/job_log.h"

#include <cinttypes>
#include <string>

namespace fleetsim {

std::string glog_stamp(char severity, SimTime t) {
  const int64_t secs = t.ns / 1'000'000'000;
  const int64_t frac = t.ns % 1'000'000'000;
  const int64_t day = 1 + secs / 86400;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%c01%02" PRId64 " %02" PRId64 ":%02" PRId64 ":%02" PRId64 ".%09" PRId64,
                severity, day, (secs / 3600) % 24, (secs / 60) % 60, secs % 60, frac);
  return buf;
}

// NumelIn/NumelOut of a work item, as the flight recorder and watchdog count them.
void work_numel(const Plan& plan, const WorkRecord& w, int64_t* in, int64_t* out) {
  const PlanOp& op = plan.ops[w.op];
  const int64_t numel = w.bytes / dtype_bytes(w.dtype);
  const int n = plan.group_size(w.group);
  *in = *out = numel;
  if (op.kind == OpKind::kAllGather) *in = numel / n;
  if (op.kind == OpKind::kReduceScatter) *out = numel / n;
}

JobLog::JobLog(const Plan& plan, std::FILE* out)
    : plan_(plan), out_(out),
      last_enq_(static_cast<size_t>(plan.ranks) * kGroupKinds, -1),
      last_done_(static_cast<size_t>(plan.ranks) * kGroupKinds, -1) {}

void JobLog::line(int rank, const std::string& text) {
  if (rank >= 0) std::fprintf(out_, "[rank%d]:", rank);
  std::fputs(text.c_str(), out_);
  std::fputc('\n', out_);
}

void JobLog::on_work_enqueued(const WorkRecord& w) {
  if (w.peer < 0) last_enqueued(w.rank, w.group) = w.collective_seq_id;
}

void JobLog::on_work_completed(const WorkRecord& w) {
  if (w.peer < 0) last_completed(w.rank, w.group) = w.collective_seq_id;
}

void JobLog::on_log(int rank, SimTime t, std::string_view text) {
  if (text.rfind("[PG ID", 0) == 0) {
    line(rank, "[" + glog_stamp('E', t) + " ProcessGroupNCCL.cpp] " + std::string(text));
  } else {
    line(rank, " " + std::string(text));
  }
}

namespace {
// Where PyTorch's wheels were built: gloo's messages name their source by it.
constexpr const char* kGlooSource = "/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/";

// "[PG ID 1 PG GUID 3(tp) Rank 9]": the rank-local pg_id, then the group's global
// name (the flight recorder's process_group) and its description.
std::string pg_tag_of(const Plan& plan, GroupKind g, int rank) {
  return "[PG ID " + std::to_string(static_cast<int>(g)) + " PG GUID " +
         plan.group_global_name(g, plan.group_instance(g, rank)) + "(" +
         (g == GroupKind::kWorld ? "default_pg" : group_name(g)) + ") Rank " + std::to_string(rank) + "]";
}
}  // namespace

void JobLog::gloo_timeout(const WorkRecord& w) {
  if (timed_out_rank_ < 0) timed_out_rank_ = w.rank;
  const int64_t timeout_ms = plan_.scenario.job.watchdog->ns / 1'000'000;
  const bool send = w.peer >= 0 && plan_.ops[w.op].kind == OpKind::kSend;
  line(w.rank, " Traceback (most recent call last):");
  line(w.rank, std::string(" RuntimeError: [") + kGlooSource + (send ? "unbound_buffer.cc:129" : "unbound_buffer.cc:78") +
                   "] Timed out waiting " + std::to_string(timeout_ms) + "ms for " + (send ? "send" : "recv") +
                   " operation to complete");
}

void JobLog::on_backend_failure(int rank, SimTime, BackendFailure f, const WorkRecord&, int64_t incoming,
                                int64_t expected) {
  if (f == BackendFailure::kSizeMismatch) {
    if (crashed_rank_ < 0) aborted_ = true;
    // std::terminate's report goes to stderr with no rank prefix.
    line(-1, "terminate called after throwing an instance of 'gloo::EnforceNotMet'");
    line(-1, std::string("  what():  [enforce fail at ") + kGlooSource + "pair.cc:464] op.preamble.length <= op.nbytes. " +
                 std::to_string(incoming) + " vs " + std::to_string(expected) +
                 ". Received data size doesn't match expected size. Is there a distributed collective mismatch in "
                 "your code?");
    return;
  }
  line(rank, " Traceback (most recent call last):");
  line(rank, std::string(" RuntimeError: [") + kGlooSource + "pair.cc:561] Connection closed by peer [127.0.0.1]:" +
                 std::to_string(29500 + rank) +
                 ". This is typically caused by a remote worker crashing. Check the logs of the remote worker "
                 "before reporting an error.");
}

void JobLog::on_timeout(const WorkRecord& w, SimTime t) {
  if (gloo()) {
    gloo_timeout(w);
    return;
  }
  int64_t in = 0, out = 0;
  work_numel(plan_, w, &in, &out);
  const int64_t ran_ms = (t - w.created).ns / 1'000'000;
  const int64_t timeout_ms = plan_.scenario.job.watchdog->ns / 1'000'000;
  const std::string stamp = "[" + glog_stamp('E', t) + " ProcessGroupNCCL.cpp";
  const std::string pg_tag = pg_tag_of(plan_, w.group, w.rank);
  char msg[512];
  std::snprintf(msg, sizeof msg,
                ":632] [Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%u, "
                "OpType=%s, NumelIn=%" PRId64 ", NumelOut=%" PRId64 ", Timeout(ms)=%" PRId64
                ") ran for %" PRId64 " milliseconds before timing out.",
                w.rank, w.peer < 0 ? w.collective_seq_id : w.p2p_seq_id,
                op_watchdog_name(plan_.ops[w.op].kind), in, out, timeout_ms, ran_ms);
  line(w.rank, stamp + msg);
  line(w.rank, stamp + "] " + pg_tag + "  failure detected by watchdog at work sequence id: " +
                   std::to_string(w.collective_seq_id) + " PG status: last enqueued work: " +
                   std::to_string(last_enqueued(w.rank, w.group)) + ", last completed work: " +
                   std::to_string(last_completed(w.rank, w.group)));
  line(w.rank, stamp + "] " + pg_tag +
                   " Some NCCL operations have failed or timed out. Due to the asynchronous nature of "
                   "CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.");
  line(w.rank, stamp + "] " + pg_tag +
                   " To avoid data inconsistency, we are taking the entire process down.");
}

void JobLog::on_fault(int rank, SimTime t, const Fault& f) {
  if (f.kind == FaultKind::kCrash && crashed_rank_ < 0) {
    crashed_rank_ = rank;
  }
  if (f.kind != FaultKind::kNicDown) return;
  // The IB completion error after the retries ran out (NCCL's proxy thread), then
  // ProcessGroupNCCL's watchdog taking the process down on ncclRemoteError.
  if (crashed_rank_ < 0) {
    crashed_rank_ = rank;
    nic_error_ = true;
  }
  const int gpn = plan_.scenario.fleet.gpus_per_node;
  const int peer_node = (f.node + 1) % std::max(1, plan_.scenario.fleet.nodes);
  char ib[320];
  std::snprintf(ib, sizeof ib,
                "NET/IB : Got completion from peer 10.0.%d.%d<%d> with status=12 opcode=0 len=0 vendor err 129 "
                "(Send) localGid ::ffff:10.0.%d.%d remoteGids::ffff:10.0.%d.%d",
                peer_node, f.nic, 50000 + rank, f.node, f.nic, peer_node, f.nic);
  line(-1, "node" + std::to_string(f.node) + ":" + std::to_string(1000 + rank) + ":" + std::to_string(1100 + rank) +
               " [" + std::to_string(rank % gpn) + "] transport/net_ib.cc NCCL WARN " + ib);
  const GroupKind g = f.where == "tp" ? GroupKind::kTp : f.where == "dp" ? GroupKind::kDp
                      : f.where == "pp" ? GroupKind::kPp : GroupKind::kWorld;
  const std::string pg_tag = pg_tag_of(plan_, g, rank);
  const std::string stamp = "[" + glog_stamp('E', t) + " ProcessGroupNCCL.cpp:1895] ";
  line(rank, stamp + pg_tag + " Process group watchdog thread terminated with exception: NCCL error: remote "
                              "process exited or there was a network error, NCCL version " +
                 plan_.scenario.job.nccl_version + ".0");
  line(rank, "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
             "prematurely.");
  line(rank, "Last error:");
  line(rank, ib);
}

void JobLog::on_end(SimTime t, Outcome o) {
  const std::string api = " torch/distributed/elastic/multiprocessing/api.py] ";
  if (o == Outcome::kHang && gloo() && timed_out_rank_ >= 0) {
    // The timed-out op raised a RuntimeError: the Python process exits with 1.
    const int gpn = plan_.scenario.fleet.gpus_per_node;
    line(-1, glog_stamp('E', t) + api + "failed (exitcode: 1) local_rank: " + std::to_string(timed_out_rank_ % gpn) +
                 " (pid: " + std::to_string(1000 + timed_out_rank_) + ") of binary: /usr/bin/python3");
  } else if (o == Outcome::kHang) {
    line(-1, glog_stamp('E', t) + api + "failed (exitcode: -6) local_rank: 0 (pid: 1000) of binary: "
                                        "/usr/bin/python3 (Signal 6 (SIGABRT) received by PID 1000)");
  } else if (o == Outcome::kCrash && crashed_rank_ >= 0) {
    const int gpn = plan_.scenario.fleet.gpus_per_node;
    char msg[200];
    std::snprintf(msg, sizeof msg,
                  nic_error_ || aborted_ ? "failed (exitcode: -6) local_rank: %d (pid: %d) of binary: /usr/bin/python3 "
                               "(Signal 6 (SIGABRT) received by PID %d)"
                             : "failed (exitcode: -9) local_rank: %d (pid: %d) of binary: /usr/bin/python3",
                  crashed_rank_ % gpn, 1000 + crashed_rank_, 1000 + crashed_rank_);
    line(-1, glog_stamp('E', t) + api + msg);
    line(-1, glog_stamp('W', t) + api + "Sending SIGTERM to the remaining " +
                 std::to_string(plan_.ranks - 1) + " worker processes");
    // torchrun's closing ChildFailedError report (tests/fixtures/gloo/*.log): the
    // node's other workers, stopped by SIGTERM, then the root cause by global rank.
    const bool abrt = nic_error_ || aborted_;
    const int node = crashed_rank_ / gpn;
    auto failure = [&](int r, const std::string& sig, int signo) {
      const std::string pid = std::to_string(1000 + r);
      line(-1, "  host      : node" + std::to_string(node));
      line(-1, "  rank      : " + std::to_string(r) + " (local_rank: " + std::to_string(r % gpn) + ")");
      line(-1, "  exitcode  : -" + std::to_string(signo) + " (pid: " + pid + ")  (" + sig + ")");
      line(-1, "  error_file: <N/A>");
      line(-1, "  traceback : Signal " + std::to_string(signo) + " (" + sig + ") received by PID " + pid);
    };
    line(-1, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ");
    line(-1, std::string(55, '='));
    line(-1, "train.py FAILED");
    line(-1, std::string(55, '-'));
    line(-1, "Failures:");
    int n = 0;
    for (int r = node * gpn; r < (node + 1) * gpn; ++r) {
      if (r == crashed_rank_) continue;
      line(-1, "[" + std::to_string(++n) + "]:");
      failure(r, "SIGTERM", 15);
    }
    if (n == 0) line(-1, "  <NO_OTHER_FAILURES>");
    line(-1, std::string(55, '-'));
    line(-1, "Root Cause (first observed failure):");
    line(-1, "[0]:");
    failure(crashed_rank_, abrt ? "SIGABRT" : "SIGKILL", abrt ? 6 : 9);
    line(-1, std::string(55, '='));
  }
  std::fflush(out_);
}

}  // namespace fleetsim
