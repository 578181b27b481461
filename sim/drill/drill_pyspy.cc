// py-spy dump for the drill: each rank's Python stack, rebuilt from where its CPU
// is in the step program. The scenario file stands in for train.py: frames are
// the scenario's op names and `when` lines at their YAML line numbers, under
// PyTorch's own frames for the call the CPU is blocked in.
#include <cstdio>
#include <map>

#include "sim/drill/drill_incident.h"

namespace fleetsim::drill {
namespace {

struct Position {
  int op = -1;          // into Plan::ops; -1 when unknown
  int64_t step = 0;
  bool waiting = true;  // blocked (active) rather than idle in I/O
  std::string where;    // a stall outside any op: the fault's `where`
  bool finished = false;  // left the training loop: every step done
};

// Op `in`'s branch or jump, followed for `rank` at `step`: the next pc minus one.
size_t follow(const Plan& plan, const Instr& in, size_t pc, int rank, int64_t step) {
  if (in.kind == InstrKind::kJump) return in.target - 1;
  int64_t val = 0;
  if (in.kind == InstrKind::kBranch && (!plan.exprs[in.index].eval(plan.vars(rank, step), &val) || val == 0))
    return in.target - 1;
  return pc;
}

bool is_wait_point(const PlanOp& op) {
  return op.kind == OpKind::kSync || op.kind == OpKind::kBarrier || op.kind == OpKind::kStoreBarrier ||
         (op.kind == OpKind::kLog && op.log_needs_sync);
}

size_t instr_of(const Plan& plan, uint32_t op) {
  for (size_t i = 0; i < plan.program.size(); ++i) {
    if (plan.program[i].kind == InstrKind::kOp && plan.program[i].index == op) return i;
  }
  return plan.program.size();
}

// Walks the program from the op the GPU is stuck on: the CPU stops at the first
// wait point, or at the op that no longer fits the launch queue, or at the first
// collective it was never seen to issue.
Position walk_from(const Plan& plan, const RankView& v, int rank) {
  const WorkRecord& stuck = v.pending.front();
  const WorkRecord& last = v.pending.back();
  int64_t step = stuck.step;
  size_t pc = instr_of(plan, stuck.op);
  Position pos{static_cast<int>(stuck.op), step, true, ""};
  if (is_wait_point(plan.ops[stuck.op])) return pos;
  int queued = 1;
  bool passed_last = stuck.record_id == last.record_id;
  for (int guard = 0; guard < 4096; ++guard) {
    if (++pc >= plan.program.size()) {
      if (++step > plan.scenario.job.steps) break;  // the job's last op: the CPU waits on the stuck one
      pc = 0;
    }
    const Instr& in = plan.program[pc];
    if (in.kind != InstrKind::kOp) { pc = follow(plan, in, pc, rank, step); continue; }
    const PlanOp& op = plan.ops[in.index];
    pos = Position{static_cast<int>(in.index), step, true, ""};
    if (is_collective(op.kind)) {
      if (passed_last || ++queued > plan.scenario.job.launch_queue) return pos;
      if (op.kind == OpKind::kBarrier) return pos;
      passed_last = in.index == last.op && step == last.step;
    } else if (op.kind == OpKind::kCompute) {
      if (++queued > plan.scenario.job.launch_queue) return pos;
    } else if (is_wait_point(op)) {
      return pos;
    }
  }
  return Position{static_cast<int>(stuck.op), stuck.step, true, ""};
}

// Where rank `rank`'s CPU is when the page fires; nullopt when no process exists.
Position cpu_position(const Incident& inc, int rank) {
  const RankView& v = inc.ranks[static_cast<size_t>(rank)];
  const Plan& plan = inc.plan;
  if (v.stalled) return Position{v.stall_op, v.stall_step, false, v.stall_op < 0 ? v.stall_where : ""};
  if (!v.pending.empty()) return walk_from(plan, v, rank);
  if (inc.result.outcome != Outcome::kCompleted) {
    // Every step done: the worker left the training loop and idles until the job ends.
    if (v.steps_done >= plan.scenario.job.steps) return Position{-1, v.steps_done, false, "", true};
    // Stuck with no GPU work pending: the CPU waits in the next step's store barrier.
    const int64_t next = v.steps_done + 1;
    for (size_t pc = 0; pc < plan.program.size(); ++pc) {
      const Instr& in = plan.program[pc];
      if (in.kind != InstrKind::kOp) { pc = follow(plan, in, pc, rank, next); continue; }
      if (plan.ops[in.index].kind == OpKind::kStoreBarrier) return Position{static_cast<int>(in.index), next, false, ""};
    }
  }
  // A running (or finished) job: the CPU waits at the step's first wait point or
  // launches its first collective, as a busy training loop does most of the time.
  // Only ops this rank runs count (its `when` branches taken at that step).
  const int64_t step = std::max<int64_t>(1, v.steps_done);
  int first_coll = -1;
  for (size_t pc = 0; pc < plan.program.size(); ++pc) {
    const Instr& in = plan.program[pc];
    if (in.kind != InstrKind::kOp) { pc = follow(plan, in, pc, rank, step); continue; }
    if (is_wait_point(plan.ops[in.index])) return Position{static_cast<int>(in.index), step, true, ""};
    if (first_coll < 0 && is_collective(plan.ops[in.index].kind)) first_coll = static_cast<int>(in.index);
  }
  return Position{first_coll, step, true, ""};
}

std::string torch_frames(const PlanOp& op, const std::string& where) {
  static const std::map<OpKind, std::string> kColl = {
      {OpKind::kAllReduce, "all_reduce"}, {OpKind::kAllGather, "all_gather_into_tensor"},
      {OpKind::kReduceScatter, "reduce_scatter_tensor"}, {OpKind::kBroadcast, "broadcast"},
      {OpKind::kReduce, "reduce"}, {OpKind::kAllToAll, "all_to_all_single"}, {OpKind::kBarrier, "barrier"},
      {OpKind::kSend, "send"}, {OpKind::kRecv, "recv"}};
  if (auto it = kColl.find(op.kind); it != kColl.end()) {
    return "    " + it->second + " (torch/distributed/distributed_c10d.py:2806)\n"
           "    wrapper (torch/distributed/c10d_logger.py:83)\n";
  }
  switch (op.kind) {
    case OpKind::kSync: return "    synchronize (torch/cuda/__init__.py:954)\n";
    case OpKind::kLog: return "    __format__ (torch/_tensor.py:1087)\n";
    case OpKind::kStoreBarrier:
      return "    barrier (torch/distributed/elastic/utils/store.py:185)\n"
             "    _store_based_barrier (torch/distributed/distributed_c10d.py:4366)\n";
    case OpKind::kCompute:
      return "    linear (torch/nn/modules/linear.py:125)\n    _call_impl (torch/nn/modules/module.py:1747)\n";
    default: break;
  }
  if (where.find("load") != std::string::npos || where.find("data") != std::string::npos) {
    return "    _get_data (torch/utils/data/dataloader.py:1285)\n    __next__ (torch/utils/data/dataloader.py:701)\n";
  }
  if (where.find("checkpoint") != std::string::npos || where.find("save") != std::string::npos) {
    return "    write (torch/serialization.py:651)\n    save (torch/serialization.py:943)\n";
  }
  return "    read (fsspec/implementations/local.py:386)\n";
}

}  // namespace

int cpu_op_of(const Incident& inc, int rank, int64_t* step) {
  const Position pos = cpu_position(inc, rank);
  *step = pos.step;
  return pos.op;
}

// The stack of one rank, without the process header (so identical stacks coalesce).
std::string py_spy_stack(const Incident& inc, int rank) {
  const Plan& plan = inc.plan;
  const Position pos = cpu_position(inc, rank);
  std::string out = std::string("Thread ") + std::to_string(1000 + rank) + (pos.waiting ? " (active)" : " (idle)") +
                    ": \"MainThread\"\n";
  std::string label;
  if (pos.op >= 0) {
    const PlanOp& op = plan.ops[static_cast<size_t>(pos.op)];
    const OpSource& src = plan.sources[op.source];
    const std::string stall_where = inc.ranks[static_cast<size_t>(rank)].stall_where;
    out += torch_frames(op, op.kind == OpKind::kCpu ? (stall_where.empty() ? src.name : stall_where) : "");
    out += "    " + src.name + " (train.py:" + std::to_string(src.loc.line) + ")\n";
    if (!src.when.empty())
      out += "    when " + (src.when_else ? "not (" + src.when + ")" : src.when) + " (train.py:" +
             std::to_string(src.when_loc.line) + ")\n";
  } else if (!pos.where.empty()) {
    out += torch_frames(PlanOp{OpKind::kCpu}, pos.where);
    out += "    " + pos.where + " (train.py:" + std::to_string(plan.sources.empty() ? 0 : plan.sources[0].loc.line) + ")\n";
  }
  if (pos.finished) return out + "    main (train.py:1)\n";  // past the training loop
  out += "    train_step (train.py:" + std::to_string(plan.sources.empty() ? 0 : plan.sources[0].loc.line) + ")\n";
  out += "        Arguments:\n            step: " + std::to_string(pos.step) + "\n";
  if (pos.op >= 0 && plan.ops[static_cast<size_t>(pos.op)].kind == OpKind::kLog) {
    // The printed value is a pending collective's output: --locals shows where it came from.
    const std::string& text = plan.sources[plan.ops[static_cast<size_t>(pos.op)].source].text;
    for (size_t i = 0; i < plan.ops.size(); ++i) {
      const OpSource& s = plan.sources[plan.ops[i].source];
      if (!is_collective(plan.ops[i].kind) || text.find("{" + s.name + "}") == std::string::npos) continue;
      out += "        Locals:\n            " + s.name + ": <Tensor from dist." + torch_frames(plan.ops[i], "").substr(4, torch_frames(plan.ops[i], "").find(' ', 4) - 4) +
             "(group=" + group_name(plan.ops[i].group) + "), not ready>\n";
      break;
    }
  }
  out += "    main (train.py:1)\n";
  return out;
}

std::string render_py_spy(const Incident& inc, int rank) {
  const int gpn = inc.plan.scenario.fleet.gpus_per_node;
  auto no_process = [&](int r) -> std::string {
    const RankView& v = inc.ranks[static_cast<size_t>(r)];
    if (v.absent) return "Error: no python process for rank " + std::to_string(r) + " on node" + std::to_string(r / gpn) + " (the worker never started)\n";
    if (v.crashed || inc.result.outcome == Outcome::kCrash) return "Error: Failed to find process " + std::to_string(1000 + r) + ": No such process (os error 3)\n";
    return "";
  };
  if (rank >= 0) {
    if (rank >= inc.plan.ranks) return "py-spy: no rank " + std::to_string(rank) + "\n";
    const std::string gone = no_process(rank);
    if (!gone.empty()) return "node" + std::to_string(rank / gpn) + ": $ py-spy dump --locals --pid " + std::to_string(1000 + rank) + "\n" + gone;
    return "node" + std::to_string(rank / gpn) + ": $ py-spy dump --locals --pid " + std::to_string(1000 + rank) +
           "\nProcess " + std::to_string(1000 + rank) + ": /usr/bin/python3 train.py\nPython v3.10.12 (/usr/bin/python3.10)\n\n" +
           py_spy_stack(inc, rank);
  }
  // pdsh ... | dshbak -c: identical outputs (thread ids aside) are printed once.
  std::map<std::string, std::vector<int>> by_stack;
  std::vector<std::string> order;
  for (int r = 0; r < inc.plan.ranks; ++r) {
    std::string s = no_process(r);
    if (s.empty()) {
      s = py_spy_stack(inc, r);
      s.replace(s.find(' ') + 1, s.find(' ', 7) - s.find(' ') - 1, "<pid>");
    } else {
      s = s.find("never started") != std::string::npos ? "Error: no python process (the worker never started)\n"
                                                       : "Error: Failed to find process: No such process (os error 3)\n";
    }
    if (!by_stack.count(s)) order.push_back(s);
    by_stack[s].push_back(r);
  }
  std::string out = "$ pdsh -w node[0-" + std::to_string(inc.plan.scenario.fleet.nodes - 1) +
                    "] 'py-spy dump --locals --pid $RANK_PID' | dshbak -c\n";
  for (const std::string& s : order) {
    out += "----------------\nrank " + rank_list(by_stack[s]) + "\n----------------\n" + s;
  }
  return out;
}

}  // namespace fleetsim::drill
