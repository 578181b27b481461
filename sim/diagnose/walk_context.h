// Internal to the walker: the evidence read once from a Record, the Diagnosis being
// built, and the helpers each isolation-order step uses to describe and blame.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "sim/diagnose/blocked_op.h"
#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/fr_analyzer.h"
#include "sim/diagnose/signals.h"

namespace fleetsim::diagnose {

// "rank 3" or "ranks [0, 5]".
std::string ranks_text(const std::vector<int>& r);
// Whether a `when` condition depends on the rank ("rank == 0 && step % 400 == 0").
inline bool is_rank_condition(const std::string& when) { return when.find("rank") != std::string::npos; }

class WalkContext {
 public:
  WalkContext(const Record& rec, const HealthyModel* model);

  void note(int step, std::string text) { d.evidence.push_back(Evidence{step, std::move(text)}); }
  bool has_mismatch() const;
  bool slow_evidence() const;
  std::string trend_text() const;
  void note_watchdogs();
  void note_pg_status();
  void note_waits();
  std::string log_name() const;                  // "job.log", "train.log", or "the logs"
  std::string log_place(size_t line_no) const;   // "train.log line 4" for a line of rec.log_lines
  bool counts(const Divergence& div) const;  // does this divergence matter for the verdict?
  std::string describe(const Divergence& div) const;
  void blame_hang();
  void blame_slow();
  std::string advice() const;
  // What blocked the culprit, when the evidence names it (blocked_op.h).
  std::optional<BlockedOp> blocked_op() const;

  const Record& rec;
  FrFindings fr;
  UtilPattern util;
  std::vector<WatchdogLine> watchdogs;
  std::optional<LogDesync> log_desync;  // what the watchdog records alone say
  std::optional<LogDesync> fingerprint; // a TORCH_DISTRIBUTED_DEBUG=DETAIL mismatch report
  LogExtras log_extras;                 // heartbeat, NCCL WARN and ncclras lines
  std::vector<int> crashed;
  std::vector<int> net_errors;  // ranks whose log shows NCCL's network error
  StepTrend trend;
  std::optional<LateArriver> late;
  std::optional<SlowWindow> window;       // a slow stretch mid-run (steps.csv)
  WindowCulprits window_who;              // who made it slow
  std::optional<RotatingStalls> rotating; // slow steps whose slowest rank moves
  std::optional<SlowGroup> slow_group;  // sibling comparison: records without a healthy model
  ModelCheck model;                     // the healthy model's expectation, when the caller gave one
  Diagnosis d;

 private:
  void settle_pairs();
  void blame_divergence(const Divergence& div);
  std::optional<BlockedOp> cpu_blocked_op(int rank) const;
  void fill_watchdog(BlockedOp& b) const;
  std::string only_ranks_note(const std::string& cpu_op) const;
  std::string named_op_advice(const BlockedOp& b) const;
  std::string other_advice(const std::string& who) const;
  void blame_model_slow_link();
  void blame_window();
  void blame_rotating();
  int rank_count() const;
  bool finished_its_steps(int rank, const std::string& pg) const;
  Cause classify_absent(const Divergence& div) const;
  bool blame_without_divergence();
  bool blame_crash_from_summary();
  bool blame_network_error();
  bool blame_absent();
  bool blame_cpu_blocked();
  bool blame_log_desync();
  bool blame_wait_roots(const Divergence* best);
  bool blame_log_silent();
  bool group_progressed(int rank) const;
  std::vector<int> absent_ranks() const;
  std::optional<Divergence> blamed_;  // the divergence the culprit was named at, if any
  std::string when_;      // the rank/step condition on the culprit's op, if any
  std::string expected_;  // mismatch: what the peers use
  std::string found_;     // mismatch: what the culprit uses
};

}  // namespace fleetsim::diagnose
