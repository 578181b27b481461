// The non-FR evidence of the isolation order: the utilization pattern after the job
// stopped progressing (telemetry.csv), PyTorch's watchdog lines and crash lines
// (job.log), and the step-time trend (steps.csv).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/cause.h"
#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {

enum class UtilKind { kNoData, kAllSpinning, kSomeIdle, kAllIdle, kBusy };

struct UtilPattern {
  UtilKind kind = UtilKind::kNoData;
  std::vector<int> idle_ranks;      // ~0% GPU utilization in the window
  bool progress_stopped = false;    // `step` stopped changing before the end
  double window_start_s = 0;
  double window_end_s = 0;
  int heavy_rank = -1;              // busiest tensor pipe (a compute straggler), busy runs
  double heavy_tensor = 0;
  double median_tensor = 0;
  std::string text;                 // one line for the evidence
};

// Reads the window after the job stopped progressing (where the highest `step`
// stopped changing), or the last few samples per rank when it never stopped.
UtilPattern read_utilization(const std::vector<TelemetryRow>& rows);

// One PyTorch watchdog timeout record, as any release words it ("Watchdog caught
// collective operation timeout: WorkNCCL(SeqNum=.., OpType=.., ...)" or "Work
// WorkNCCL(...) timed out in blocking wait"), with the pg_status line that follows it.
struct WatchdogLine {
  size_t line_no = 0;  // 1-based, in job.log: the physical line the record starts on
  int rank = -1;       // global rank from a "[rankN]:" prefix, else the record's "[Rank N]"
  int64_t seq = -1;
  std::string op_type;
  int64_t numel_in = -1;  // -1: the release did not print it
  int64_t numel_out = -1;
  int64_t timeout_ms = -1;
  int64_t ran_for_ms = -1;
  std::string pg;       // process group: the GUID (global name) of a "[PG ID n PG GUID g(desc) ...]"
                        // tag, else its number; "" if unknown
  std::string pg_desc;  // "default_pg", "tp", ... ("" if unknown)
  int64_t last_enqueued = -1;   // from "last enqueued (NCCL) work: N", -1 if not logged
  int64_t last_completed = -1;  // from "last completed (NCCL) work: N"
};

std::optional<WatchdogLine> parse_watchdog_line(std::string_view line);
// Every watchdog record of a log, once per (rank, group, seq), in log order. Lines a
// terminal wrapped are joined again first, and a line may hold several records (ranks
// interleaved) or share itself with a progress bar.
std::vector<WatchdogLine> find_watchdog_lines(const std::vector<std::string>& lines);

// The log's lines as written before a terminal wrapped them: a physical line of the
// same width as the one before it that does not open a log record of its own continues
// it. '\r' (progress bars redrawn in place) also ends a line. first_line (optional)
// gets each logical line's 1-based physical line number.
std::vector<std::string> logical_lines(const std::vector<std::string>& lines,
                                       std::vector<size_t>* first_line = nullptr);

// Other things PyTorch and NCCL print about a hang: the heartbeat monitor (the watchdog
// thread itself stuck), NCCL WARN lines, and ncclras reports of collective-count gaps.
struct LogExtras {
  std::vector<std::string> heartbeat;  // one line each, as found
  std::vector<std::string> nccl_warn;
  std::vector<std::string> ras;
  std::vector<int> ranks_seen;         // every global rank a "[rankN]:" prefix names
};
LogExtras find_log_extras(const std::vector<std::string>& lines);

// What the watchdog records alone say about a desync, within one process group: ranks
// at different SeqNums, or at one SeqNum with a different OpType or size.
struct LogDesync {
  std::string pg;
  std::string pg_desc;
  int64_t seq = -1;                // the first sequence number the group disagrees at
  Cause cause = Cause::kUnknown;   // extra_, missing_ or mismatched_collective
  std::vector<int> culprits;       // the ranks that diverged (the minority)
  std::vector<int> others;
  std::string op;                  // the culprits' OpType
  std::string found, expected;     // the culprits' work and the others' ("SeqNum=21 BROADCAST NumelIn=1")
  bool tie = false;                // no side is smaller: the side holding the lowest rank is named
  std::vector<std::string> facts;  // "rank(s) [0] at SeqNum=315 ALLREDUCE NumelIn=1", ...
  std::string implies;             // one line: which rank diverged, at which seq
};
std::optional<LogDesync> find_log_desync(const std::vector<WatchdogLine>& records);

// TORCH_DISTRIBUTED_DEBUG=DETAIL turns a desync into an error naming both sides:
// "Detected mismatch between collectives on ranks. Rank A is running collective:
// CollectiveFingerPrint(SequenceNumber=S, OpType=X, TensorShape=[..], ...), but Rank B
// is running collective: CollectiveFingerPrint(...)". The first such report, as a
// desync (mismatched_collective at S when both stand at S).
std::optional<LogDesync> find_fingerprint_mismatch(const std::vector<std::string>& lines);

// "nccl:all_reduce" for OpType "ALLREDUCE", "nccl:_all_gather_base" for "_ALLGATHER_BASE".
std::string profiling_name_of_op_type(std::string_view op_type);

// Ranks that the log says crashed or exited (launcher lines, "exitcode", signals).
// A bare `local_rank: N` is a rank within its node, not a global rank, and is ignored.
std::vector<int> find_crashed_ranks(const std::vector<std::string>& lines);

// Ranks whose log shows NCCL's network error (ncclRemoteError, or an IB completion
// error): a NIC, cable or switch port failed under them. NCCL does not fail over.
std::vector<int> find_network_error_ranks(const std::vector<std::string>& lines);

// The rank a log line is prefixed with ("[rank3]:", "[Rank 3]"), or -1.
int rank_of_line(std::string_view line);

struct StepTrend {
  bool slow = false;
  double early_median_s = 0;
  double late_median_s = 0;
  int slowest_rank = -1;  // the most frequent slowest_rank in the late steps
  int slowest_count = 0;
  int late_steps = 0;
};
StepTrend read_step_trend(const std::vector<StepRow>& steps);

// A stretch of steps clearly slower than the run's own baseline that is not the
// whole run (a node throttling for a while, a noisy neighbour for an hour).
// Found on a rolling median of step times, so single spikes do not make one.
struct SlowWindow {
  int64_t first_step = -1;
  int64_t last_step = -1;
  double start_s = 0;     // start of the first slow step
  double end_s = 0;       // end of the last slow step
  double median_s = 0;    // median step time inside the window
  double baseline_s = 0;  // the run's own typical step time outside it
  bool to_the_end = false;
};
std::optional<SlowWindow> find_slow_window(const std::vector<StepRow>& steps);

// The ranks that made a window slow: those whose tensor pipes were busiest in it
// relative to the other ranks (a slower GPU computes longer while its peers wait
// in NCCL with idle tensor pipes), or, without telemetry for the window, the
// ranks that finished last far more often than chance. `basis` says which.
struct WindowCulprits {
  std::vector<int> ranks;
  std::string basis;
};
WindowCulprits window_culprits(const SlowWindow& w, const std::vector<StepRow>& steps,
                               const std::vector<TelemetryRow>& telemetry, int ranks);

// Steps far slower than the run's fast steps whose slowest rank keeps moving:
// transient stalls that hit a different rank each time (uncoordinated garbage
// collection, data-loader hiccups, noisy neighbours). Each costs the whole job.
struct RotatingStalls {
  int spikes = 0;            // steps at least 25% above the fast tenth
  int steps = 0;
  int distinct_ranks = 0;    // different slowest ranks among the spikes
  int max_per_rank = 0;      // the most spikes any one rank was last in
  double fast_s = 0;         // 10th percentile of step time
  double spike_median_s = 0;
  double excess_share = 0;   // share of the run's time spent above fast_s in spikes
};
std::optional<RotatingStalls> find_rotating_stalls(const std::vector<StepRow>& steps);

}  // namespace fleetsim::diagnose
