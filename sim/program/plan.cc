// Compiles a Scenario into a Plan: flattens the step program (when/do/else into
// branches and jumps), resolves groups and ops, and lays out process groups in
// Megatron's order (tp fastest, then dp, then pp).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "fleetsim/plan.h"
#include "fleetsim/rng.h"
#include "sim/program/fault_effects.h"
#include "sim/program/when_check.h"

namespace fleetsim {

const char* group_name(GroupKind g) {
  switch (g) {
    case GroupKind::kWorld: return "world";
    case GroupKind::kTp: return "tp";
    case GroupKind::kDp: return "dp";
    case GroupKind::kPp: return "pp";
  }
  return "?";
}

bool Plan::group_exists(GroupKind g) const { return g != GroupKind::kPp || pp_group; }

int Plan::group_size(GroupKind g) const {
  switch (g) {
    case GroupKind::kWorld: return ranks;
    case GroupKind::kTp: return tp;
    case GroupKind::kDp: return dp;
    case GroupKind::kPp: return pp;
  }
  return 1;
}

int Plan::group_count(GroupKind g) const { return ranks / group_size(g); }

std::string Plan::group_global_name(GroupKind g, int instance) const {
  int first = 0;
  for (int k = 0; k < static_cast<int>(g); ++k) {
    const auto kind = static_cast<GroupKind>(k);
    if (group_exists(kind)) first += group_count(kind);
  }
  return std::to_string(first + instance);
}

int Plan::group_instance(GroupKind g, int rank) const {
  switch (g) {
    case GroupKind::kWorld: return 0;
    case GroupKind::kTp: return rank / tp;
    case GroupKind::kDp: return (rank / (tp * dp)) * tp + rank % tp;
    case GroupKind::kPp: return rank % (tp * dp);
  }
  return 0;
}

int Plan::group_index(GroupKind g, int rank) const {
  switch (g) {
    case GroupKind::kWorld: return rank;
    case GroupKind::kTp: return rank % tp;
    case GroupKind::kDp: return (rank / tp) % dp;
    case GroupKind::kPp: return rank / (tp * dp);
  }
  return 0;
}

int Plan::group_member(GroupKind g, int instance, int index) const {
  switch (g) {
    case GroupKind::kWorld: return index;
    case GroupKind::kTp: return instance * tp + index;
    case GroupKind::kDp: return (instance / tp) * tp * dp + index * tp + instance % tp;
    case GroupKind::kPp: return index * tp * dp + instance;
  }
  return 0;
}

GroupShape Plan::group_shape(GroupKind g, int instance) const {
  const int gpn = scenario.fleet.gpus_per_node;
  const int n = group_size(g);
  GroupShape s;
  s.ranks = n;
  int nodes = 0, last_node = -1, run = 0;
  // Members are in increasing rank order, so members of one node are contiguous.
  for (int i = 0; i < n; ++i) {
    const int node = group_member(g, instance, i) / gpn;
    if (node != last_node) {
      ++nodes;
      last_node = node;
      run = 0;
    }
    s.ranks_per_node = std::max(s.ranks_per_node, ++run);
  }
  s.nodes = nodes;
  return s;
}

std::vector<LinkDegradation> Plan::group_degradations(GroupKind g, int instance) const {
  std::vector<LinkDegradation> out;
  if (link_faults.empty()) return out;
  const int gpn = scenario.fleet.gpus_per_node;
  // Members by node, in rank order: (node, [local ranks]).
  std::vector<std::pair<int, std::vector<int>>> nodes;
  for (int i = 0; i < group_size(g); ++i) {
    const int r = group_member(g, instance, i);
    if (nodes.empty() || nodes.back().first != r / gpn) nodes.push_back({r / gpn, {}});
    nodes.back().second.push_back(r % gpn);
  }
  return node_degradations(nodes);
}

std::vector<LinkDegradation> Plan::node_degradations(const std::vector<std::pair<int, std::vector<int>>>& nodes) const {
  std::vector<LinkDegradation> out;
  for (size_t k = 0; k < nodes.size(); ++k) {
    const auto& [node, locals] = nodes[k];
    for (const Fault& f : link_faults) {
      if (auto d = fabric_degradation(f, scenario.fleet, node, locals, nodes.size() >= 2)) {
        d->node = static_cast<int>(k);
        out.push_back(*d);
      }
    }
  }
  return out;
}

const Fault* Plan::step_fault(int rank, int64_t step) const {
  for (const Fault& f : step_faults)
    if (f.ranks[0] == rank && f.at_step == step) return &f;
  return nullptr;
}

const Fault* Plan::op_fault(int rank, int64_t step, uint32_t op_index) const {
  for (size_t i = 0; i < op_faults.size(); ++i) {
    const Fault& f = op_faults[i];
    if (f.ranks[0] != rank || f.at_step != step) continue;
    for (uint32_t o : op_fault_ops[i])
      if (o == op_index) return &f;
  }
  return nullptr;
}

int64_t Plan::issued_bytes(const PlanOp& op, const Fault* fault) {
  return fault && fault->bytes ? *fault->bytes : op.bytes;
}

DType Plan::issued_dtype(const PlanOp& op, const Fault* fault) {
  return fault && fault->dtype ? *fault->dtype : op.dtype;
}

bool Plan::nic_serves(int rank, int node, int nic) const {
  const int gpn = scenario.fleet.gpus_per_node;
  const int gpus_per_nic = std::max(1, gpn / std::max(1, scenario.fleet.nics_per_node));
  return rank / gpn == node && (rank % gpn) / gpus_per_nic == nic;
}

bool Plan::crosses_nic(const std::vector<int>& members, int node, int nic) const {
  const int gpn = scenario.fleet.gpus_per_node;
  bool two_nodes = false, serves = false;
  for (int r : members) {
    two_nodes = two_nodes || r / gpn != members.front() / gpn;
    serves = serves || nic_serves(r, node, nic);
  }
  return two_nodes && serves;
}

VarValues Plan::vars(int rank, int64_t step) const {
  VarValues v{};
  const int gpn = scenario.fleet.gpus_per_node;
  v[static_cast<size_t>(Var::kRank)] = rank;
  v[static_cast<size_t>(Var::kLocalRank)] = rank % gpn;
  v[static_cast<size_t>(Var::kNode)] = rank / gpn;
  v[static_cast<size_t>(Var::kStep)] = step;
  v[static_cast<size_t>(Var::kWorldSize)] = ranks;
  v[static_cast<size_t>(Var::kTpRank)] = rank % tp;
  v[static_cast<size_t>(Var::kDpRank)] = (rank / tp) % dp;
  v[static_cast<size_t>(Var::kPpRank)] = rank / (tp * dp);
  return v;
}

std::string Plan::format_log(int rank, int64_t step, uint32_t op_index) const {
  const std::string& text = sources[ops[op_index].source].text;
  const VarValues v = vars(rank, step);
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t open = text.find('{', i);
    const size_t close = open == std::string::npos ? open : text.find('}', open);
    if (close == std::string::npos) {
      out += text.substr(i);
      break;
    }
    out += text.substr(i, open - i);
    const std::string key = text.substr(open + 1, close - open - 1);
    bool found = false;
    for (size_t k = 0; k < v.size() && !found; ++k)
      if (key == var_name(static_cast<Var>(k))) {
        out += std::to_string(v[k]);
        found = true;
      }
    if (!found) {
      const uint64_t s = stream_seed(scenario.job.seed, static_cast<uint64_t>(rank), Stream::kLogValue);
      const double x = 1.5 + 8.0 * std::exp(-static_cast<double>(step) / 500.0) +
                       0.02 * draw_normal(s, static_cast<uint64_t>(step));
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4f", x);
      out += buf;
    }
    i = close + 1;
  }
  return out;
}

namespace {

GroupKind parse_group(const std::string& g) {
  if (g == "tp") return GroupKind::kTp;
  if (g == "dp") return GroupKind::kDp;
  if (g == "pp") return GroupKind::kPp;
  return GroupKind::kWorld;
}

// True if the log template prints something only the GPU knows: any {name}
// that is not a rank/step variable.
bool log_needs_gpu_value(const std::string& text) {
  static const std::set<std::string> kVars = {"rank", "local_rank", "node", "step",
                                              "world_size", "tp_rank", "dp_rank", "pp_rank"};
  for (size_t i = text.find('{'); i != std::string::npos; i = text.find('{', i + 1)) {
    const size_t j = text.find('}', i);
    if (j == std::string::npos) break;
    if (!kVars.count(text.substr(i + 1, j - i - 1))) return true;
  }
  return false;
}

class Compiler {
 public:
  explicit Compiler(Plan& plan) : plan_(plan) {}

  Result<bool> block(const std::vector<Op>& ops, const Op* when, bool in_else = false) {
    for (const Op& op : ops) {
      if (op.kind == OpKind::kWhen) {
        auto r = branch(op);
        if (!r.ok()) return r.errors();
        continue;
      }
      emit_op(op, when, in_else);
    }
    return true;
  }

 private:
  Result<bool> branch(const Op& op) {
    auto expr = Expr::parse(op.when);
    if (!expr.ok()) {
      Diagnostic d = expr.errors().front();
      d.loc = op.when_loc;
      return d;
    }
    plan_.exprs.push_back(std::move(*expr));
    when_locs_.push_back(op.when_loc);
    const size_t at = plan_.program.size();
    plan_.program.push_back({InstrKind::kBranch, static_cast<uint32_t>(plan_.exprs.size() - 1), 0});
    if (auto r = block(op.then_ops, &op); !r.ok()) return r;
    if (op.else_ops.empty()) {
      plan_.program[at].target = static_cast<uint32_t>(plan_.program.size());
      return true;
    }
    const size_t jump = plan_.program.size();
    plan_.program.push_back({InstrKind::kJump, 0, 0});
    plan_.program[at].target = static_cast<uint32_t>(plan_.program.size());
    if (auto r = block(op.else_ops, &op, true); !r.ok()) return r;
    plan_.program[jump].target = static_cast<uint32_t>(plan_.program.size());
    return true;
  }

  void emit_op(const Op& op, const Op* when, bool in_else) {
    PlanOp p;
    p.kind = op.kind;
    p.group = op.kind == OpKind::kSend || op.kind == OpKind::kRecv ? GroupKind::kPp
                                                                   : parse_group(op.group);
    p.dtype = op.dtype;
    p.root = op.root;
    p.peer_dir = static_cast<int8_t>(op.peer == "prev" ? -1 : 1);
    p.bytes = op.kind == OpKind::kBarrier ? dtype_bytes(op.dtype) : op.bytes;
    p.time = op.time;
    p.jitter_cv = op.jitter.cv;
    p.log_needs_sync = op.kind == OpKind::kLog && log_needs_gpu_value(op.text);
    OpSource src;
    src.name = op.name.empty() ? op_yaml_name(op.kind) : op.name;
    src.loc = op.loc;
    src.text = op.text;
    if (when) {
      src.when = when->when;
      src.when_loc = when->when_loc;
      src.when_else = in_else;
    }
    p.source = static_cast<uint32_t>(plan_.sources.size());
    plan_.sources.push_back(std::move(src));
    plan_.ops.push_back(p);
    plan_.program.push_back({InstrKind::kOp, static_cast<uint32_t>(plan_.ops.size() - 1), 0});
  }

  Plan& plan_;
  std::vector<SourceLoc> when_locs_;  // where each of plan_.exprs sits

 public:
  const std::vector<SourceLoc>& when_locs() const { return when_locs_; }
};

}  // namespace

Result<Plan> compile_plan(const Scenario& scenario) {
  Plan plan;
  plan.scenario = scenario;
  plan.ranks = scenario.ranks();
  plan.tp = scenario.parallel.tp;
  plan.pp = scenario.parallel.pp;
  plan.dp = scenario.parallel.dp > 0 ? scenario.parallel.dp : plan.ranks / (plan.tp * plan.pp);
  plan.pp_group = scenario.parallel.pp_given;
  FLEETSIM_CHECK(plan.tp * plan.dp * plan.pp == plan.ranks);
  Compiler c(plan);
  if (auto r = c.block(scenario.step, nullptr); !r.ok()) return r.errors();
  for (const Fault& f : scenario.faults) {
    switch (fault_family(f.kind)) {
      case FaultFamily::kCompute: plan.stragglers.push_back(f); break;
      case FaultFamily::kProcess:
        if (f.kind == FaultKind::kAbsent) plan.absent_ranks.insert(plan.absent_ranks.end(), f.ranks.begin(), f.ranks.end());
        else (f.op.empty() ? plan.step_faults : plan.op_faults).push_back(f);  // a stall inside an op waits for it
        break;
      case FaultFamily::kProgram: plan.op_faults.push_back(f); break;
      case FaultFamily::kFabric: plan.link_faults.push_back(f); break;
      case FaultFamily::kNicDown: plan.nic_faults.push_back(f); break;
    }
  }
  for (const Fault& f : plan.op_faults) {  // resolve op names once: executors compare indices
    std::vector<uint32_t> ops;
    for (uint32_t i = 0; i < plan.ops.size(); ++i)
      if (plan.sources[plan.ops[i].source].name == f.op) ops.push_back(i);
    FLEETSIM_CHECK(!ops.empty());  // the loader checked that `op` names an op
    plan.op_fault_ops.push_back(std::move(ops));
  }
  if (auto d = find_static_division_by_zero(plan, c.when_locs())) return *d;
  return plan;
}

}  // namespace fleetsim
