// Internal to the drill: the hidden incident (its Plan, run result, RunRecord and
// the per-rank state a live tool would see when the page fires), the evidence
// renderers the commands call, and the incident clock's costs.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/engine.h"
#include "fleetsim/isolation.h"
#include "fleetsim/plan.h"
#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/record.h"

namespace fleetsim::drill {

// One rank as live tools see it when the job stopped progressing (or at the end).
struct RankView {
  bool absent = false;    // never started
  bool crashed = false;   // its process died
  bool stalled = false;   // its CPU entered `stall_where` and never returned
  std::string stall_where;
  int64_t stall_step = 0;
  int stall_op = -1;                                   // into Plan::ops when the stall is inside an op
  GpuState gpu = GpuState::kIdle;
  std::array<uint32_t, kGroupKinds> launched{};        // collectives issued per group kind
  std::array<std::vector<WorkRecord>, kGroupKinds> recent;  // the last two issued per group kind
  std::vector<WorkRecord> pending;                     // issued, not completed, oldest first
  int64_t steps_done = 0;
};

struct Incident {
  std::string file;
  std::string job_name;   // neutral: does not reveal the scenario
  Plan plan;
  std::shared_ptr<const CostModel> cost;  // the model the incident ran with
  double baseline_step_ns = 0;            // its jitter-free, fault-free mean step
  RunResult result;
  diagnose::Record record;
  diagnose::Diagnosis diagnosis;
  std::vector<RankView> ranks;
  double page_s = 0;      // job time when the page fires
  double fault_s = 0;     // job time when the job stopped progressing (or slowed)
};

// Simulates `file` into `work_dir` and reads it back, diagnosing the record against
// its own model.json. The files stay there until the caller removes the folder.
Result<Incident> build_incident(const std::string& file, const std::string& work_dir);

// Evidence. Each returns the text a real tool would print.
std::string render_page(const Incident& inc);
std::string render_nvidia_smi(const Incident& inc, int node);  // node < 0: every node
std::string render_logs(const Incident& inc, int rank);        // rank < 0: the whole job.log tail
std::string render_steps(const Incident& inc);
std::string render_py_spy(const Incident& inc, int rank);      // rank < 0: every rank, coalesced
std::string render_fr_dump(const Incident& inc);
std::string render_ncclras(const Incident& inc, int query);    // query: 1 for the first call
std::string render_nccl_debug(const Incident& inc);
// Halving the job: the two halves rerun as jobs of their own (simulated), or, when
// a contiguous half cannot hold the layout (pp > 1, odd splits), reasoned from the
// incident's faults.
std::string render_bisect(const Incident& inc);
std::string render_bisect_reasoned(const Incident& inc);
// all_reduce_perf on one node's GPUs, or across two nodes (node2 >= 0): the
// incident's cost model with the link faults that pair crosses.
std::string render_nccl_tests(const Incident& inc, int node, int node2 = -1);

// Incident-clock costs in minutes (docs/drill.md says where each comes from).
int rerun_minutes(const Incident& inc);  // restart plus the time to reach the fault again

// One step of an incident's fastest isolation path: the isolation-order step, the
// command as typed, its cost, and the facts it reads, each verbatim in what that
// command prints (so a player who ran it has seen them).
struct PathStep {
  IsolationStep step;
  std::string command;       // as typed at the prompt: "py-spy dump 5", "fr dump"
  std::string hint_command;  // the same without the answer in it: "py-spy dump RANK"
  int minutes = 0;
  std::vector<std::string> facts;  // verbatim excerpts of the command's output
  bool isolates = false;
};
std::vector<PathStep> fastest_path(const Incident& inc);
int command_minutes(const Incident& inc, const std::string& kind);  // "logs", "py-spy dump all", ...

// The answer, as typed after `answer`, that names the incident's culprit and cause
// in the fewest words (a node, a group, `-` for none).
std::string model_answer(const Incident& inc);
// What blocked, named from the program: a CPU op that never returned or outlasts
// the watchdog, with its `when` and its length against the watchdog. "" if none.
std::string blocking_op_lesson(const Incident& inc);

// A parsed `answer`: who (ranks, expanded from a node or group) and the cause.
struct Answer {
  std::vector<int> ranks;
  std::string who;    // as typed ("node 1", "-")
  std::string cause;
};
// Parses the words after `answer`; on error returns what is wrong (nothing is charged).
std::string parse_answer(const Plan& plan, const std::vector<std::string>& words, Answer* out);
// Points for `a` against the scenario's expect, with one line of explanation per part.
struct Scored {
  int who_points = 0, cause_points = 0, time_penalty = 0, total = 0;
  std::vector<std::string> lines;
};
Scored score_answer(const Incident& inc, const Answer& a, int minutes, int fastest_minutes);
std::string answer_help();

std::string py_spy_stack(const Incident& inc, int rank);      // one rank, no process header
// The op (into Plan::ops) rank's CPU is in when the page fires, and its step; -1 if none.
int cpu_op_of(const Incident& inc, int rank, int64_t* step);
std::string rank_list(const std::vector<int>& ranks);  // "0-3, 5"

}  // namespace fleetsim::drill
