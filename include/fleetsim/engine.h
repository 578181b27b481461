// The simulator: executes a Plan as discrete events in integer nanoseconds and
// reports to observers. Each rank's CPU interprets the step program and enqueues
// GPU work asynchronously (as PyTorch does), blocking only at sync points or on a
// full launch queue; its GPU runs the queue in order. The k-th collective a rank
// issues on a group is matched with every other member's k-th, by order, never
// by name; it moves data only once all have arrived. A per-rank watchdog times
// out collectives as PyTorch's ProcessGroupNCCL does. Deterministic: the same
// Plan and seed give the same callbacks in the same order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/observer.h"
#include "fleetsim/plan.h"
#include "fleetsim/status.h"

namespace fleetsim {

struct HangInfo {
  int64_t step = 0;              // lowest step any rank is stuck in
  SimTime stuck_since{};         // enqueue of the first collective to time out
  SimTime detected_at{};         // when its watchdog fired
  int first_timeout_rank = -1;
  GroupKind group = GroupKind::kWorld;
  uint32_t collective_seq_id = 0;
  uint32_t op = 0;               // into Plan::ops
  std::vector<int> timed_out_ranks;  // every rank whose watchdog fired, in firing order
};

struct CrashInfo {
  int rank = -1;
  int64_t step = 0;
  SimTime at{};
  SimTime detected_at{};
};

struct RunResult {
  Outcome outcome = Outcome::kCompleted;
  SimTime end{};
  int64_t steps_completed = 0;   // steps every rank finished
  uint64_t events = 0;           // events processed
  HangInfo hang;                 // outcome == kHang
  CrashInfo crash;               // outcome == kCrash
  int64_t stuck_step = 0;        // outcome == kDeadlock: lowest step a rank is stuck in
  // A runtime input error (e.g. division by zero in a `when` at some rank and
  // step). When set, the run is void and nothing should be written.
  std::vector<Diagnostic> errors;
};

struct EngineOptions {
  // Ranks whose per-rank detail observers may want (telemetry/trace); the engine
  // itself simulates every rank regardless.
  uint64_t seed = 1;
};

// Runs `plan` to its end (completion, watchdog abort, crash, or deadlock).
// REQUIRES: plan from compile_plan(); cost outlives the call.
RunResult run_simulation(const Plan& plan, const CostModel& cost,
                         const std::vector<Observer*>& observers);

}  // namespace fleetsim
