// Reads the `step:` program: a list of ops, each a single-key mapping (or the
// bare scalar `sync`), plus `when` blocks whose expressions are compiled here
// so that a typo is reported at its column in the YAML file. Log placeholders
// are checked once the whole program is known, since they may name later ops.
#include <climits>
#include <unordered_set>

#include "sim/io/jitter_reader.h"
#include "sim/io/scenario_reader.h"
#include "sim/io/units.h"
#include "fleetsim/expr.h"

namespace fleetsim {
namespace {

struct OpName {
  std::string_view name;
  OpKind kind;
};
constexpr OpName kOps[] = {
    {"compute", OpKind::kCompute},       {"cpu", OpKind::kCpu},
    {"allreduce", OpKind::kAllReduce},   {"allgather", OpKind::kAllGather},
    {"reducescatter", OpKind::kReduceScatter}, {"broadcast", OpKind::kBroadcast},
    {"reduce", OpKind::kReduce},         {"alltoall", OpKind::kAllToAll},
    {"barrier", OpKind::kBarrier},       {"send", OpKind::kSend},
    {"recv", OpKind::kRecv},             {"sync", OpKind::kSync},
    {"log", OpKind::kLog},               {"store_barrier", OpKind::kStoreBarrier}};

Names op_names() {
  Names n;
  for (const auto& o : kOps) n.push_back(o.name);
  n.push_back("when");
  return n;
}

const OpName* find_kind(std::string_view name) {
  for (const auto& o : kOps) if (o.name == name) return &o;
  return nullptr;
}

Names allowed_keys(OpKind k) {
  switch (k) {
    case OpKind::kCompute: case OpKind::kCpu: return {"name", "time", "jitter"};
    case OpKind::kBroadcast: case OpKind::kReduce: return {"name", "group", "bytes", "dtype", "root"};
    case OpKind::kBarrier: return {"name", "group", "dtype"};
    case OpKind::kSend: return {"name", "to", "bytes", "dtype"};
    case OpKind::kRecv: return {"name", "from", "bytes", "dtype"};
    case OpKind::kSync: case OpKind::kStoreBarrier: return {"name"};
    default: return {"name", "group", "bytes", "dtype"};
  }
}

// Appends each op name not in `seen` yet, in program order; `seen` keeps the
// lookup constant-time, so a program of many distinct names loads in linear time.
void collect_names(const std::vector<Op>& ops, std::unordered_set<std::string_view>* seen, Names* out) {
  for (const Op& op : ops) {
    if (op.kind != OpKind::kWhen && op.kind != OpKind::kLog && seen->insert(op.name).second) out->push_back(op.name);
    collect_names(op.then_ops, seen, out);
    collect_names(op.else_ops, seen, out);
  }
}

}  // namespace

Names ScenarioReader::group_names() const {
  Names g = {"world", "tp", "dp"};
  if (s_.parallel.pp_given) g.push_back("pp");
  return g;
}

int ScenarioReader::group_size(std::string_view group) const {
  if (group == "tp") return s_.parallel.tp;
  if (group == "dp") return s_.parallel.dp;
  if (group == "pp") return s_.parallel.pp;
  return s_.ranks();
}

void ScenarioReader::read_program(const YamlNode& n, std::string_view what, std::vector<Op>* out) {
  if (!n.is_seq()) {
    return error(n.loc, std::string("expected a list of ops for '").append(what) + "', got " + n.describe());
  }
  if (n.items.empty()) return error(n.loc, std::string("'").append(what) + "' must list at least one op");
  for (const YamlNode& item : n.items) {
    if (auto op = read_op(item)) out->push_back(std::move(*op));
  }
}

std::optional<Op> ScenarioReader::read_op(const YamlNode& n) {
  Op op;
  op.loc = n.loc;
  if (n.is_scalar()) {
    if (n.scalar == "sync" || n.scalar == "store_barrier") {
      op.kind = n.scalar == "sync" ? OpKind::kSync : OpKind::kStoreBarrier;
      op.name = n.scalar;
      return op;
    }
    if (find_kind(n.scalar)) {
      error(n.loc, "op " + quote_value(n.scalar) + " needs its fields; expected '- " + clip_value(n.scalar) + ": {...}'");
    } else {
      unknown_name(n.loc, "op", n.scalar, op_names());
    }
    return std::nullopt;
  }
  if (!n.is_map()) {
    error(n.loc, "expected an op (a mapping like '- compute: {time: 10ms}'), got " + n.describe());
    return std::nullopt;
  }
  if (n.find("when")) return read_when(n);
  for (const YamlNode& k : n.keys) {
    if (k.is_scalar() && (k.scalar == "do" || k.scalar == "else")) {
      error(k.loc, quote_value(k.scalar) + " without 'when'; expected a 'when' key in the same mapping");
      return std::nullopt;
    }
  }
  if (n.keys.size() != 1) {
    const YamlNode& k = n.keys.size() > 1 ? n.keys[1] : n;
    if (n.keys.empty()) error(n.loc, "empty op mapping; expected one op key, e.g. 'compute'");
    else if (k.scalar == n.keys[0].scalar) error(k.loc, "duplicate key " + quote_value(k.scalar) + " in an op mapping");
    else error(k.loc, "an op mapping must have exactly one op key; found '" + n.keys[0].scalar + "' and '" +
                          k.scalar + "' (start each op with its own '-')");
    return std::nullopt;
  }
  const YamlNode& key = n.keys[0];
  const OpName* kind = key.is_scalar() ? find_kind(key.scalar) : nullptr;
  if (!kind) {
    unknown_name(key.loc, "op", key.is_scalar() ? key.scalar : key.describe(), op_names());
    return std::nullopt;
  }
  op.kind = kind->kind;
  op.name = std::string(kind->name);
  const size_t errors_before = error_count();
  read_op_fields(n.items[0], &op);
  if (error_count() != errors_before) return std::nullopt;
  return op;
}

std::optional<Op> ScenarioReader::read_when(const YamlNode& n) {
  check_map(n, "when", {"when", "do", "else"});
  Op op;
  op.kind = OpKind::kWhen;
  op.name = "when";
  op.loc = n.loc;
  const YamlNode& w = *n.find("when");
  if (auto text = as_string(w, "when")) {
    op.when = *text;
    op.when_loc = w.loc;
    if (w.quoted) op.when_loc.col += 1;
    auto parsed = Expr::parse(*text);
    if (!parsed.ok()) {
      SourceLoc at = op.when_loc;
      at.col += parsed.errors()[0].loc.col - 1;
      error(at, "in 'when' expression: " + parsed.errors()[0].message);
    }
  }
  if (const YamlNode* d = n.find("do")) {
    read_program(*d, "do", &op.then_ops);
  } else {
    error(n.loc, "'when' needs a 'do' list of the ops to run when the condition holds");
  }
  if (const YamlNode* e = n.find("else")) {
    if (!e->is_seq()) error(e->loc, "expected a list of ops for 'else', got " + e->describe());
    for (const YamlNode& item : e->items) {
      if (auto o = read_op(item)) op.else_ops.push_back(std::move(*o));
    }
  }
  return op;
}

void ScenarioReader::read_op_fields(const YamlNode& value, Op* op) {
  const std::string what = op->name;  // the YAML kind until a `name` overrides it
  if (op->kind == OpKind::kLog) {
    if (auto text = as_string(value, "log (the text to print)")) {
      op->text = *text;
      SourceLoc at = value.loc;
      if (value.quoted) at.col += 1;
      logs_.push_back(PendingLog{*text, at});
    }
    return;
  }
  if ((op->kind == OpKind::kSync || op->kind == OpKind::kStoreBarrier) && value.is_null()) return;
  if (!check_map(value, what, allowed_keys(op->kind))) return;
  if (const YamlNode* v = value.find("name")) {
    if (auto s = as_string(*v, what + ".name")) {
      if (s->empty()) error(v->loc, "'" + what + ".name' must not be empty");
      else op->name = *s;
    }
  }
  if (op->kind == OpKind::kCompute || op->kind == OpKind::kCpu) {
    if (const YamlNode* t = require(value, "time", what)) {
      if (auto d = as_duration(*t, what + ".time")) op->time = *d;
    }
    if (const YamlNode* j = value.find("jitter")) read_jitter(*this, *j, what + ".jitter", false, &op->jitter);
    return;
  }
  if (is_collective(op->kind)) read_comm_fields(value, what, op);
}

void ScenarioReader::read_comm_fields(const YamlNode& value, std::string_view what_view, Op* op) {
  const std::string what(what_view);
  if (const YamlNode* v = value.find("dtype")) {
    if (auto t = as_dtype(*v, what + ".dtype")) op->dtype = *t;
  }
  op->group = "world";
  if (op->kind == OpKind::kSend || op->kind == OpKind::kRecv) {
    const char* key = op->kind == OpKind::kSend ? "to" : "from";
    if (const YamlNode* p = require(value, key, what)) {
      if (auto s = as_string(*p, what + "." + key)) {
        if (*s == "next" || *s == "prev") op->peer = *s;
        else unknown_name(p->loc, "pipeline peer", *s, {"next", "prev"});
      }
    }
    op->group = "pp";
    if (!s_.parallel.pp_given || s_.parallel.pp <= 1) {
      error(op->loc, "'" + what + "' needs pipeline stages, but pp is 1; expected parallel.pp > 1");
    }
  } else if (const YamlNode* g = value.find("group")) {
    if (auto s = as_string(*g, what + ".group")) {
      const Names groups = group_names();
      bool known = false;
      for (std::string_view n : groups) known = known || n == *s;
      if (known) op->group = *s;
      else if (*s == "pp") error(g->loc, "group 'pp' exists only when parallel.pp is given; expected one of: " + join_names(groups));
      else unknown_name(g->loc, "group", *s, groups);
    }
  }
  if (op->kind == OpKind::kBarrier) {
    op->bytes = dtype_bytes(op->dtype);
  } else if (const YamlNode* b = require(value, "bytes", what)) {
    if (auto x = as_bytes(*b, what + ".bytes")) op->bytes = *x;
  }
  if (op->kind == OpKind::kBroadcast || op->kind == OpKind::kReduce) {
    if (const YamlNode* r = value.find("root")) {
      if (auto x = as_int(*r, what + ".root", 0, INT_MAX)) {
        op->root = static_cast<int>(*x);
        if (parallel_ok_ && op->root >= group_size(op->group)) {
          error(r->loc, "root " + std::to_string(op->root) + " is outside group '" + op->group + "' of size " +
                            std::to_string(group_size(op->group)) + "; expected 0.." +
                            std::to_string(group_size(op->group) - 1));
        }
      }
    }
  }
}

void ScenarioReader::check_logs() {
  Names candidates;
  for (size_t i = 0; i < static_cast<size_t>(Var::kCount); ++i) candidates.push_back(var_name(static_cast<Var>(i)));
  std::unordered_set<std::string_view> seen(candidates.begin(), candidates.end());
  collect_names(s_.step, &seen, &candidates);
  const std::unordered_set<std::string_view> known_names(candidates.begin(), candidates.end());
  for (const PendingLog& log : logs_) {
    const std::string& text = log.text;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != '{') continue;
      SourceLoc at = log.text_loc;
      at.col += static_cast<int>(i);
      const size_t close = text.find('}', i);
      if (close == std::string::npos) {
        error(at, "unclosed '{' in log text; expected '{name}' naming a variable or an op");
        break;
      }
      const std::string name = text.substr(i + 1, close - i - 1);
      const bool known = known_names.count(name) > 0;
      if (name.empty()) {
        error(at, "log placeholder '{}' names nothing; expected a variable (rank, step, ...) or an op name");
      } else if (!known) {
        unknown_name(at, "log placeholder", name, candidates);
      }
      i = close;
    }
  }
}

}  // namespace fleetsim
