// A Plan is a Scenario compiled for execution: the step program flattened into
// instructions with jumps, `when` expressions parsed, process groups laid out
// (tp fastest, then dp, then pp: Megatron's order) and faults indexed by rank.
// Both executors (the simulator and the real runners in validate/) run a Plan.
// A Plan is immutable after compile_plan() and may be shared between threads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/scenario.h"
#include "fleetsim/status.h"
#include "fleetsim/expr.h"

namespace fleetsim {

// Process-group kinds. Their order is the PyTorch pg_id order in flight-recorder
// dumps: world is pg 0 ("default_pg"), then tp, dp, pp where they exist.
enum class GroupKind : uint8_t { kWorld = 0, kTp = 1, kDp = 2, kPp = 3 };
inline constexpr int kGroupKinds = 4;
const char* group_name(GroupKind g);  // "world", "tp", "dp", "pp"

enum class InstrKind : uint8_t {
  kOp,      // execute plan op `op`
  kBranch,  // evaluate expr; if false jump to `target`
  kJump,    // jump to `target`
};

struct Instr {
  InstrKind kind = InstrKind::kOp;
  uint32_t index = 0;   // kOp: into Plan::ops; kBranch: into Plan::exprs
  uint32_t target = 0;  // kBranch, kJump: instruction index
};

// One op of the program with everything the engine needs, resolved.
struct PlanOp {
  OpKind kind = OpKind::kCompute;
  GroupKind group = GroupKind::kWorld;
  DType dtype = DType::kFloat;
  bool log_needs_sync = false;  // kLog: prints a GPU value (waits like .item())
  int8_t peer_dir = 0;          // kSend/kRecv: +1 next stage, -1 previous stage
  int32_t root = 0;
  int64_t bytes = 0;
  Duration time{};
  double jitter_cv = 0.0;
  uint32_t source = 0;          // into Plan::sources
};

// Where an op came from, for frames, logs and error messages.
struct OpSource {
  std::string name;       // the YAML name
  SourceLoc loc;
  std::string when;       // enclosing `when` expression text, "" if none
  SourceLoc when_loc;
  bool when_else = false; // the op sits in that `when`'s `else:` list
  std::string text;       // kLog: the template
};

struct Fault;  // scenario.h

struct Plan {
  Scenario scenario;            // the source, kept for names and outputs
  int ranks = 0;
  int tp = 1, dp = 1, pp = 1;
  bool pp_group = false;        // whether the pp group exists
  std::vector<Instr> program;   // one step; executing past the end ends the step
  std::vector<PlanOp> ops;
  std::vector<Expr> exprs;
  std::vector<OpSource> sources;

  // Faults by kind, sorted by rank; each rank has at most one stall and one crash.
  std::vector<Fault> step_faults;   // kStall, kCrash: checked when a rank starts a step
  std::vector<Fault> op_faults;     // kSkip, kMismatch, kStall with `op`: checked when a rank issues an op
  std::vector<std::vector<uint32_t>> op_fault_ops;  // parallel to op_faults: the Plan::ops its `op` names
  std::vector<Fault> stragglers;    // kStraggler
  std::vector<int> absent_ranks;    // kAbsent: ranks that never start
  std::vector<Fault> link_faults;   // kLink, kGpuDirect, kNicAffinity
  std::vector<Fault> nic_faults;    // kNicDown

  // Fault hooks: what every executor (the simulator's and the real runners')
  // asks as rank `rank` starts `step`, and as it issues op `op_index` in it.
  // Null when no fault hits. Op names were resolved to op indices at compile.
  const Fault* step_fault(int rank, int64_t step) const;               // crash, or a stall at the step's start
  const Fault* op_fault(int rank, int64_t step, uint32_t op_index) const;  // skip, mismatch, a stall inside the op
  // What a rank issues for `op` under `fault` (a mismatch changes bytes and/or dtype).
  static int64_t issued_bytes(const PlanOp& op, const Fault* fault);
  static DType issued_dtype(const PlanOp& op, const Fault* fault);

  bool group_exists(GroupKind g) const;
  // Process-group layout. Instances of a kind are numbered 0..count-1.
  int group_size(GroupKind g) const;
  int group_count(GroupKind g) const;
  int group_instance(GroupKind g, int rank) const;
  int group_index(GroupKind g, int rank) const;           // position of rank in its instance
  int group_member(GroupKind g, int instance, int index) const;
  GroupShape group_shape(GroupKind g, int instance) const;
  // The instance's global process-group name, as PyTorch names groups: every rank
  // creates every group in one order (the world, then each kind's instances in
  // kind order: tp, dp, pp), and a group's name is its place in that order. World
  // is "0"; tp instance 1 of a 4-instance tp kind is "2", the first dp group "5".
  // Unique across the job: a flight-recorder dump's pg_config key and the
  // watchdog's PG GUID. (A dump's pg_id stays rank-local: the kind.)
  std::string group_global_name(GroupKind g, int instance) const;
  // The link faults that touch a group instance, in the group-relative terms of
  // LinkDegradation (node 0 = the group's first node; NIC indices count only the
  // NICs its members on that node use). Empty for a healthy group.
  std::vector<LinkDegradation> group_degradations(GroupKind g, int instance) const;
  // The same for any set of GPUs: (node, local GPU indices) in ring order, one
  // entry per node (what a node-pair nccl-tests run would cross).
  std::vector<LinkDegradation> node_degradations(const std::vector<std::pair<int, std::vector<int>>>& nodes) const;
  // Whether traffic between these ranks crosses NIC `nic` of `node`: they span
  // two or more nodes and one of them on `node` is a GPU that NIC serves.
  bool crosses_nic(const std::vector<int>& members, int node, int nic) const;
  // The local GPUs that NIC `nic` serves (rail-optimized: gpus_per_node / nics_per_node each).
  bool nic_serves(int rank, int node, int nic) const;
  // Rank variables for `when` expressions at `step`.
  VarValues vars(int rank, int64_t step) const;
  // The line a `log` op prints on `rank` at `step`: {var} becomes the rank's
  // value; {op} a synthetic value of that op's result, deterministic per (seed,
  // rank, step) and not a real number. Shared by every executor.
  std::string format_log(int rank, int64_t step, uint32_t op_index) const;
};

// Compiles a validated scenario. Fails (with a diagnostic at the op) only on
// things the loader cannot see, such as a send to the next stage from the last
// stage outside any `when`.
Result<Plan> compile_plan(const Scenario& scenario);

}  // namespace fleetsim
