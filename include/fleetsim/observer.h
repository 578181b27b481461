// Observers watch a run through const callbacks from the engine, in simulated
// time order (ties in the engine's deterministic event order). Telemetry, the
// flight recorder, the trace, the step table and the job log are observers; the
// engine knows none of them. Callbacks must not throw and should not allocate
// per call in steady state. An observer lives at least as long as the run.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "fleetsim/plan.h"
#include "fleetsim/time.h"

namespace fleetsim {

// What a rank's GPU is doing. kSpin = an NCCL kernel waiting for peers (100%
// utilization, few SMs, no tensor work); kTransfer = the kernel moving data.
enum class GpuState : uint8_t { kIdle, kCompute, kSpin, kTransfer };

// States of a flight-recorder entry, as PyTorch names them.
enum class WorkState : uint8_t { kScheduled, kStarted, kCompleted };

// One collective or p2p op issued by one rank: what the flight recorder records.
struct WorkRecord {
  int rank = 0;
  uint32_t record_id = 0;         // per rank, across all groups, from 0
  GroupKind group = GroupKind::kWorld;
  uint32_t collective_seq_id = 0; // per rank and group; 0 for p2p
  uint32_t p2p_seq_id = 0;        // per rank and group; 0 for collectives
  uint32_t op_id = 0;             // per rank and group, every op
  uint32_t op = 0;                // into Plan::ops
  int peer = -1;                  // p2p: the other rank
  int64_t step = 0;
  int64_t bytes = 0;              // as issued (a mismatch fault may change it)
  DType dtype = DType::kFloat;
  SimTime created{};              // CPU enqueue
  SimTime started = SimTime::never();
  SimTime completed = SimTime::never();
  WorkState state = WorkState::kScheduled;
  bool timed_out = false;
};

// How a backend's library fails a rank on its own (job.backend: gloo): the rank
// received more data than its op expects (gloo's EnforceNotMet, the process
// aborts), or a peer's process went away mid-op (the connection closed).
enum class BackendFailure : uint8_t { kSizeMismatch, kPeerClosed };

// Every rank's end of one step, with the latest of them (what a step table
// wants) found once by the executor.
struct StepEnds {
  int64_t step = 0;
  std::span<const int64_t> end_ns;  // per rank
  int64_t latest_ns = 0;            // the largest of end_ns
  int latest_rank = -1;             // the lowest rank that ends at latest_ns
};

// Why a run stopped.
enum class Outcome : uint8_t { kCompleted, kHang, kCrash, kDeadlock };
const char* outcome_name(Outcome o);

class Observer {
 public:
  virtual ~Observer() = default;

  virtual void on_gpu_state(int /*rank*/, SimTime /*t*/, GpuState /*s*/, int64_t /*step*/) {}
  // A compute kernel or CPU op ran on `rank` over [begin, end).
  virtual void on_compute(int /*rank*/, uint32_t /*op*/, int64_t /*step*/, SimTime /*begin*/,
                          SimTime /*end*/, bool /*cpu*/) {}
  virtual void on_work_enqueued(const WorkRecord& /*w*/) {}
  virtual void on_work_started(const WorkRecord& /*w*/) {}
  virtual void on_work_completed(const WorkRecord& /*w*/) {}
  // Data moves for `w` over [begin, end), and `nic_bytes` of it leave through the NICs.
  virtual void on_transfer(const WorkRecord& /*w*/, SimTime /*begin*/, SimTime /*end*/,
                           int64_t /*nic_bytes*/) {}
  // `rank` finished every op of `step` at `t`.
  virtual void on_step_end(int /*rank*/, int64_t /*step*/, SimTime /*t*/) {}
  // Every rank finished e.step (the lockstep executor's one call per step in
  // place of on_step_end per rank). The default hands the ranks to on_step_end
  // in rank order; an override must leave the observer in the same state.
  virtual void on_step_end_all(const StepEnds& e) {
    for (size_t r = 0; r < e.end_ns.size(); ++r) on_step_end(static_cast<int>(r), e.step, SimTime{e.end_ns[r]});
  }
  // A line the job prints (already formatted, without the "[rankN]:" prefix).
  virtual void on_log(int /*rank*/, SimTime /*t*/, std::string_view /*line*/) {}
  // Periodic sample point (every job.telemetry_period while the job runs).
  virtual void on_tick(SimTime /*t*/) {}
  // A fault took effect on `rank` (a stall began, a crash, a skipped or altered op).
  virtual void on_fault(int /*rank*/, SimTime /*t*/, const Fault& /*f*/) {}
  // The backend failed `w` on `rank` (then the rank dies): `incoming` is the
  // size of the message that arrived, `expected` what `w` could take (bytes).
  virtual void on_backend_failure(int /*rank*/, SimTime /*t*/, BackendFailure /*f*/, const WorkRecord& /*w*/,
                                  int64_t /*incoming*/, int64_t /*expected*/) {}
  // `rank`'s watchdog timed out `w` (see HangInfo for the job-level view).
  virtual void on_timeout(const WorkRecord& /*w*/, SimTime /*t*/) {}
  // `rank` dumps its flight recorder now (every rank does, once, on a timeout).
  virtual void on_dump(int /*rank*/, SimTime /*t*/) {}
  // The run is over at `t`.
  virtual void on_end(SimTime /*t*/, Outcome /*o*/) {}
};

// Per-rank time accounting from an executor that makes no per-op callbacks (the
// lockstep executor): in place of on_compute and on_transfer it reports, once per
// step, every rank's GPU compute time and its wait in collectives (from reaching
// one to its transfer's start). An observer that sums those from the per-op
// callbacks under the event executor implements this too, so both report alike.
class StepAccounting {
 public:
  virtual ~StepAccounting() = default;
  // Every rank finished `step`; element r of each span is rank r's time (ns) in it.
  virtual void on_step_accounted(int64_t step, std::span<const int64_t> compute_ns,
                                 std::span<const int64_t> wait_ns) = 0;
};

}  // namespace fleetsim
