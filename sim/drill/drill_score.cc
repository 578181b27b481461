// The drill's answer and its score: the answer grammar (ranks, a node, a parallel
// group such as a ring, or `-` for no single culprit, then a cause from the cause
// table), parsed without charging the clock, and the score with partial credit,
// each part explained in one line.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "fleetsim/cause.h"
#include "sim/drill/drill_incident.h"

namespace fleetsim::drill {
namespace {

// Causes that read alike at first: a cause of the right family earns partial credit.
enum class Family { kDesync, kStopped, kSlow, kOther };

Family family_of(std::string_view cause) {
  for (std::string_view c : {"extra_collective", "missing_collective", "mismatched_collective"})
    if (cause == c) return Family::kDesync;
  for (std::string_view c : {"rank_stalled", "rank_crashed", "network_error", "ranks_absent", "cpu_blocked"})
    if (cause == c) return Family::kStopped;
  for (std::string_view c : {"straggler", "rotating_straggler", "slow_link", "nvlink_degraded"})
    if (cause == c) return Family::kSlow;
  return Family::kOther;
}

const char* family_name(Family f) {
  switch (f) {
    case Family::kDesync: return "a desync (ranks disagree on the collectives)";
    case Family::kStopped: return "a rank that stopped";
    case Family::kSlow: return "a slow run";
    case Family::kOther: break;
  }
  return "";
}

constexpr int kFamilyPoints = 20;

bool answerable(std::string_view cause) { return cause != "none" && cause != "unknown" && cause_by_name(cause); }

std::string cause_list() {
  std::string out;
  for (const CauseSpec& c : kCauses)
    if (answerable(c.name)) out += std::string(out.empty() ? "" : " ") + c.name;
  return out;
}

std::optional<int> to_int(const std::string& s) {
  if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoi(s);
}

// "5", "3,11,19,27", "12-15": every rank in range, or an error.
std::string parse_rank_list(const std::string& text, int ranks, std::vector<int>* out) {
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t dash = item.find('-');
    const auto lo = to_int(item.substr(0, dash));
    const auto hi = dash == std::string::npos ? lo : to_int(item.substr(dash + 1));
    if (!lo || !hi || *hi < *lo) return "`" + item + "` is not a rank or a range of ranks (5, 3,11 or 12-15)";
    if (*hi >= ranks) return "no rank " + std::to_string(*hi) + " in this job (ranks 0-" + std::to_string(ranks - 1) + ")";
    for (int r = *lo; r <= *hi; ++r) out->push_back(r);
  }
  if (out->empty()) return "no rank named";
  return "";
}

}  // namespace

std::string answer_help() {
  return "  answer WHO CAUSE          ends the drill (0 min). WHO is who is to blame:\n"
         "                              5  3,11,19  12-15      ranks\n"
         "                              node 1                 every GPU of node 1\n"
         "                              tp 5  dp 5  pp 5       the tensor-, data- or pipeline-parallel group\n"
         "                                                     holding rank 5 (a dp group is a ring of the job)\n"
         "                              -                      no rank is to blame: the cause is everywhere or\n"
         "                                                     moves from rank to rank (`answer CAUSE` means the same)\n"
         "                            When a fault sits in something the ranks share (a node, a ring), name that.\n"
         "causes: " + cause_list() + "\n"
         "scoring: 50 for who and 50 for the cause; when both are right, minus a point per minute past the\n"
         "  fastest isolation path. Partial credit: naming some of the ranks to blame earns their share of the 50\n"
         "  (ranks in common over ranks named or to blame); a cause of the right family (a desync, a rank that\n"
         "  stopped, a slow run) earns 20. A malformed answer or command costs nothing: it says why; try again.\n";
}

std::string parse_answer(const Plan& plan, const std::vector<std::string>& words, Answer* out) {
  *out = Answer{};
  const std::string usage = "answer WHO CAUSE, e.g. `answer 5 CAUSE`, `answer node 1 CAUSE`, `answer dp 5 CAUSE`, "
                            "`answer - CAUSE` (type help)";
  if (words.empty()) return "answer needs who and a cause: " + usage;
  size_t used = 0;
  const std::string& w0 = words[0];
  if (words.size() == 1) {
    out->who = "-";
    used = 0;
  } else if (w0 == "-" || w0 == "none" || w0 == "nobody") {
    out->who = "-";
    used = 1;
  } else if (w0 == "node" || w0 == "tp" || w0 == "dp" || w0 == "pp") {
    const auto n = words.size() > 2 ? to_int(words[1]) : std::nullopt;
    if (!n) return "`" + w0 + "` takes a number and then a cause: " + usage;
    out->who = w0 + " " + words[1];
    used = 2;
    if (w0 == "node") {
      const int gpn = plan.scenario.fleet.gpus_per_node;
      if (*n >= plan.scenario.fleet.nodes)
        return "no node " + words[1] + " in this job (nodes 0-" + std::to_string(plan.scenario.fleet.nodes - 1) + ")";
      for (int l = 0; l < gpn; ++l) out->ranks.push_back(*n * gpn + l);
    } else {
      const GroupKind g = w0 == "tp" ? GroupKind::kTp : w0 == "dp" ? GroupKind::kDp : GroupKind::kPp;
      if (*n >= plan.ranks) return "no rank " + words[1] + " in this job (ranks 0-" + std::to_string(plan.ranks - 1) + ")";
      if (plan.group_size(g) <= 1 && g != GroupKind::kDp)
        return "this job has no " + w0 + " group (its size is 1); name the ranks instead";
      const int inst = plan.group_instance(g, *n);
      for (int i = 0; i < plan.group_size(g); ++i) out->ranks.push_back(plan.group_member(g, inst, i));
    }
  } else {
    out->who = w0;
    used = 1;
    if (std::string e = parse_rank_list(w0, plan.ranks, &out->ranks); !e.empty()) return e + ": " + usage;
  }
  if (words.size() != used + 1) return "answer takes who, then one cause: " + usage;
  out->cause = words[used];
  if (!answerable(out->cause)) return "`" + out->cause + "` is not a cause; the causes: " + cause_list();
  std::sort(out->ranks.begin(), out->ranks.end());
  out->ranks.erase(std::unique(out->ranks.begin(), out->ranks.end()), out->ranks.end());
  return "";
}

Scored score_answer(const Incident& inc, const Answer& a, int minutes, int fastest_minutes) {
  const Expect& e = inc.plan.scenario.expect;
  std::vector<int> want = e.culprit.value_or(std::vector<int>{});
  std::sort(want.begin(), want.end());
  const std::string want_cause = e.cause.value_or("unknown");
  Scored s;
  std::vector<int> common;
  std::set_intersection(a.ranks.begin(), a.ranks.end(), want.begin(), want.end(), std::back_inserter(common));
  const size_t either = a.ranks.size() + want.size() - common.size();
  const std::string named = a.ranks.empty() ? "no rank" : "rank " + rank_list(a.ranks);
  if (a.ranks == want) {
    s.who_points = 50;
    s.lines.push_back("who: correct (" + named + "): 50/50");
  } else if (want.empty()) {
    s.lines.push_back("who: wrong: you named " + named + ", but no rank is to blame here: 0/50");
  } else if (a.ranks.empty()) {
    s.lines.push_back("who: wrong: you named no rank, but ranks are to blame: 0/50");
  } else {
    s.who_points = static_cast<int>(std::lround(50.0 * static_cast<double>(common.size()) / static_cast<double>(either)));
    s.lines.push_back("who: " + std::string(common.empty() ? "wrong" : "partly right") + ": " +
                      std::to_string(common.size()) + " of the " + std::to_string(want.size()) +
                      " ranks to blame, and " + std::to_string(a.ranks.size() - common.size()) +
                      " not to blame: 50 x " + std::to_string(common.size()) + "/" + std::to_string(either) + " = " +
                      std::to_string(s.who_points) + "/50");
  }
  if (a.cause == want_cause) {
    s.cause_points = 50;
    s.lines.push_back("cause: correct: 50/50");
  } else if (family_of(a.cause) == family_of(want_cause) && family_of(a.cause) != Family::kOther) {
    s.cause_points = kFamilyPoints;
    s.lines.push_back("cause: close: the right family (" + std::string(family_name(family_of(a.cause))) +
                      "), not the cause: " + std::to_string(kFamilyPoints) + "/50");
  } else {
    s.lines.push_back("cause: wrong: 0/50");
  }
  if (s.who_points == 50 && s.cause_points == 50) {
    s.time_penalty = std::max(0, minutes - fastest_minutes);
    s.lines.push_back("time: " + std::to_string(minutes) + " min on the incident clock, the fastest isolation path " +
                      std::to_string(fastest_minutes) + " min: " +
                      (s.time_penalty ? "-" + std::to_string(s.time_penalty) : std::string("no deduction")));
  } else {
    s.lines.push_back("time: " + std::to_string(minutes) + " min on the incident clock (counted only when who and "
                      "cause are both right)");
  }
  s.total = std::max(0, s.who_points + s.cause_points - s.time_penalty);
  return s;
}

std::string model_answer(const Incident& inc) {
  const Plan& plan = inc.plan;
  std::vector<int> want = plan.scenario.expect.culprit.value_or(std::vector<int>{});
  std::sort(want.begin(), want.end());
  const std::string cause = plan.scenario.expect.cause.value_or("unknown");
  if (want.empty()) return "- " + cause;
  const int gpn = plan.scenario.fleet.gpus_per_node;
  if (static_cast<int>(want.size()) == gpn && want.front() % gpn == 0 && want.back() == want.front() + gpn - 1 &&
      gpn > 1)
    return "node " + std::to_string(want.front() / gpn) + " " + cause;
  for (const auto& [g, word] : {std::pair{GroupKind::kDp, "dp"}, {GroupKind::kTp, "tp"}, {GroupKind::kPp, "pp"}}) {
    if (want.size() < 2 || plan.group_size(g) != static_cast<int>(want.size())) continue;
    const int inst = plan.group_instance(g, want.front());
    std::vector<int> members;
    for (int i = 0; i < plan.group_size(g); ++i) members.push_back(plan.group_member(g, inst, i));
    std::sort(members.begin(), members.end());
    if (members == want) return std::string(word) + " " + std::to_string(want.front()) + " " + cause;
  }
  std::string list;
  for (size_t i = 0; i < want.size();) {
    size_t j = i;
    while (j + 1 < want.size() && want[j + 1] == want[j] + 1) ++j;
    list += (list.empty() ? "" : ",") + std::to_string(want[i]) + (j > i ? "-" + std::to_string(want[j]) : "");
    i = j + 1;
  }
  return list + " " + cause;
}

}  // namespace fleetsim::drill
