// The drill's command loop: reads commands, charges each its minutes on the
// incident clock, prints the evidence, and on `answer` (or EOF: gave up) scores
// the time to root cause and shows the isolation order's path for the incident.
#include <algorithm>
#include <filesystem>
#include <istream>
#include <map>
#include <ostream>
#include <sstream>

#include "sim/drill/drill.h"
#include "sim/drill/drill_incident.h"
#include "sim/io/scenario_loader.h"
#include "sim/run/out_dir.h"

namespace fleetsim::drill {
namespace {

namespace fs = std::filesystem;

// One step of the fastest isolation path: the isolation-order step, the command,
// its cost, and whether it singles out the culprit.
struct PathStep {
  int order;
  const char* title;
  const char* command;
  bool isolates;
};

std::vector<PathStep> fastest_path(diagnose::Cause c) {
  using diagnose::Cause;
  switch (c) {
    case Cause::kExtraCollective:
      return {{1, "hang or slow?", "logs", false}, {2, "utilization", "nvidia-smi", false},
              {4, "py-spy every rank", "py-spy dump all", true}};
    case Cause::kMissingCollective:
    case Cause::kMismatchedCollective:
      return {{1, "hang or slow?", "logs", false}, {2, "utilization", "nvidia-smi", false},
              {5, "flight recorder", "fr dump", true}};
    case Cause::kRankStalled:
      return {{1, "hang or slow?", "logs", false}, {2, "utilization", "nvidia-smi", true},
              {4, "py-spy the odd rank", "py-spy dump RANK", false}};
    case Cause::kRankCrashed:
    case Cause::kNetworkError: return {{1, "hang or slow?", "logs", true}};
    case Cause::kRanksAbsent:
      return {{1, "hang or slow?", "logs", false}, {2, "utilization", "nvidia-smi", true}};
    case Cause::kCpuBlocked:
      return {{1, "hang or slow?", "logs", false}, {2, "utilization", "nvidia-smi", false},
              {4, "py-spy every rank", "py-spy dump all", true}};
    case Cause::kStraggler:
    case Cause::kSlowLink:
    case Cause::kRotatingStraggler:
      return {{1, "hang or slow?", "steps", false}, {2, "utilization", "nvidia-smi", false},
              {5, "flight recorder timing", "fr dump", true}, {8, "hardware", "bisect", false}};
    case Cause::kNvlinkDegraded:  // a single node's all_reduce_perf shows it; node pairs hide it in the NIC time
      return {{1, "hang or slow?", "steps", false}, {2, "utilization", "nvidia-smi", false},
              {8, "one node alone", "nccl-tests NODE", true}};
    default: return {{1, "hang or slow?", "logs", false}, {6, "NCCL", "ncclras", false}};
  }
}

class Session {
 public:
  Session(const Incident& inc, const DrillOptions& opt, std::ostream& out) : inc_(inc), opt_(opt), out_(out) {}

  // Returns false when the drill is over.
  bool handle(const std::string& line);
  void gave_up();

 private:
  int cost_of(const std::string& cmd) const;
  void charge(const std::string& cmd, int minutes);
  void answer(std::istringstream& args);
  void score(const std::vector<int>& ranks, const std::string& cause, bool gave_up);
  void show_path();
  std::string hint() const;
  std::string evidence_for(int order) const;

  const Incident& inc_;
  const DrillOptions& opt_;
  std::ostream& out_;
  int minutes_ = 0;
  int ras_queries_ = 0;
  std::vector<std::string> used_;
};

std::string clock_text(int minutes) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02d:%02d", minutes / 60, minutes % 60);
  return buf;
}

std::string help_text() {
  return "commands (minutes on the incident clock):\n"
         "  page                      the page again (0)\n"
         "  logs [RANK]               tail of the job log, or one rank's lines (2)\n"
         "  steps                     the step log: step times (1)\n"
         "  nvidia-smi [NODE]         GPU table on every node, or one (1)\n"
         "  py-spy dump RANK|all      Python stacks of one rank (2) or every rank, coalesced (5)\n"
         "  fr dump                   flight-recorder dumps: pg_status and newest entry per rank (5)\n"
         "  ncclras                   NCCL RAS status: op counts per communicator (1)\n"
         "  rerun NCCL_DEBUG=INFO     rerun the job with COLL logging to the fault (10 + time to reach it)\n"
         "  bisect                    rerun as two half jobs (15 + time to reach the fault)\n"
         "  nccl-tests NODE [NODE2]   all_reduce_perf on one node's GPUs, or across a node pair (10)\n"
         "  hint                      the next isolation-order step (3)\n"
         "  answer RANK[,RANK..] CAUSE  e.g. `answer 5 rank_stalled`; ranks may be ranges (12-15)\n"
         "causes: extra_collective missing_collective mismatched_collective rank_stalled rank_crashed\n"
         "        straggler rotating_straggler slow_link network_error ranks_absent cpu_blocked\n";
}

std::vector<int> parse_ranks(const std::string& text, bool* ok) {
  std::vector<int> out;
  std::istringstream in(text);
  *ok = !text.empty();
  for (std::string item; std::getline(in, item, ',');) {
    const size_t dash = item.find('-');
    try {
      const int lo = std::stoi(item.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(item.substr(dash + 1));
      for (int r = lo; r <= hi && r - lo < 100000; ++r) out.push_back(r);
    } catch (...) {
      *ok = false;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int int_arg(std::istringstream& args, int fallback) {
  std::string s;
  if (!(args >> s)) return fallback;
  while (!s.empty() && !std::isdigit(static_cast<unsigned char>(s[0]))) s.erase(0, 1);
  try {
    return s.empty() ? fallback : std::stoi(s);
  } catch (...) {
    return fallback;
  }
}

}  // namespace

int Session::cost_of(const std::string& cmd) const {
  static const std::map<std::string, int> kCost = {
      {"logs", 2}, {"steps", 1}, {"nvidia-smi", 1}, {"py-spy dump RANK", 2}, {"py-spy dump all", 5},
      {"fr dump", 5}, {"ncclras", 1}, {"nccl-tests", 10}, {"nccl-tests NODE", 10}, {"hint", 3}};
  if (cmd == "rerun") return rerun_minutes(inc_);
  if (cmd == "bisect") return rerun_minutes(inc_) + 5;
  auto it = kCost.find(cmd);
  return it == kCost.end() ? 0 : it->second;
}

void Session::charge(const std::string& cmd, int minutes) {
  minutes_ += minutes;
  used_.push_back(cmd);
  out_ << "[" << cmd << ": +" << minutes << " min, incident clock " << clock_text(minutes_) << "]\n";
}

bool Session::handle(const std::string& raw) {
  const std::string line = raw.substr(0, raw.find('#'));
  std::istringstream args(line);
  std::string cmd;
  if (!(args >> cmd)) return true;
  if (opt_.echo) out_ << "$ " << line << "\n";
  if (cmd == "help") {
    out_ << help_text();
  } else if (cmd == "page") {
    out_ << render_page(inc_);
  } else if (cmd == "logs") {
    charge("logs", cost_of("logs"));
    out_ << render_logs(inc_, int_arg(args, -1));
  } else if (cmd == "steps") {
    charge("steps", cost_of("steps"));
    out_ << render_steps(inc_);
  } else if (cmd == "nvidia-smi") {
    charge("nvidia-smi", cost_of("nvidia-smi"));
    out_ << render_nvidia_smi(inc_, int_arg(args, -1));
  } else if (cmd == "py-spy") {
    std::string sub, who;
    args >> sub >> who;
    if (sub != "dump") who = sub;
    const bool all = who == "all" || who.empty();
    charge(all ? "py-spy dump all" : "py-spy dump RANK", cost_of(all ? "py-spy dump all" : "py-spy dump RANK"));
    bool ok = true;
    const std::vector<int> r = all ? std::vector<int>{} : parse_ranks(who, &ok);
    out_ << render_py_spy(inc_, all || !ok || r.empty() ? -1 : r[0]);
  } else if (cmd == "fr") {
    charge("fr dump", cost_of("fr dump"));
    out_ << render_fr_dump(inc_);
  } else if (cmd == "ncclras") {
    charge("ncclras", cost_of("ncclras"));
    out_ << render_ncclras(inc_, ++ras_queries_);
  } else if (cmd == "rerun") {
    charge("rerun", cost_of("rerun"));
    out_ << render_nccl_debug(inc_);
  } else if (cmd == "bisect" || cmd == "halve") {
    charge("bisect", cost_of("bisect"));
    out_ << render_bisect(inc_);
  } else if (cmd == "nccl-tests") {
    charge("nccl-tests", cost_of("nccl-tests"));
    const int a = int_arg(args, 0);
    out_ << render_nccl_tests(inc_, a, int_arg(args, -1));
  } else if (cmd == "hint") {
    charge("hint", cost_of("hint"));
    out_ << hint();
  } else if (cmd == "answer") {
    answer(args);
    return false;
  } else if (cmd == "quit" || cmd == "exit") {
    gave_up();
    return false;
  } else {
    out_ << "unknown command `" << cmd << "`; type help\n";
  }
  return true;
}

std::string Session::hint() const {
  for (const char* step : {"logs", "nvidia-smi", "py-spy dump all", "fr dump", "ncclras", "bisect"}) {
    if (std::find(used_.begin(), used_.end(), step) == used_.end()) {
      return std::string("hint: the isolation order's next step you have not taken: `") + step + "`\n";
    }
  }
  return "hint: you have the evidence; compare the odd rank out across nvidia-smi, py-spy and the FR dump\n";
}

void Session::answer(std::istringstream& args) {
  std::string ranks, cause;
  args >> ranks >> cause;
  bool ok = true;
  const std::vector<int> r = parse_ranks(ranks, &ok);
  if (!ok || cause.empty()) {
    out_ << "answer needs RANK[,RANK..] CAUSE; counted as a wrong answer\n";
  }
  score(r, cause, false);
}

void Session::gave_up() { score({}, "", true); }

void Session::score(const std::vector<int>& ranks, const std::string& cause, bool gave_up) {
  const Expect& e = inc_.plan.scenario.expect;
  const std::vector<int> want_ranks = e.culprit.value_or(std::vector<int>{});
  const std::string want_cause = e.cause.value_or("unknown");
  out_ << "\n=== Score ===\n";
  if (gave_up) {
    out_ << "result: gave up after " << minutes_ << " min on the incident clock\n";
  } else {
    const bool rank_ok = ranks == want_ranks;
    const bool cause_ok = cause == want_cause;
    int fastest = 0;
    for (const PathStep& s : fastest_path(inc_.diagnosis.cause)) fastest += cost_of(s.command);
    const int points = std::max(0, (rank_ok ? 50 : 0) + (cause_ok ? 50 : 0) -
                                       (rank_ok && cause_ok ? std::max(0, minutes_ - fastest) : 0));
    out_ << "your answer: rank " << (ranks.empty() ? "?" : rank_list(ranks)) << ", " << (cause.empty() ? "?" : cause) << "\n";
    out_ << "rank: " << (rank_ok ? "correct" : "wrong") << "; cause: " << (cause_ok ? "correct" : "wrong") << "\n";
    out_ << "time to root cause: " << minutes_ << " min on the incident clock (fastest isolation path: " << fastest
         << " min)\n";
    out_ << "score: " << points << "/100\n";
  }
  out_ << "root cause: rank " << rank_list(want_ranks) << ", " << want_cause << " (scenario " << inc_.file << ")\n";
  show_path();
}

std::string Session::evidence_for(int order) const {
  const diagnose::Diagnosis& d = inc_.diagnosis;
  if (order == 4) {
    if (d.culprit_ranks.empty()) return "stacks alike on every rank";
    const std::string stack = py_spy_stack(inc_, d.culprit_ranks.front());
    const size_t at = stack.find("\n    ", stack.find("train.py") == std::string::npos ? 0 : stack.rfind("\n", stack.find("train.py")));
    const std::string frame = stack.substr(at + 5, stack.find('\n', at + 1) - at - 5);
    return "rank " + std::to_string(d.culprit_ranks.front()) + "'s stack differs: " + frame;
  }
  if (order == 8 && inc_.diagnosis.cause == diagnose::Cause::kNvlinkDegraded)
    return "all_reduce_perf on the culprit's node alone runs far below the other nodes: its NVLink";
  if (order == 8) return "the half holding the culprit's node reproduces; nccl-tests rules the links in or out";
  for (const diagnose::Evidence& ev : d.evidence) {
    if (ev.step == std::min(order, 5) && ev.text.rfind("no ", 0) != 0) return ev.text;
  }
  return "-";
}

void Session::show_path() {
  out_ << "\nisolation order for this incident (fastest path):\n";
  int total = 0;
  for (const PathStep& s : fastest_path(inc_.diagnosis.cause)) {
    const int cost = cost_of(s.command);
    total += cost;
    std::string text = evidence_for(s.order);
    if (text.size() > 150) text = text.substr(0, 147) + "...";
    char buf[96];
    std::snprintf(buf, sizeof buf, "  %d. %-22s %-17s %3d min  ", s.order, s.title, s.command, cost);
    out_ << buf << text << (s.isolates ? "   <- isolates it" : "") << "\n";
  }
  out_ << "  total " << total << " min. Your path: ";
  for (size_t i = 0; i < used_.size(); ++i) out_ << (i ? ", " : "") << used_[i];
  out_ << (used_.empty() ? "(none)" : "") << " = " << minutes_ << " min\n";
  out_ << "diagnose on the same evidence: " << diagnose::to_string(inc_.diagnosis.verdict) << ", "
       << diagnose::to_string(inc_.diagnosis.cause) << ", rank " << rank_list(inc_.diagnosis.culprit_ranks) << "\n";
}

std::vector<std::string> list_incidents(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file() || e.path().extension() != ".yaml") continue;
    Result<Scenario> s = load_scenario(e.path().string(), {});
    if (s && s->expect.cause && *s->expect.cause != "none") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

const std::string& pick_incident(const std::vector<std::string>& incidents, uint64_t seed) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull;  // SplitMix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return incidents[z % incidents.size()];
}

Result<int> run_drill(const DrillOptions& opt, std::istream& in, std::ostream& out) {
  const RemoveOnInterrupt guard(opt.work_dir);  // Ctrl-C during the drill leaves no folder
  Result<Incident> inc = build_incident(opt.scenario, opt.work_dir);
  if (!inc) {
    remove_run_dir(opt.work_dir);
    return inc.errors();
  }
  out << render_page(*inc) << "You are on call. Type `help` for the commands; `answer RANK CAUSE` when you know.\n";
  Session session(*inc, opt, out);
  bool going = true;
  while (going) {
    if (opt.prompt) out << "[" << inc->job_name << "]$ " << std::flush;
    std::string line;
    if (!std::getline(in, line)) {
      if (opt.prompt) out << "\n";
      session.gave_up();
      break;
    }
    going = session.handle(line);
  }
  remove_run_dir(opt.work_dir);
  return 0;
}

}  // namespace fleetsim::drill
