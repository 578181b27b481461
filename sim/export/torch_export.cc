// Writes the scenario-specific parts of an exported PyTorch script: the header
// and constants, one tensor per collective, the compute faults as a slowdown
// function, and the step program with its `when` blocks and faults in place.
#include "sim/export/torch_export.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "sim/export/py_expr.h"

namespace fleetsim::exporter {

namespace {

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string secs(Duration d) { return num(d.to_seconds()); }

std::string bytes_text(int64_t b) {
  for (const auto& [shift, text] : {std::pair{40, "2**40"}, {30, "2**30"}, {20, "2**20"}, {10, "2**10"}})
    if (b >= (int64_t{1} << shift) && b % (int64_t{1} << shift) == 0)
      return std::to_string(b >> shift) + " * " + text;
  return std::to_string(b);
}

const char* torch_dtype(DType t) {
  switch (t) {
    case DType::kFloat: return "torch.float32";
    case DType::kBFloat16: return "torch.bfloat16";
    case DType::kHalf: return "torch.float16";
    case DType::kDouble: return "torch.float64";
    case DType::kInt: return "torch.int32";
    case DType::kLong: return "torch.int64";
    case DType::kByte: return "torch.uint8";
    case DType::kFloat8: return "torch.float8_e4m3fn";
  }
  return "torch.float32";
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string where(const SourceLoc& loc) {
  std::string s = loc.file;
  if (loc.line > 0) s += ":" + std::to_string(loc.line);
  if (loc.col > 0) s += ":" + std::to_string(loc.col);
  return s;
}

GroupKind group_kind(const std::string& g) {
  return g == "tp" ? GroupKind::kTp : g == "dp" ? GroupKind::kDp : g == "pp" ? GroupKind::kPp : GroupKind::kWorld;
}

std::string ranks_list(const std::vector<int>& ranks) {
  std::string s = "(";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + (ranks.size() == 1 ? ",)" : ")");
}

// The Python expression that selects a rank set: "rank == 3", "rank in (1, 2)", "True".
std::string rank_test(const Fault& f) {
  if (f.all_ranks) return "True";
  if (f.ranks.size() == 1) return "rank == " + std::to_string(f.ranks[0]);
  return "rank in " + ranks_list(f.ranks);
}

std::string jitter_arg(const Jitter& j) {
  if (!j.active()) return "";
  switch (j.dist) {
    case JitterDist::kNormal: return ", jitter=" + num(j.cv);
    case JitterDist::kLognormal: return ", jitter=(\"lognormal\", " + num(j.cv) + ")";
    case JitterDist::kGamma: return ", jitter=(\"gamma\", " + num(j.cv) + ")";
    case JitterDist::kEmpirical: {
      std::string s = ", jitter=(\"empirical\", [";
      for (size_t i = 0; i < j.samples.size(); ++i) s += (i ? ", " : "") + num(j.samples[i]);
      return s + "])";
    }
  }
  return "";
}

// Python lines with indentation.
class Out {
 public:
  void line(const std::string& s) { text_ += std::string(4 * static_cast<size_t>(depth_), ' ') + s + "\n"; }
  void blank() { text_ += "\n"; }
  void raw(const std::string& s) { text_ += s; }
  void in() { ++depth_; }
  void out() { --depth_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int depth_ = 0;
};

struct Writer {
  const Plan& plan;
  const Scenario& sc;
  Out out;
  std::vector<Diagnostic> errors;
  std::map<std::string, std::string> tensor_of;  // op name -> key in T
  std::vector<std::string> tensor_lines;

  bool has_tensor_key(const std::string& key) const {
    for (const auto& [name, k] : tensor_of)
      if (k == key) return true;
    return false;
  }

  // The tensor expression (or expressions) a collective uses; allocated once in make_tensors().
  std::string tensor_for(const Op& op, int64_t bytes, DType dtype, const std::string& suffix) {
    const std::string id = op.name + suffix + "|" + std::to_string(bytes) + "|" + dtype_name(dtype) + "|" +
                           op_yaml_name(op.kind) + "|" + op.group;
    if (auto it = tensor_of.find(id); it != tensor_of.end()) return it->second;
    std::string key = op.name + suffix;
    for (int k = 2; has_tensor_key("T[" + quoted(key) + "]"); ++k) key = op.name + suffix + "_" + std::to_string(k);
    const std::string n = std::to_string(plan.group_size(group_kind(op.group)));
    const std::string dt = torch_dtype(dtype), b = bytes_text(bytes);
    std::string alloc;
    switch (op.kind) {
      case OpKind::kAllGather:  // bytes = the gathered output
        alloc = "(torch.ones(elements(" + b + ", " + dt + ", " + n + "), dtype=" + dt + ", device=DEVICE),  # out\n" +
                "                  torch.ones(elements(" + b + ", " + dt + ", " + n + ") // " + n + ", dtype=" + dt +
                ", device=DEVICE))  # in";
        break;
      case OpKind::kReduceScatter:  // bytes = the input
        alloc = "(torch.ones(elements(" + b + ", " + dt + ", " + n + ") // " + n + ", dtype=" + dt +
                ", device=DEVICE),  # out\n" + "                  torch.ones(elements(" + b + ", " + dt + ", " + n +
                "), dtype=" + dt + ", device=DEVICE))  # in";
        break;
      case OpKind::kAllToAll:
        alloc = "(torch.ones(elements(" + b + ", " + dt + ", " + n + "), dtype=" + dt + ", device=DEVICE),\n" +
                "                  torch.ones(elements(" + b + ", " + dt + ", " + n + "), dtype=" + dt +
                ", device=DEVICE))";
        break;
      default:
        alloc = "torch.ones(elements(" + b + ", " + dt + "), dtype=" + dt + ", device=DEVICE)";
    }
    tensor_lines.push_back("T[" + quoted(key) + "] = " + alloc);
    return tensor_of[id] = "T[" + quoted(key) + "]";
  }

  std::string call(const Op& op, int64_t bytes, DType dtype, const std::string& suffix) {
    const std::string name = quoted(op.name), g = "group=" + quoted(op.group);
    switch (op.kind) {
      case OpKind::kAllReduce: return "all_reduce(" + name + ", " + tensor_for(op, bytes, dtype, suffix) + ", " + g + ")";
      case OpKind::kAllGather: return "all_gather(" + name + ", *" + tensor_for(op, bytes, dtype, suffix) + ", " + g + ")";
      case OpKind::kReduceScatter:
        return "reduce_scatter(" + name + ", *" + tensor_for(op, bytes, dtype, suffix) + ", " + g + ")";
      case OpKind::kAllToAll: return "all_to_all(" + name + ", *" + tensor_for(op, bytes, dtype, suffix) + ", " + g + ")";
      case OpKind::kBroadcast:
        return "broadcast(" + name + ", " + tensor_for(op, bytes, dtype, suffix) + ", root=" + std::to_string(op.root) +
               ", " + g + ")";
      case OpKind::kReduce:
        return "reduce(" + name + ", " + tensor_for(op, bytes, dtype, suffix) + ", root=" + std::to_string(op.root) +
               ", " + g + ")";
      case OpKind::kBarrier: return "barrier(" + name + ", " + g + ")";
      case OpKind::kSend:
        return "send(" + name + ", " + tensor_for(op, bytes, dtype, suffix) + ", to=" +
               (op.peer == "prev" ? "prev_stage" : "next_stage") + ", group=\"pp\")";
      case OpKind::kRecv:
        return "recv(" + name + ", " + tensor_for(op, bytes, dtype, suffix) + ", frm=" +
               (op.peer == "next" ? "next_stage" : "prev_stage") + ", group=\"pp\")";
      default: return "pass";
    }
  }

  std::string log_fstring(const std::string& text) {
    std::string s = "f\"";
    size_t i = 0;
    auto lit = [&](char c) {
      if (c == '{' || c == '}') s += c;
      if (c == '"' || c == '\\') s += '\\';
      s += c;
    };
    while (i < text.size()) {
      const size_t open = text.find('{', i), close = open == std::string::npos ? open : text.find('}', open);
      if (close == std::string::npos) {
        for (; i < text.size(); ++i) lit(text[i]);
        break;
      }
      for (; i < open; ++i) lit(text[i]);
      const std::string key = text.substr(open + 1, close - open - 1);
      bool var = false;
      for (int k = 0; k < static_cast<int>(Var::kCount); ++k) var = var || key == var_name(static_cast<Var>(k));
      if (var) {
        s += "{" + key + "}";
      } else {
        std::string t;
        for (const auto& [id, k] : tensor_of) {
          if (id.rfind(key + "|", 0) != 0) continue;
          const bool pair = id.find("|allgather|") != std::string::npos || id.find("|reducescatter|") != std::string::npos ||
                            id.find("|alltoall|") != std::string::npos;
          t = pair ? k + "[0]" : k;  // (out, in): the result is the output
        }
        if (t.empty()) t = "torch.zeros(1)";
        for (char& c : t)
          if (c == '"') c = '\'';
        s += "{value(" + t + "):.4f}";
      }
      i = close + 1;
    }
    return s + "\"";
  }

  void write_op(const Op& op);
  void write_collective(const Op& op, const std::vector<const Fault*>& skips,
                        const std::vector<const Fault*>& mismatches);
  void write_ops(const std::vector<Op>& ops) {
    if (ops.empty()) out.line("pass");
    for (const Op& op : ops) write_op(op);
  }
  void write_step_faults();
  void write_slowdown();
  bool check_faults();
};

// The fault's YAML key (the compute faults share one kind and differ by mode).
std::string fault_key(const Fault& f) {
  for (const FaultSpec& spec : kFaultSpecs)
    if (spec.kind == f.kind && (f.kind != FaultKind::kStraggler || spec.mode == f.mode)) return spec.name;
  return fault_yaml_name(f.kind);
}

std::string fault_comment(const Fault& f) { return "# fault `" + fault_key(f) + "` (" + where(f.loc) + ")"; }

void Writer::write_op(const Op& op) {
  // A stall, skip or mismatch aimed at this op: the branch a real bug (or a hung call) would have.
  std::vector<const Fault*> skips, mismatches;
  for (const Fault& f : sc.faults) {
    if (f.op != op.name || f.ranks.empty()) continue;
    const std::string at = f.ranks.size() == 1 ? "rank == " + std::to_string(f.ranks[0]) + " and step == " +
                                                     std::to_string(f.at_step)
                                               : "False";
    if (f.kind == FaultKind::kStall) {
      out.line("if " + at + ":  " + fault_comment(f) + ": this call never returns");
      out.in();
      out.line("stall_forever(" + quoted(f.where.empty() ? op.name : f.where) + ")");
      out.out();
    } else if (f.kind == FaultKind::kSkip) {
      skips.push_back(&f);
    } else if (f.kind == FaultKind::kMismatch) {
      mismatches.push_back(&f);
    }
  }
  switch (op.kind) {
    case OpKind::kCompute: out.line("compute(" + quoted(op.name) + ", " + secs(op.time) + jitter_arg(op.jitter) + ")"); return;
    case OpKind::kCpu: out.line("cpu(" + quoted(op.name) + ", " + secs(op.time) + ")"); return;
    case OpKind::kSync: out.line("synchronize()"); return;
    case OpKind::kStoreBarrier: out.line("store_barrier(" + quoted(op.name) + ", step)"); return;
    case OpKind::kLog: out.line("log(" + log_fstring(op.text) + ")"); return;
    case OpKind::kWhen: {
      auto py = when_to_python(op.when);
      if (!py.ok()) {
        Diagnostic d = py.errors().front();
        d.loc = op.when_loc;
        errors.push_back(d);
        return;
      }
      out.line("if " + *py + ":");
      out.in();
      write_ops(op.then_ops);
      out.out();
      if (!op.else_ops.empty()) {
        out.line("else:");
        out.in();
        write_ops(op.else_ops);
        out.out();
      }
      return;
    }
    default: write_collective(op, skips, mismatches);
  }
}

void Writer::write_collective(const Op& op, const std::vector<const Fault*>& skips,
                              const std::vector<const Fault*>& mismatches) {
  auto when_of = [](const Fault* f) {
    return "rank == " + std::to_string(f->ranks[0]) + " and step == " + std::to_string(f->at_step);
  };
  const std::string normal = call(op, op.bytes, op.dtype, "");
  bool opened = false;
  for (const Fault* f : skips) {
    out.line(std::string(opened ? "elif " : "if ") + when_of(f) + ":  " + fault_comment(*f) + ": this rank never issues it");
    out.in();
    out.line("pass");
    out.out();
    opened = true;
  }
  for (const Fault* f : mismatches) {
    const int64_t b = f->bytes.value_or(op.bytes);
    const DType t = f->dtype.value_or(op.dtype);
    out.line(std::string(opened ? "elif " : "if ") + when_of(f) + ":  " + fault_comment(*f) + ": " +
             std::to_string(b) + " bytes of " + dtype_name(t) + " instead of " + std::to_string(op.bytes) + " of " +
             dtype_name(op.dtype));
    out.in();
    out.line(call(op, b, t, "_mismatch"));
    out.out();
    opened = true;
  }
  if (opened) {
    out.line("else:");
    out.in();
    out.line(normal);
    out.out();
  } else {
    out.line(normal);
  }
}

// Crashes and stalls at the start of a step.
void Writer::write_step_faults() {
  for (const Fault& f : sc.faults) {
    if (f.ranks.empty() || !f.op.empty()) continue;
    const std::string at = "if rank == " + std::to_string(f.ranks[0]) + " and step == " + std::to_string(f.at_step) + ":  ";
    if (f.kind == FaultKind::kCrash) {
      out.line(at + fault_comment(f) + ": the process dies");
      out.in();
      out.line("crash()");
      out.out();
    } else if (f.kind == FaultKind::kStall) {
      out.line(at + fault_comment(f) + ": its " + (f.where.empty() ? "CPU" : f.where) + " never returns");
      out.in();
      out.line("stall_forever(" + quoted(f.where.empty() ? "cpu" : f.where) + ")");
      out.out();
    }
  }
}

// Compute faults: how many times longer this rank computes, and pauses.
void Writer::write_slowdown() {
  out.line("def slowdown(step):");
  out.in();
  out.line("\"\"\"How many times longer this rank's compute runs at `step` (stragglers, throttling).\"\"\"");
  out.line("x = 1.0");
  for (const Fault& f : sc.faults) {
    if (f.kind != FaultKind::kStraggler || f.mode == SlowMode::kPause) continue;
    std::string steps = f.from_step > 1 ? " and " + std::to_string(f.from_step) + " <= step" : "";
    if (f.to_step != INT64_MAX) steps += (f.from_step > 1 ? " <= " : " and step <= ") + std::to_string(f.to_step);
    const std::string c = fault_comment(f);
    if (f.mode == SlowMode::kPersistent) {
      out.line("if " + rank_test(f) + steps + ":  " + c);
      out.in();
      out.line("x *= " + num(f.slowdown));
      out.out();
    } else if (f.mode == SlowMode::kIntermittent) {
      std::string cond = (f.all_ranks ? "" : rank_test(f) + " and ") + (steps.empty() ? "" : steps.substr(5) + " and ");
      out.line("if " + cond + "rng.random() < " + num(f.probability) + ":  " + c);
      out.in();
      std::string jit = jitter_arg(f.slowdown_jitter);  // ", jitter=X" or empty
      out.line("x *= " + num(f.slowdown) + (jit.empty() ? "" : " * _jitter(" + jit.substr(9) + ")"));
      out.out();
    } else if (f.mode == SlowMode::kThrottle) {
      out.line("if " + rank_test(f) + ":  " + c);
      out.in();
      for (auto it = f.schedule.rbegin(); it != f.schedule.rend(); ++it) {
        out.line(std::string(it == f.schedule.rbegin() ? "if" : "elif") + " step >= " + std::to_string(it->from_step) +
                 ":");
        out.in();
        out.line("x *= " + num(it->factor));
        out.out();
      }
      out.out();
    }
  }
  out.line("return x");
  out.out();
  out.blank();
  out.blank();
  out.line("def pause_seconds(step):");
  out.in();
  out.line("\"\"\"Host pauses (GC, I/O) added to the step's first compute.\"\"\"");
  out.line("t = 0.0");
  for (const Fault& f : sc.faults) {
    if (f.kind != FaultKind::kStraggler || f.mode != SlowMode::kPause) continue;
    std::string cond = f.all_ranks ? "" : rank_test(f) + " and ";
    if (f.from_step > 1) cond += std::to_string(f.from_step) + " <= step and ";
    if (f.to_step != INT64_MAX) cond += "step <= " + std::to_string(f.to_step) + " and ";
    const std::string phase = f.staggered ? "(step + rank)" : "step";
    out.line("if " + cond + phase + " % " + std::to_string(f.every) + " == 0:  " + fault_comment(f));
    out.in();
    out.line("t += " + secs(f.pause));
    out.out();
  }
  out.line("return t");
  out.out();
}

// Faults a program cannot do to itself: a slower or dead NIC, NVLink, GPUDirect.
bool Writer::check_faults() {
  for (const Fault& f : sc.faults) {
    const FaultFamily fam = fault_family(f.kind);
    if (fam != FaultFamily::kFabric && fam != FaultFamily::kNicDown) continue;
    Diagnostic d;
    d.loc = f.loc;
    d.message = "fault `" + std::string(fault_yaml_name(f.kind)) +
                "` has no real form in a PyTorch script: it changes the hardware (a link, a NIC, NVLink or "
                "GPUDirect), which the job's own code cannot do; remove it to export the scenario (the simulator "
                "still runs it)";
    errors.push_back(d);
  }
  return errors.empty();
}

}  // namespace

Result<std::string> export_torch(const Plan& plan, const TorchExportOptions& o) {
  const Scenario& sc = plan.scenario;
  Writer w{plan, sc, {}, {}, {}, {}};
  if (!w.check_faults()) return w.errors;
  Out body;
  std::swap(w.out, body);
  w.out.line("def step_program(step):");
  w.out.in();
  w.out.line("\"\"\"One training step, as the scenario's `step:` lists it.\"\"\"");
  w.write_step_faults();
  w.write_ops(sc.step);
  w.out.out();
  if (!w.errors.empty()) return w.errors;
  const std::string step_fn = w.out.text();
  w.out = Out{};
  w.write_slowdown();
  const std::string slow_fn = w.out.text();

  std::vector<int> absent;
  for (const Fault& f : sc.faults)
    if (f.kind == FaultKind::kAbsent) absent.insert(absent.end(), f.ranks.begin(), f.ranks.end());
  std::string kinds = "[\"world\", \"tp\", \"dp\"";
  if (plan.pp_group) kinds += ", \"pp\"";
  kinds += "]";
  const std::string file = o.source.empty() ? sc.file : o.source;
  std::ostringstream s;
  s << "#!/usr/bin/env python3\n"
    << "\"\"\"" << sc.name << (sc.description.empty() ? "" : ": " + sc.description) << "\n\n"
    << "Exported by `fleetsim export torch` from " << file << ": the scenario as a PyTorch job.\n"
    << "Run one process per rank with torchrun (NCCL on GPUs, gloo on CPUs):\n\n"
    << "    torchrun --nproc-per-node " << plan.ranks << " " << o.script_name << " [--backend gloo] [--time-scale 0.1] "
    << "[--bytes-scale 0.001] [--timeout 5]\n\n"
    << plan.ranks << " ranks: tp " << plan.tp << " x dp " << plan.dp << " x pp " << plan.pp
    << " (tp fastest, as Megatron lays them out), " << sc.fleet.gpus_per_node << " per node.\n"
    << "On a timeout every rank dumps its flight recorder into --dump-dir: the pickle as PyTorch's dump on\n"
    << "timeout writes it, and JSON under json/.\n"
    << "\"\"\"\n"
    << "STEPS = " << sc.job.steps << "\n"
    << "SEED = " << sc.job.seed << "\n"
    << "TP, DP, PP = " << plan.tp << ", " << plan.dp << ", " << plan.pp << "\n"
    << "GPUS_PER_NODE = " << sc.fleet.gpus_per_node << "\n"
    << "GROUP_KINDS = " << kinds << "\n"
    << "TIMEOUT_S = "
    << (sc.job.watchdog ? secs(*sc.job.watchdog) + "  # job.watchdog: the collective timeout"
                        : std::string("365 * 86400.0  # job.watchdog: off"))
    << "\n"
    << "DUMP_WAIT_S = " << secs(sc.job.dump_wait) << "  # after a timeout, the wait for every rank's dump\n"
    << "FR_ENTRIES = " << sc.job.flight_recorder_entries << "  # TORCH_FR_BUFFER_SIZE\n"
    << "BACKEND = " << quoted(o.backend) << "\n"
    << "TIME_SCALE = " << num(o.time_scale) << "\n"
    << "BYTES_SCALE = " << num(o.bytes_scale) << "\n"
    << "ABSENT_RANKS = " << (absent.empty() ? "()" : ranks_list(absent)) << "  # fault `absent`: never join\n";
  s << torch_runtime_prelude() << "\n\n# --- the scenario " << std::string(60, '-') << "\n";
  s << "def make_tensors():\n"
    << "    \"\"\"One tensor per collective of the step, allocated once (bytes times --bytes-scale).\"\"\"\n";
  for (const std::string& l : w.tensor_lines) s << "    " << l << "\n";
  if (w.tensor_lines.empty()) s << "    pass\n";
  s << "\n\nT = {}\n\n\n" << slow_fn << "\n\n" << step_fn << torch_runtime_main();
  return s.str();
}

}  // namespace fleetsim::exporter
