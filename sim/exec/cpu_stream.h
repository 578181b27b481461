// Per-rank CPU streams: each rank's CPU interprets the step program in order, as
// PyTorch's Python thread does. `compute` and collectives are enqueued onto the
// rank's GPU launch queue and the CPU moves on; it blocks on a full queue, waits
// for the GPU to drain at a sync (or a barrier, or a log of a GPU value, or
// after any collective or send/recv under job.backend gloo, whose calls return
// only once their op has completed), waits for every rank at a store barrier,
// and is busy for a cpu op's duration. Skip, mismatch and stall faults on an
// op, and stall and crash faults at a step's start, apply here. Owns each rank's
// CPU state, program counter and step, and the flight-recorder ids it gives the
// work it enqueues.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/exec/exec_context.h"
#include "sim/exec/fabric_faults.h"
#include "sim/exec/gpu_stream.h"
#include "sim/exec/handover.h"
#include "sim/exec/rank_faults.h"
#include "sim/exec/watchdog.h"
#include "sim/model/compute_time.h"

namespace fleetsim {

class CpuStreams {
 public:
  CpuStreams(ExecContext& ctx, GpuStreams& gpu, Watchdog& watchdog, FabricFaults& fabric, RankFaults& faults);

  // Rank r starts its current step (step 1 at t = 0): step-start faults apply.
  void begin_step(int r);
  // Runs r's CPU as far as it can go now. Returns whether anything moved.
  bool progress(int r);
  // kCpuWake: a cpu op ended (a released store barrier finds the CPU ready).
  void wake(int r);
  // The step r's CPU is in (job.steps + 1 once it has issued every step).
  int64_t step(int r) const { return step_[static_cast<size_t>(r)]; }
  // Handover (hybrid_executor.h): r's CPU is in `step` at instruction `pc`,
  // blocked on its full launch queue, having issued `records` collectives in
  // all, `seq[g]` of them on group kind g (no send/recv yet).
  void adopt_blocked(int r, int64_t step, uint32_t pc, uint32_t records, const uint32_t (&seq)[kGroupKinds]);
  // Hand-back, the other way: whether r's CPU is blocked on its full launch queue.
  bool blocked_on_queue(int r) const { return state_[static_cast<size_t>(r)] == CpuState::kBlockedQueue; }
  // Its step, instruction, records and seq into *out, as adopt_blocked takes
  // them; false if it has issued a send/recv (its op ids no longer follow).
  bool blocked_position(int r, Handover::Rank* out) const;
  // Cache hint only (no effect on the run): r's per-rank words.
  void prefetch_state(int r) const {
    const auto ru = static_cast<size_t>(r);
    __builtin_prefetch(&state_[ru]);
    __builtin_prefetch(&pc_[ru]);
    __builtin_prefetch(&step_[ru]);
    __builtin_prefetch(&has_op_fault_[ru]);
    compute_time_.prefetch(r);
  }

 private:
  enum class CpuState : uint8_t { kReady, kBusy, kBlockedQueue, kBlockedSync, kBlockedStore, kStalled, kDone };

  bool interpret(int r);
  bool issue_op(int r, uint32_t op_index);
  bool issue_work(int r, uint32_t op_index);
  void end_step(int r);
  void store_barrier_arrive();
  const Fault* op_fault(int r, uint32_t op_index) const;

  ExecContext& ctx_;
  GpuStreams& gpu_;
  Watchdog& watchdog_;
  FabricFaults& fabric_;
  RankFaults& faults_;
  ComputeTime compute_time_;
  // Per rank, by field.
  std::vector<CpuState> state_;
  std::vector<uint32_t> pc_;      // into Plan::program
  std::vector<int64_t> step_;
  std::vector<uint8_t> has_op_fault_;
  std::vector<uint32_t> next_record_;                // flight-recorder record ids
  std::vector<uint32_t> coll_seq_, p2p_seq_, op_seq_;  // n * kGroupKinds
  int store_arrived_ = 0;  // ranks waiting in the current store barrier
};

}  // namespace fleetsim
