// An incident's fastest isolation path through the drill's own commands, in the
// isolation order's steps (include/fleetsim/isolation.h): each step's facts are
// cut verbatim from what its command prints, so the path cites only evidence a
// player can request. Also the closing lesson: the op that blocked, by name.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/diagnose/blocked_op.h"
#include "sim/drill/drill_incident.h"

namespace fleetsim::drill {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a);
}

// The first line of `text` holding every part (trimmed of its indent), or "".
std::string line_with(const std::string& text, std::initializer_list<std::string> parts, bool last = false) {
  std::string found;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, nl - at);
    if (std::all_of(parts.begin(), parts.end(), [&](const std::string& p) { return line.find(p) != std::string::npos; })) {
      found = trim(line);
      if (!last) break;
    }
    at = nl + 1;
  }
  return found;
}

// The text after `header` up to the next line starting with `next` (or the end).
std::string block_after(const std::string& text, const std::string& header, const std::string& next) {
  const size_t at = text.find(header);
  if (at == std::string::npos) return "";
  const size_t from = at + header.size();
  const size_t end = text.find("\n" + next, from);
  return text.substr(from, end == std::string::npos ? std::string::npos : end + 1 - from);
}

// In a coalesced py-spy dump, the culprit's block: its first frame from train.py
// and, when there is one, the `when` it sits under.
std::vector<std::string> pyspy_facts(const std::string& out, const std::string& who) {
  const std::string sep = "----------------\n";
  const std::string block = block_after(out, sep + "rank " + who + "\n" + sep, sep);
  if (block.empty()) return {};
  std::vector<std::string> facts = {"rank " + who};
  const std::string error = line_with(block, {"Error:"});
  if (!error.empty()) return {"rank " + who + "\n" + sep + error};
  const std::string frame = line_with(block, {"(train.py:"});
  if (!frame.empty()) facts.push_back(frame);
  const std::string when = line_with(block, {"when ", "(train.py:"});
  if (!when.empty() && when != frame) facts.push_back(when);
  return facts;
}

// In a coalesced fr dump, the culprit's own row: its header and the first line no
// other row holds.
std::vector<std::string> fr_row_facts(const std::string& out, const std::string& who) {
  const std::string block = block_after(out, "\nrank " + who + ":\n", "rank ");
  if (block.empty()) return {};
  std::string others = out;
  others.erase(out.find("\nrank " + who + ":\n"), block.size() + who.size() + 7);
  size_t at = 0;
  while (at < block.size()) {
    const size_t nl = std::min(block.find('\n', at), block.size());
    const std::string line = block.substr(at, nl - at);
    if (others.find(line + "\n") == std::string::npos) return {"rank " + who + ":", trim(line)};
    at = nl + 1;
  }
  return {"rank " + who + ":"};
}

PathStep step(const Incident& inc, IsolationStep s, const std::string& command, std::vector<std::string> facts,
              bool isolates, std::string hint_command = "") {
  std::string kind = command;
  if (command.rfind("py-spy dump ", 0) == 0 && command != "py-spy dump all") kind = "py-spy dump RANK";
  if (command.rfind("nccl-tests", 0) == 0) kind = "nccl-tests";
  if (command.rfind("nvidia-smi", 0) == 0) kind = "nvidia-smi";
  facts.erase(std::remove(facts.begin(), facts.end(), std::string()), facts.end());
  return PathStep{s, command, hint_command.empty() ? command : hint_command, command_minutes(inc, kind),
                  std::move(facts), isolates};
}

// Step 1 for a stopped job: the log line that says how it stopped.
PathStep hang_or_slow(const Incident& inc, const std::string& who) {
  if (inc.result.outcome == Outcome::kCompleted) {
    const std::string out = render_steps(inc);
    return step(inc, IsolationStep::kHangOrSlow, "steps", {line_with(out, {"s/step"}, true)}, false);
  }
  if (inc.result.outcome == Outcome::kDeadlock)
    return step(inc, IsolationStep::kHangOrSlow, "steps", {line_with(render_steps(inc), {"nothing since"})}, false);
  const std::string logs = render_logs(inc, -1);
  if (inc.result.outcome == Outcome::kCrash) {
    std::string fact = line_with(logs, {"rank      : " + who + " "});
    if (fact.empty()) fact = line_with(logs, {"[rank" + who + "]"});
    return step(inc, IsolationStep::kHangOrSlow, "logs", {fact}, !fact.empty());
  }
  return step(inc, IsolationStep::kHangOrSlow, "logs", {line_with(logs, {"Watchdog caught"}, true)}, false);
}

// The nvidia-smi row of `rank`'s GPU (its utilization line), verbatim.
std::vector<std::string> smi_facts(const Incident& inc, int rank) {
  const int gpn = inc.plan.scenario.fleet.gpus_per_node;
  const std::string out = render_nvidia_smi(inc, -1);
  const std::string node = block_after(out, "node" + std::to_string(rank / gpn) + ": $ nvidia-smi\n", "node");
  int seen = 0;
  size_t at = 0;
  while (at < node.size()) {
    const size_t nl = std::min(node.find('\n', at), node.size());
    const std::string line = node.substr(at, nl - at);
    if (line.find("MiB /") != std::string::npos && seen++ == rank % gpn)
      return {"node" + std::to_string(rank / gpn) + ": $ nvidia-smi", trim(line)};
    at = nl + 1;
  }
  return {};
}

// The timing lines that single out `who`: a slow link's communicator has a long
// collective time of its own; a straggler comes last. With no culprit, the line
// that says where the time goes.
std::vector<std::string> timing_facts(const std::string& fr, const std::string& who, Cause cause) {
  if (cause == Cause::kRotatingStraggler) return {line_with(fr, {"the rank that came last changes"})};
  if (who.empty()) return {line_with(fr, {"own time alike"})};
  if (cause == Cause::kSlowLink || cause == Cause::kNvlinkDegraded)
    return {line_with(fr, {"communicator of rank " + who + ":"})};
  std::vector<std::string> out;
  size_t at = 0;
  while (at < fr.size()) {
    const size_t nl = std::min(fr.find('\n', at), fr.size());
    const std::string line = fr.substr(at, nl - at);
    if (line.find("came last (the shortest duration)") != std::string::npos) out.push_back(trim(line));
    at = nl + 1;
  }
  return out;
}

// The nccl-tests verdict line: "(NN% of the ... GB/s ...".
std::vector<std::string> nccl_tests_facts(const std::string& out) { return {line_with(out, {"% of the"})}; }

}  // namespace

int command_minutes(const Incident& inc, const std::string& kind) {
  static const std::map<std::string, int> kCost = {
      {"logs", 2}, {"steps", 1}, {"nvidia-smi", 1}, {"py-spy dump RANK", 2}, {"py-spy dump all", 5},
      {"fr dump", 5}, {"ncclras", 1}, {"nccl-tests", 10}, {"hint", 3}};
  if (kind == "rerun") return rerun_minutes(inc);
  if (kind == "bisect") return rerun_minutes(inc) + 5;
  auto it = kCost.find(kind);
  return it == kCost.end() ? 0 : it->second;
}

std::vector<PathStep> fastest_path(const Incident& inc) {
  const Expect& e = inc.plan.scenario.expect;
  std::vector<int> want = e.culprit.value_or(std::vector<int>{});
  std::sort(want.begin(), want.end());
  const std::string who = rank_list(want);
  const std::optional<Cause> cause = cause_by_name(e.cause.value_or("unknown"));
  const int gpn = inc.plan.scenario.fleet.gpus_per_node;
  std::vector<PathStep> path = {hang_or_slow(inc, who)};
  using S = IsolationStep;
  switch (cause.value_or(Cause::kUnknown)) {
    case Cause::kRankCrashed:
    case Cause::kNetworkError:
      if (!path[0].isolates) path.push_back(step(inc, S::kWatchdog, "logs " + who, {line_with(render_logs(inc, want.empty() ? -1 : want[0]), {"[rank" + who + "]"}, true)}, true, "logs RANK"));
      break;
    case Cause::kExtraCollective:
    case Cause::kCpuBlocked:
    case Cause::kRanksAbsent:
      path.push_back(step(inc, S::kStacks, "py-spy dump all", pyspy_facts(render_py_spy(inc, -1), who), true));
      break;
    case Cause::kMissingCollective:
    case Cause::kMismatchedCollective:
      path.push_back(step(inc, S::kFlightRecorder, "fr dump", fr_row_facts(render_fr_dump(inc), who), true));
      break;
    case Cause::kRankStalled:
      path.push_back(step(inc, S::kUtilization, "nvidia-smi", smi_facts(inc, want.empty() ? 0 : want[0]), true));
      if (!want.empty()) {
        std::string out = render_py_spy(inc, want[0]);
        path.push_back(step(inc, S::kStacks, "py-spy dump " + std::to_string(want[0]),
                            {line_with(out, {"(train.py:"})}, false, "py-spy dump RANK"));
      }
      break;
    case Cause::kStraggler:
    case Cause::kRotatingStraggler:
    case Cause::kSlowLink:
    case Cause::kNvlinkDegraded: {
      const std::string fr = render_fr_dump(inc);
      const bool rotating = cause == Cause::kRotatingStraggler;
      path.push_back(step(inc, S::kFlightRecorder, "fr dump", timing_facts(fr, who, *cause), !want.empty() || rotating));
      if (cause == Cause::kNvlinkDegraded && !want.empty()) {
        const std::string node = std::to_string(want[0] / gpn);
        path.push_back(step(inc, S::kHardware, "nccl-tests " + node, nccl_tests_facts(render_nccl_tests(inc, want[0] / gpn)),
                            true, "nccl-tests NODE"));
      } else if (cause == Cause::kSlowLink && want.empty() && inc.plan.scenario.fleet.nodes >= 2) {
        path.push_back(step(inc, S::kHardware, "nccl-tests 0 1", nccl_tests_facts(render_nccl_tests(inc, 0, 1)), true,
                            "nccl-tests NODE OTHER_NODE"));
      }
      break;
    }
    default: path.push_back(step(inc, S::kNcclView, "ncclras", {}, false)); break;
  }
  return path;
}

std::string blocking_op_lesson(const Incident& inc) {
  const Plan& plan = inc.plan;
  const std::optional<Duration> wd = plan.scenario.job.watchdog;
  diagnose::BlockedOp b;
  b.watchdog_off = !wd;
  if (wd) b.watchdog_s = wd->to_seconds();
  const auto place = [&](const OpSource& src) {
    b.name = src.name;
    b.site = "train.py:" + std::to_string(src.loc.line);
    b.when = src.when.empty() ? "" : src.when_else ? "not (" + src.when + ")" : src.when;
  };
  const auto lesson = [&] { return "What blocked: " + diagnose::blocked_text(b) + "\n"; };
  std::string next_wait;
  for (const PlanOp& op : plan.ops) {
    if (op.kind == OpKind::kStoreBarrier || op.kind == OpKind::kBarrier) next_wait = plan.sources[op.source].name;
  }
  for (size_t r = 0; r < inc.ranks.size(); ++r) {
    const RankView& v = inc.ranks[r];
    if (!v.stalled) continue;
    if (v.stall_op >= 0) {
      place(plan.sources[plan.ops[static_cast<size_t>(v.stall_op)].source]);
    } else {
      b.name = v.stall_where;
    }
    b.kind = diagnose::BlockedOp::Kind::kNeverReturned;
    b.rank = static_cast<int>(r);
    b.step = v.stall_step;
    b.store_barrier = inc.result.outcome == Outcome::kDeadlock;
    if (b.store_barrier) b.waiting_in = next_wait;
    return lesson();
  }
  // A desync: the culprit is in an op under a `when` the others do not take.
  const std::string cause = plan.scenario.expect.cause.value_or("");
  const std::vector<int> culprit = plan.scenario.expect.culprit.value_or(std::vector<int>{});
  if ((cause == "extra_collective" || cause == "mismatched_collective") && culprit.size() == 1) {
    int64_t step = 0;
    const int op = cpu_op_of(inc, culprit[0], &step);
    if (op >= 0 && !plan.sources[plan.ops[static_cast<size_t>(op)].source].when.empty()) {
      const PlanOp& o = plan.ops[static_cast<size_t>(op)];
      place(plan.sources[o.source]);
      b.kind = diagnose::BlockedOp::Kind::kRankOnlySync;
      b.rank = culprit[0];
      b.step = step;
      b.sync = is_collective(o.kind) || o.kind == OpKind::kLog || o.kind == OpKind::kBarrier;
      return lesson();
    }
  }
  for (const PlanOp& op : plan.ops) {
    if (op.kind != OpKind::kCpu || !wd || op.time < *wd) continue;
    place(plan.sources[op.source]);
    b.kind = diagnose::BlockedOp::Kind::kOutlastsWatchdog;
    b.length_s = op.time.to_seconds();
    b.waiting_in = next_wait;
    return lesson();
  }
  return "";
}

}  // namespace fleetsim::drill
