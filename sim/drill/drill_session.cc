// The drill's command loop: reads commands, charges each its minutes on the
// incident clock, prints the evidence, and on `answer` (or EOF: gave up) scores
// the time to root cause and shows the isolation order's path for the incident.
#include <algorithm>
#include <filesystem>
#include <istream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>

#include "sim/drill/drill.h"
#include "sim/drill/drill_incident.h"
#include "sim/io/scenario_loader.h"
#include "sim/run/out_dir.h"

namespace fleetsim::drill {
namespace {

namespace fs = std::filesystem;

class Session {
 public:
  Session(const Incident& inc, const DrillOptions& opt, std::ostream& out)
      : inc_(inc), opt_(opt), out_(out), path_(fastest_path(inc)) {
    for (const PathStep& s : path_) fastest_ += s.minutes;
  }

  // Returns false when the drill is over.
  bool handle(const std::string& line);
  void gave_up();

 private:
  void charge(const std::string& cmd, const std::string& kind);
  bool answer(const std::vector<std::string>& words);
  void closing();
  void show_path();
  std::string hint() const;
  void py_spy(std::vector<std::string> words);
  void nccl_tests(const std::vector<std::string>& words);
  // A rank or node argument: its value, or nullopt after saying what is wrong.
  std::optional<int> number_arg(const std::string& cmd, const std::string& word, int limit, const char* what);

  const Incident& inc_;
  const DrillOptions& opt_;
  std::ostream& out_;
  std::vector<PathStep> path_;
  int fastest_ = 0;
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
         "  fr dump                   flight-recorder dumps: pg_status, newest entries, timing (5)\n"
         "  ncclras                   NCCL RAS status: op counts per communicator (1)\n"
         "  rerun NCCL_DEBUG=INFO     rerun the job with COLL logging to the fault (10 + time to reach it)\n"
         "  bisect                    rerun as two half jobs (15 + time to reach the fault)\n"
         "  nccl-tests NODE [NODE2]   all_reduce_perf on one node's GPUs, or across a node pair (10)\n"
         "  hint                      the next isolation-order step you have not taken (3)\n" +
         answer_help();
}

std::vector<std::string> words_of(std::istringstream& args) {
  std::vector<std::string> out;
  for (std::string w; args >> w;) out.push_back(w);
  return out;
}

}  // namespace

std::optional<int> Session::number_arg(const std::string& cmd, const std::string& word, int limit, const char* what) {
  const bool digits = !word.empty() && word.size() < 9 && word.find_first_not_of("0123456789") == std::string::npos;
  if (digits && std::stoi(word) < limit) return std::stoi(word);
  out_ << cmd << ": " << (digits ? "no " + std::string(what) + " " + word + " in this job"
                                 : "`" + word + "` is not a " + what + " number")
       << " (" << what << "s 0-" << limit - 1 << "); nothing charged\n";
  return std::nullopt;
}

void Session::charge(const std::string& cmd, const std::string& kind) {
  const int minutes = command_minutes(inc_, kind);
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
  std::vector<std::string> w = words_of(args);
  const int nodes = inc_.plan.scenario.fleet.nodes;
  if (cmd == "help") {
    out_ << help_text();
  } else if (cmd == "page") {
    out_ << render_page(inc_);
  } else if (cmd == "logs" || cmd == "nvidia-smi") {
    std::optional<int> n = -1;
    if (!w.empty()) n = cmd == "logs" ? number_arg(cmd, w[0], inc_.plan.ranks, "rank") : number_arg(cmd, w[0], nodes, "node");
    if (!n) return true;
    charge(w.empty() ? cmd : cmd + " " + w[0], cmd);
    out_ << (cmd == "logs" ? render_logs(inc_, *n) : render_nvidia_smi(inc_, *n));
  } else if (cmd == "steps") {
    charge("steps", "steps");
    out_ << render_steps(inc_);
  } else if (cmd == "py-spy") {
    py_spy(w);
  } else if (cmd == "fr") {
    charge("fr dump", "fr dump");
    out_ << render_fr_dump(inc_);
  } else if (cmd == "ncclras") {
    charge("ncclras", "ncclras");
    out_ << render_ncclras(inc_, ++ras_queries_);
  } else if (cmd == "rerun") {
    charge("rerun", "rerun");
    out_ << render_nccl_debug(inc_);
  } else if (cmd == "bisect" || cmd == "halve") {
    charge("bisect", "bisect");
    out_ << render_bisect(inc_);
  } else if (cmd == "nccl-tests") {
    nccl_tests(w);
  } else if (cmd == "hint") {
    charge("hint", "hint");
    out_ << hint();
  } else if (cmd == "answer") {
    return answer(w);
  } else if (cmd == "quit" || cmd == "exit") {
    gave_up();
    return false;
  } else {
    out_ << "unknown command `" << cmd << "`; type help (nothing charged)\n";
  }
  return true;
}

void Session::py_spy(std::vector<std::string> w) {
  if (!w.empty() && w[0] == "dump") w.erase(w.begin());
  if (w.size() != 1) {
    out_ << "py-spy: which rank? `py-spy dump RANK` (2 min) or `py-spy dump all` (5 min); nothing charged\n";
    return;
  }
  if (w[0] == "all") {
    charge("py-spy dump all", "py-spy dump all");
    out_ << render_py_spy(inc_, -1);
    return;
  }
  const std::optional<int> r = number_arg("py-spy", w[0], inc_.plan.ranks, "rank");
  if (!r) return;
  charge("py-spy dump " + w[0], "py-spy dump RANK");
  out_ << render_py_spy(inc_, *r);
}

void Session::nccl_tests(const std::vector<std::string>& w) {
  const int nodes = inc_.plan.scenario.fleet.nodes;
  if (w.empty() || w.size() > 2) {
    out_ << "nccl-tests: which node? `nccl-tests NODE` or `nccl-tests NODE NODE2` (nodes 0-" << nodes - 1
         << "); nothing charged\n";
    return;
  }
  const std::optional<int> a = number_arg("nccl-tests", w[0], nodes, "node");
  if (!a) return;
  std::optional<int> b = -1;
  if (w.size() == 2 && !(b = number_arg("nccl-tests", w[1], nodes, "node"))) return;
  if (*b == *a) {
    out_ << "nccl-tests: a node pair needs two different nodes; nothing charged\n";
    return;
  }
  charge(w.size() == 2 ? "nccl-tests " + w[0] + " " + w[1] : "nccl-tests " + w[0], "nccl-tests");
  out_ << render_nccl_tests(inc_, *a, *b);
}

std::string Session::hint() const {
  for (const PathStep& s : path_) {
    if (std::find(used_.begin(), used_.end(), s.command) == used_.end()) {
      return "hint: isolation step " + std::to_string(isolation_step_number(s.step)) + ", " +
             std::string(isolation_step_name(s.step)) + ": `" + s.hint_command + "`\n";
    }
  }
  return "hint: you have the evidence the fastest path reads; compare the odd one out across what you gathered\n";
}

bool Session::answer(const std::vector<std::string>& words) {
  Answer a;
  if (const std::string err = parse_answer(inc_.plan, words, &a); !err.empty()) {
    out_ << err << "; nothing charged, try again\n";
    return true;
  }
  const Scored s = score_answer(inc_, a, minutes_, fastest_);
  out_ << "\n=== Score ===\n";
  out_ << "your answer: " << (a.ranks.empty() ? "no rank" : "rank " + rank_list(a.ranks))
       << (a.who != "-" && a.who.find(' ') != std::string::npos ? " (" + a.who + ")" : "") << ", " << a.cause << "\n";
  for (const std::string& l : s.lines) out_ << l << "\n";
  out_ << "score: " << s.total << "/100\n";
  closing();
  return false;
}

void Session::gave_up() {
  out_ << "\n=== Score ===\n";
  out_ << "result: gave up after " << minutes_ << " min on the incident clock\n";
  closing();
}

void Session::closing() {
  const Expect& e = inc_.plan.scenario.expect;
  const std::vector<int> want = e.culprit.value_or(std::vector<int>{});
  out_ << "root cause: " << (want.empty() ? "no single rank" : "rank " + rank_list(want)) << ", "
       << e.cause.value_or("unknown") << " (scenario " << inc_.file << "); answered as `answer " << model_answer(inc_)
       << "`\n";
  out_ << blocking_op_lesson(inc_);
  show_path();
}

void Session::show_path() {
  out_ << "\nisolation order for this incident (fastest path; each fact is quoted from what the command prints):\n";
  char buf[128];
  for (const PathStep& s : path_) {
    std::snprintf(buf, sizeof buf, "  %d. %-28s %-17s %3d min", isolation_step_number(s.step),
                  std::string(isolation_step_name(s.step)).c_str(), s.command.c_str(), s.minutes);
    out_ << buf << (s.isolates ? "   <- isolates it" : "") << "\n";
    for (std::string f : s.facts) {
      for (size_t at; (at = f.find('\n')) != std::string::npos;) f.replace(at, 1, " / ");
      out_ << "       " << f << "\n";
    }
  }
  out_ << "  total " << fastest_ << " min. Your path: ";
  for (size_t i = 0; i < used_.size(); ++i) out_ << (i ? ", " : "") << used_[i];
  out_ << (used_.empty() ? "(none)" : "") << " = " << minutes_ << " min\n";
  out_ << "diagnose on the same evidence: " << diagnose::to_string(inc_.diagnosis.verdict) << ", "
       << diagnose::to_string(inc_.diagnosis.cause) << ", "
       << (inc_.diagnosis.culprit_ranks.empty() ? "no rank" : "rank " + rank_list(inc_.diagnosis.culprit_ranks)) << "\n";
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
  out << render_page(*inc) << "You are on call. Type `help` for the commands; `answer WHO CAUSE` when you know.\n";
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
