// Reads `faults:`: a list of single-key mappings (straggler, stall, crash,
// skip, mismatch). Ranks are checked against the fleet, steps against
// job.steps, and op names against the step program, with did-you-mean.
#include "sim/io/scenario_reader.h"

namespace fleetsim {
namespace {

struct FaultName {
  std::string_view name;
  FaultKind kind;
};
constexpr FaultName kFaults[] = {{"straggler", FaultKind::kStraggler},
                                 {"stall", FaultKind::kStall},
                                 {"crash", FaultKind::kCrash},
                                 {"skip", FaultKind::kSkip},
                                 {"mismatch", FaultKind::kMismatch},
                                 {"absent", FaultKind::kAbsent}};

Names fault_keys(FaultKind k) {
  switch (k) {
    case FaultKind::kStraggler: return {"ranks", "rank", "slowdown", "from_step", "to_step"};
    case FaultKind::kStall: return {"rank", "at_step", "where", "op"};
    case FaultKind::kCrash: return {"rank", "at_step"};
    case FaultKind::kSkip: return {"rank", "op", "at_step"};
    case FaultKind::kMismatch: return {"rank", "op", "at_step", "bytes", "dtype"};
    case FaultKind::kAbsent: return {"ranks", "rank"};
  }
  return {};
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
  for (const auto& k : kFaults) kinds.push_back(k.name);
  if (!n.is_map() || n.keys.size() != 1 || !n.keys[0].is_scalar()) {
    const SourceLoc& at = n.is_map() && n.keys.size() > 1 ? n.keys[1].loc : n.loc;
    error(at, "expected a fault (a mapping with one key: " + join_names(kinds) + "), got " +
                  (n.is_map() && n.keys.size() > 1 ? "several keys" : n.describe()));
    return std::nullopt;
  }
  const YamlNode& key = n.keys[0];
  const FaultName* kind = nullptr;
  for (const auto& k : kFaults) if (k.name == key.scalar) kind = &k;
  if (!kind) {
    unknown_name(key.loc, "fault kind", key.scalar, kinds);
    return std::nullopt;
  }
  Fault f;
  f.kind = kind->kind;
  f.loc = n.loc;
  const std::string what(kind->name);
  const YamlNode& body = n.items[0];
  const size_t errors_before = error_count();
  if (!check_map(body, what, fault_keys(f.kind))) return std::nullopt;
  read_fault_rank(body, what, &f);
  switch (f.kind) {
    case FaultKind::kStraggler:
      if (const YamlNode* v = require(body, "slowdown", what)) {
        if (auto x = as_number(*v, what + ".slowdown")) {
          if (*x > 0) f.slowdown = *x;
          else error(v->loc, "'" + what + ".slowdown' must be > 0 (got " + v->scalar + ")");
        }
      }
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
    case FaultKind::kAbsent:
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
