// The ranks' ProcessGroupNCCL watchdogs. Each checks its rank's oldest incomplete
// collective or p2p op every 100 ms; one older than the timeout (counted from its
// CPU enqueue) fires: the rank logs the timeout and dumps its flight recorder,
// every other live rank dumps at its next 1 s monitor poll, and the job aborts
// after job.dump_wait. One pending check event serves every rank.
// Owns the timeout, the pending check, which ranks have dumped, and the hang.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/exec/exec_context.h"
#include "sim/exec/gpu_stream.h"

namespace fleetsim {

class Watchdog {
 public:
  Watchdog(ExecContext& ctx, GpuStreams& gpu);

  // A collective or p2p op was enqueued now: a check is due by its deadline.
  void on_enqueue() {
    if (timeout_ns_ >= 0) arm(ctx_.now() + Duration{timeout_ns_});
  }
  // Handover (hybrid_executor.h): the check pending at `at` (ns; -1: none) was
  // armed `gen` times, and no check has run yet.
  void adopt(int64_t at, uint32_t gen) {
    at_ = at;
    gen_ = gen;
  }
  // Hand-back: the pending check (ns; -1: none) and its generation.
  int64_t pending_at() const { return at_; }
  uint32_t generation() const { return gen_; }
  // kWatchdog: every live rank's watchdog checks its oldest incomplete op.
  void check(uint32_t generation);
  // kDumpAll: every live rank that has not dumped yet sees the signal and dumps.
  void dump_all();

 private:
  void arm(SimTime deadline);
  void fire(int r, GpuItem& item);

  ExecContext& ctx_;
  GpuStreams& gpu_;
  int64_t timeout_ns_ = -1;  // -1: watchdog off
  int64_t at_ = -1;          // time of the pending check, -1 if none
  uint32_t gen_ = 0;         // of the pending check (earlier ones are stale)
  bool hung_ = false;        // some watchdog fired
  std::vector<uint8_t> dumped_;  // per rank
};

}  // namespace fleetsim
