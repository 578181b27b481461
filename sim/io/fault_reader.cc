// Reads `faults:`: a list of single-key mappings, one of the spellings in
// kFaultSpecs (include/fleetsim/fault.h). Ranks are checked
// against the fleet, steps against job.steps, and op names against the step
// program, with did-you-mean. The compute-time faults (straggler and the three
// after it) are FaultKind::kStraggler with a SlowMode and accept `ranks: all`.
#include <algorithm>

#include "sim/io/jitter_reader.h"
#include "sim/io/units.h"
#include "sim/io/scenario_reader.h"

namespace fleetsim {
namespace {

// A positive number at map[key] (required), e.g. a slowdown or a factor.
void read_positive(NodeReader& r, const YamlNode& map, std::string_view key, const std::string& what, double* dst) {
  const YamlNode* v = r.require(map, key, what);
  if (!v) return;
  const std::string path = NodeReader::path(what, key);
  if (auto x = r.as_number(*v, path)) {
    if (*x > 0) *dst = *x;
    else r.error(v->loc, "'" + path + "' must be > 0 (got " + clip_value(v->scalar) + ")");
  }
}

// intermittent: `slowdown: 1.5` or `slowdown: {mean: 1.5, dist: lognormal, cv: 20%}`.
void read_intermittent(NodeReader& r, const YamlNode& body, const std::string& what, Fault* f) {
  if (const YamlNode* p = r.require(body, "probability", what)) {
    if (auto x = r.as_percent(*p, what + ".probability")) {
      if (*x <= 1.0) f->probability = *x;
      else r.error(p->loc, "'" + what + ".probability' must be at most 100% (got " + clip_value(p->scalar) + ")");
    }
  }
  const YamlNode* s = r.require(body, "slowdown", what);
  if (!s || !s->is_map()) {
    if (s) read_positive(r, body, "slowdown", what, &f->slowdown);
    return;
  }
  const std::string sw = what + ".slowdown";
  if (!r.check_map(*s, sw, {"mean", "dist", "cv"})) return;
  read_positive(r, *s, "mean", sw, &f->slowdown);
  YamlNode spread = *s;  // the same mapping without `mean`, read as a jitter
  for (size_t i = 0; i < spread.keys.size(); ++i) {
    if (spread.keys[i].scalar != "mean") continue;
    spread.keys.erase(spread.keys.begin() + static_cast<std::ptrdiff_t>(i));
    spread.items.erase(spread.items.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
  read_jitter(r, spread, sw, true, &f->slowdown_jitter);
}

// pause: `every` steps, `time` each, `what` (a label), `phase: aligned|staggered`.
void read_pause(NodeReader& r, const YamlNode& body, const std::string& what, Fault* f) {
  if (const YamlNode* e = r.require(body, "every", what)) {
    if (auto x = r.as_int(*e, what + ".every", 1, INT64_MAX)) f->every = *x;
  }
  if (const YamlNode* t = r.require(body, "time", what)) {
    if (auto d = r.as_duration(*t, what + ".time")) f->pause = *d;
  }
  f->where = "pause";
  if (const YamlNode* w = body.find("what")) {
    if (auto s = r.as_string(*w, what + ".what")) f->where = *s;
  }
  if (const YamlNode* p = body.find("phase")) {
    if (auto s = r.as_string(*p, what + ".phase")) {
      if (*s == "aligned" || *s == "staggered") f->staggered = *s == "staggered";
      else r.unknown_name(p->loc, "pause phase", *s, {"aligned", "staggered"});
    }
  }
}

// throttle: `schedule: [{from_step: 100, factor: 1.2}, ...]`, from_step ascending.
void read_throttle(NodeReader& r, const YamlNode& body, const std::string& what, int64_t steps, Fault* f) {
  const YamlNode* s = r.require(body, "schedule", what);
  if (!s) return;
  const std::string sw = what + ".schedule";
  if (!s->is_seq() || s->items.empty())
    return r.error(s->loc, "expected a non-empty list of {from_step, factor} for '" + sw + "', got " + s->describe());
  for (const YamlNode& item : s->items) {
    if (!r.check_map(item, sw + "[]", {"from_step", "factor"})) continue;
    ThrottleStage st;
    if (const YamlNode* v = r.require(item, "from_step", sw + "[]")) {
      if (auto x = r.as_int(*v, sw + "[].from_step", 1, steps)) st.from_step = *x;
      if (!f->schedule.empty() && st.from_step <= f->schedule.back().from_step)
        r.error(v->loc, "'" + sw + "' must be in ascending from_step order; expected > " +
                            std::to_string(f->schedule.back().from_step));
    }
    read_positive(r, item, "factor", sw + "[]", &st.factor);
    f->schedule.push_back(st);
  }
}

}  // namespace

void ScenarioReader::read_faults(const YamlNode& n, std::vector<Fault>* out) {
  if (n.is_null()) return;
  if (!n.is_seq()) return error(n.loc, "expected a list of faults for 'faults', got " + n.describe());
  for (const YamlNode& item : n.items) {
    if (auto f = read_fault(item)) out->push_back(std::move(*f));
  }
}

std::optional<Fault> ScenarioReader::read_fault(const YamlNode& n) {
  Names kinds;
  for (const FaultSpec& k : kFaultSpecs) kinds.push_back(k.name);
  if (!n.is_map() || n.keys.size() != 1 || !n.keys[0].is_scalar()) {
    const SourceLoc& at = n.is_map() && n.keys.size() > 1 ? n.keys[1].loc : n.loc;
    error(at, "expected a fault (a mapping with one key: " + join_names(kinds) + "), got " +
                  (n.is_map() && n.keys.size() > 1 ? "several keys" : n.describe()));
    return std::nullopt;
  }
  const YamlNode& key = n.keys[0];
  const FaultSpec* kind = fault_spec(key.scalar);
  if (!kind) {
    unknown_name(key.loc, "fault kind", key.scalar, kinds);
    return std::nullopt;
  }
  Fault f;
  f.kind = kind->kind;
  f.mode = kind->mode;
  f.loc = n.loc;
  const std::string what(kind->name);
  const YamlNode& body = n.items[0];
  const size_t errors_before = error_count();
  Names keys;
  for (const char* k : kind->keys)
    if (k) keys.push_back(k);
  if (!check_map(body, what, keys)) return std::nullopt;
  if (kind->family == FaultFamily::kFabric || kind->family == FaultFamily::kNicDown) {
    read_fabric_fault(body, what, &f);
    if (f.kind == FaultKind::kNicDown) read_fault_step(body, "at_step", what, true, &f.at_step);
    if (error_count() != errors_before) return std::nullopt;
    return f;
  }
  const YamlNode* all = f.kind == FaultKind::kStraggler ? body.find("ranks") : nullptr;
  const bool unnamed = f.mode != SlowMode::kPersistent && !body.find("ranks") && !body.find("rank");
  if (unnamed || (all && all->is_scalar() && all->scalar == "all")) f.all_ranks = true;
  else read_fault_rank(body, what, &f);
  switch (f.kind) {
    case FaultKind::kStraggler:
      if (f.mode == SlowMode::kPersistent) read_positive(*this, body, "slowdown", what, &f.slowdown);
      if (f.mode == SlowMode::kIntermittent) read_intermittent(*this, body, what, &f);
      if (f.mode == SlowMode::kPause) read_pause(*this, body, what, &f);
      if (f.mode == SlowMode::kThrottle) read_throttle(*this, body, what, job_ok_ ? s_.job.steps : INT64_MAX, &f);
      if (f.mode == SlowMode::kPause && !std::any_of(s_.step.begin(), s_.step.end(), [](const Op& o) {
            return o.kind == OpKind::kCompute;
          }))
        error(n.keys[0].loc, "'pause' lengthens the step's first compute op, but the step program has no compute "
                             "op outside a `when`; expected one");
      read_fault_step(body, "from_step", what, false, &f.from_step);
      read_fault_step(body, "to_step", what, false, &f.to_step);
      if (f.to_step < f.from_step) {
        error(body.find("to_step")->loc, "'" + what + ".to_step' must be >= from_step (" +
                                             std::to_string(f.from_step) + ")");
      }
      break;
    case FaultKind::kStall:
      read_fault_step(body, "at_step", what, true, &f.at_step);
      f.where = "data_loader";
      if (const YamlNode* v = body.find("where")) {
        if (auto s = as_string(*v, what + ".where")) f.where = *s;
      }
      if (const YamlNode* v = body.find("op")) {  // stall inside this CPU op instead of at the step's start
        read_fault_op(body, what, false, &f);
        const Op* op = find_op(s_.step, f.op);
        if (op && op->kind != OpKind::kCpu) {
          error(v->loc, "'stall.op' must name a cpu op (the CPU work that never returns), but '" + f.op + "' is " +
                            op_yaml_name(op->kind));
        }
        if (!body.find("where")) f.where = f.op;
      }
      break;
    case FaultKind::kCrash:
      read_fault_step(body, "at_step", what, true, &f.at_step);
      break;
    default:  // absent: ranks only; fabric faults were read above
      break;
    case FaultKind::kSkip:
    case FaultKind::kMismatch:
      read_fault_op(body, what, f.kind == FaultKind::kMismatch, &f);
      read_fault_step(body, "at_step", what, true, &f.at_step);
      break;
  }
  if (f.kind == FaultKind::kMismatch) {
    if (const YamlNode* v = body.find("bytes")) {
      if (auto x = as_bytes(*v, what + ".bytes")) f.bytes = *x;
    }
    if (const YamlNode* v = body.find("dtype")) {
      if (auto t = as_dtype(*v, what + ".dtype")) f.dtype = *t;
    }
    if (!body.find("bytes") && !body.find("dtype")) {
      error(body.loc, "'mismatch' needs 'bytes' or 'dtype' (or both): what the rank issues differently");
    }
  }
  if (error_count() != errors_before) return std::nullopt;
  return f;
}

// link: {node, nic, bandwidth: 25%}, gpudirect: {nodes: [...], enabled: false},
// nic_affinity: {node, gpu, numa: remote}. Indices are checked against the fleet.
void ScenarioReader::read_fabric_fault(const YamlNode& body, const std::string& what, Fault* f) {
  const int64_t max_node = fleet_ok_ ? s_.fleet.nodes - 1 : INT32_MAX;
  auto node_index = [&](const YamlNode& v, const std::string& key) -> std::optional<int> {
    const auto x = as_int(v, what + "." + key, 0, INT32_MAX);
    if (!x) return std::nullopt;
    if (*x > max_node) {
      error(v.loc, "node " + std::to_string(*x) + " does not exist; the fleet has " + std::to_string(s_.fleet.nodes) +
                       " nodes (0.." + std::to_string(max_node) + ")");
      return std::nullopt;
    }
    return static_cast<int>(*x);
  };
  auto bounded = [&](const char* key, int limit, const char* noun, int* dst) {
    const YamlNode* v = require(body, key, what);
    if (!v) return;
    const auto x = as_int(*v, what + "." + key, 0, INT32_MAX);
    if (!x) return;
    if (fleet_ok_ && *x >= limit) {
      error(v->loc, std::string(noun) + " " + std::to_string(*x) + " does not exist; a node has " +
                        std::to_string(limit) + " (0.." + std::to_string(limit - 1) + ")");
      return;
    }
    *dst = static_cast<int>(*x);
  };
  if (f->kind == FaultKind::kGpuDirect) {
    const YamlNode* v = require(body, "nodes", what);
    if (v && !v->is_seq()) return error(v->loc, "expected a list of nodes for '" + what + ".nodes', got " + v->describe());
    if (v)
      for (const YamlNode& n : v->items)
        if (auto x = node_index(n, "nodes")) f->nodes.push_back(*x);
    if (const YamlNode* e = require(body, "enabled", what)) {
      if (auto b = as_flag(*e, what + ".enabled"); b && *b)
        error(e->loc, "'gpudirect.enabled: true' changes nothing; the fault is 'enabled: false'");
    }
    return;
  }
  if (const YamlNode* v = require(body, "node", what)) {
    if (auto x = node_index(*v, "node")) f->node = *x;
  }
  if (f->kind == FaultKind::kNicDown) {
    bounded("nic", s_.fleet.nics_per_node, "NIC", &f->nic);
    return;
  }
  auto bandwidth = [&](const char* of_what) {
    if (const YamlNode* v = require(body, "bandwidth", what)) {
      if (auto p = as_percent(*v, what + ".bandwidth")) {
        if (*p > 0 && *p <= 1) f->fraction = *p;
        else error(v->loc, "'" + what + ".bandwidth' is the share of the " + of_what + " left, in (0%, 100%] (got " +
                               v->scalar + ")");
      }
    }
  };
  if (f->kind == FaultKind::kLink) {
    bounded("nic", s_.fleet.nics_per_node, "NIC", &f->nic);
    return bandwidth("NIC's rate");
  }
  if (f->kind == FaultKind::kNvlink) {
    bounded("gpu", s_.fleet.gpus_per_node, "GPU", &f->gpu);
    return bandwidth("GPU's NVLink bandwidth");
  }
  bounded("gpu", s_.fleet.gpus_per_node, "GPU", &f->gpu);
  if (const YamlNode* v = require(body, "numa", what)) {
    if (auto s = as_string(*v, what + ".numa"); s && *s != "remote") unknown_name(v->loc, "nic_affinity.numa", *s, {"remote"});
  }
}

void ScenarioReader::read_fault_rank(const YamlNode& map, std::string_view what_view, Fault* f) {
  const std::string what(what_view);
  const YamlNode* one = map.find("rank");
  const bool several = f->kind == FaultKind::kStraggler || f->kind == FaultKind::kAbsent;
  const YamlNode* many = several ? map.find("ranks") : nullptr;
  if (one && many) return error(many->loc, "'" + what + "' takes 'rank' or 'ranks', not both");
  if (!one && !many) {
    return error(map.loc, std::string("missing required key '").append(several ? "ranks" : "rank") +
                              "' in '" + what + "'");
  }
  std::vector<const YamlNode*> nodes;
  if (one) nodes.push_back(one);
  if (many) {
    if (!many->is_seq()) return error(many->loc, "expected a list of ranks for '" + what + ".ranks', got " + many->describe());
    if (many->items.empty()) return error(many->loc, "'" + what + ".ranks' must list at least one rank");
    for (const YamlNode& r : many->items) nodes.push_back(&r);
  }
  const int64_t max_rank = fleet_ok_ ? s_.ranks() - 1 : INT32_MAX;
  for (const YamlNode* r : nodes) {
    const auto x = as_int(*r, what + (one ? ".rank" : ".ranks"), 0, INT32_MAX);
    if (!x) continue;
    if (*x > max_rank) {
      error(r->loc, "rank " + std::to_string(*x) + " does not exist; the fleet has " + std::to_string(s_.ranks()) +
                        " ranks (0.." + std::to_string(max_rank) + ")");
      continue;
    }
    f->ranks.push_back(static_cast<int>(*x));
  }
}

void ScenarioReader::read_fault_step(const YamlNode& map, std::string_view key, std::string_view what,
                                     bool required, int64_t* dst) {
  const YamlNode* v = required ? require(map, key, what) : map.find(key);
  if (!v) return;
  const std::string path = NodeReader::path(what, key);
  const auto x = as_int(*v, path, 1, INT64_MAX);
  if (!x) return;
  if (job_ok_ && *x > s_.job.steps) {
    return error(v->loc, "'" + path + "' = " + std::to_string(*x) + " is outside the job's steps 1.." +
                             std::to_string(s_.job.steps));
  }
  *dst = *x;
}

void ScenarioReader::read_fault_op(const YamlNode& map, std::string_view what, bool collective_only, Fault* f) {
  const YamlNode* v = require(map, "op", what);
  if (!v) return;
  const auto name = as_string(*v, NodeReader::path(what, "op"));
  if (!name) return;
  const Op* op = find_op(s_.step, *name);
  if (!op) {
    Names names;
    std::vector<const std::vector<Op>*> todo = {&s_.step};
    while (!todo.empty()) {
      const std::vector<Op>* ops = todo.back();
      todo.pop_back();
      for (const Op& o : *ops) {
        if (is_collective(o.kind) || (!collective_only && o.kind != OpKind::kWhen)) names.push_back(o.name);
        todo.push_back(&o.then_ops);
        todo.push_back(&o.else_ops);
      }
    }
    return unknown_name(v->loc, "op", *name, names, " in the step program");
  }
  if (collective_only && !is_collective(op->kind)) {
    return error(v->loc, std::string("'").append(what) + "' needs a collective op, but '" + *name + "' is " +
                             op_yaml_name(op->kind));
  }
  f->op = *name;
}

const Op* ScenarioReader::find_op(const std::vector<Op>& ops, std::string_view name) const {
  for (const Op& o : ops) {
    if (o.kind != OpKind::kWhen && o.name == name) return &o;
    if (const Op* in = find_op(o.then_ops, name)) return in;
    if (const Op* in = find_op(o.else_ops, name)) return in;
  }
  return nullptr;
}

}  // namespace fleetsim
