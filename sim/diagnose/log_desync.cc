// A desync named from watchdog records alone. Within one process group every rank
// times out at its oldest unfinished work; ranks that stand at different SeqNums, or
// at one SeqNum with a different OpType or size, did not issue the same collectives.
// The side that differs from the rest is the culprit: ahead of the others it issued
// collectives they did not (extra), behind them it lacks what they finished
// (missing), level with them it issued a different one (mismatched). The group's
// first disagreement, its lowest SeqNum, is where it happened.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

#include "sim/diagnose/fr_analyzer.h"
#include "sim/diagnose/signals.h"
#include "sim/io/units.h"

namespace fleetsim::diagnose {
namespace {

std::string work_text(const WatchdogLine& w) {
  std::string t = "SeqNum=" + std::to_string(w.seq) + " " + w.op_type;
  if (w.numel_in >= 0) t += " NumelIn=" + std::to_string(w.numel_in);
  if (w.numel_out >= 0 && w.numel_out != w.numel_in) t += " NumelOut=" + std::to_string(w.numel_out);
  return t;
}

std::string who(const std::vector<int>& ranks) {
  return ranks.size() == 1 ? "rank " + std::to_string(ranks[0]) : "ranks " + format_ranks(ranks);
}

using Lane = std::map<int, const WatchdogLine*>;  // rank -> its oldest timed-out work

// Splits the group in two, the culprits being the smaller side; on a tie the side
// holding the lowest rank (rank-conditional code is nearly always `if rank == 0`).
void split(std::vector<int> a, std::vector<int> b, LogDesync& d, bool* a_is_culprit) {
  d.tie = a.size() == b.size();
  *a_is_culprit = a.size() < b.size() || (d.tie && a.front() < b.front());
  d.culprits = *a_is_culprit ? a : b;
  d.others = *a_is_culprit ? b : a;
}

std::optional<LogDesync> group_desync(const std::string& pg, const Lane& at) {
  using Key = std::tuple<int64_t, std::string, int64_t, int64_t>;
  std::map<Key, std::vector<int>> classes;
  int64_t low = INT64_MAX, high = -1;
  for (const auto& [r, w] : at) {
    classes[{w->seq, w->op_type, w->numel_in, w->numel_out}].push_back(r);
    low = std::min(low, w->seq);
    high = std::max(high, w->seq);
  }
  if (classes.size() < 2) return std::nullopt;
  LogDesync d;
  d.pg = pg;
  d.seq = low;
  for (const auto& [r, w] : at) {
    if (d.pg_desc.empty()) d.pg_desc = w->pg_desc;
  }
  for (const auto& [key, ranks] : classes) d.facts.push_back(who(ranks) + " at " + work_text(*at.at(ranks[0])));
  if (low == high) {
    // Level: the largest class is what the group runs; every other class differs.
    auto largest = classes.begin();
    for (auto it = classes.begin(); it != classes.end(); ++it) {
      if (it->second.size() > largest->second.size()) largest = it;
    }
    std::vector<int> rest;
    for (const auto& [key, ranks] : classes) {
      if (&ranks != &largest->second) rest.insert(rest.end(), ranks.begin(), ranks.end());
    }
    std::sort(rest.begin(), rest.end());
    bool rest_is_culprit = true;
    split(rest, largest->second, d, &rest_is_culprit);
    d.cause = Cause::kMismatchedCollective;
    const WatchdogLine& c = *at.at(d.culprits[0]);
    const WatchdogLine& o = *at.at(d.others[0]);
    d.op = c.op_type;
    d.found = work_text(c);
    d.expected = work_text(o);
    d.implies = who(d.culprits) + " issued " + work_text(c) + " where " + who(d.others) + " issued " + work_text(o) +
                ": the collectives at SeqNum " + std::to_string(low) + " differ -> mismatched_collective";
    return d;
  }
  std::vector<int> behind, ahead;
  for (const auto& [r, w] : at) (w->seq == low ? behind : ahead).push_back(r);
  bool behind_is_culprit = true;
  split(behind, ahead, d, &behind_is_culprit);
  const WatchdogLine& c = *at.at(d.culprits[0]);
  const WatchdogLine& o = *at.at(d.others[0]);
  d.op = c.op_type;
  d.found = work_text(c);
  d.expected = work_text(o);
  if (behind_is_culprit) {
    d.cause = Cause::kMissingCollective;
    d.implies = who(d.culprits) + " stands at " + work_text(c) + " while " + who(d.others) + " finished SeqNum " +
                std::to_string(low) + " and waits at " + work_text(o) + ": " + who(d.culprits) +
                " lacks a collective the others issued -> missing_collective at SeqNum " + std::to_string(low);
  } else {
    d.cause = Cause::kExtraCollective;
    d.implies = who(d.culprits) + " ran " + std::to_string(c.seq - low) + " collective(s) past SeqNum " +
                std::to_string(low) + " (now at " + work_text(c) + ") while " + who(d.others) + " wait at " +
                work_text(o) + ": " + who(d.culprits) + " issued collectives the others did not -> "
                "extra_collective at SeqNum " + std::to_string(low);
  }
  return d;
}

// One side of a DETAIL mismatch report: "Rank A is running collective:
// CollectiveFingerPrint(SequenceNumber=S, OpType=X, TensorShape=[1], ..." at `at`.
std::optional<WatchdogLine> fingerprint_at(const std::string& s, size_t at) {
  const std::string kRank = "Rank ", kFp = " is running collective: CollectiveFingerPrint(";
  if (s.compare(at, kRank.size(), kRank) != 0) return std::nullopt;
  const size_t fp = s.find(kFp, at);
  if (fp == std::string::npos || fp - at > 16) return std::nullopt;
  WatchdogLine w;
  w.rank = parse_int<int>(s.substr(at + kRank.size(), fp - at - kRank.size())).value_or(-1);
  const size_t seq = s.find("SequenceNumber=", fp), op = s.find("OpType=", fp), shape = s.find("TensorShape=[", fp);
  if (w.rank < 0 || seq == std::string::npos || op == std::string::npos) return std::nullopt;
  const size_t seq_end = s.find_first_of(",)", seq);
  w.seq = parse_int<int64_t>(s.substr(seq + 15, seq_end - seq - 15)).value_or(-1);
  w.op_type = s.substr(op + 7, s.find_first_of(",)", op) - op - 7);
  if (shape != std::string::npos) {
    // The element count of the first tensor's shape, e.g. "[25]" or "[3, 4]".
    int64_t numel = 1;
    size_t i = shape + 13;
    for (; i < s.size() && s[i] != ']'; ++i) {
      if (s[i] == ',' || s[i] == ' ') continue;
      size_t end = i;
      while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
      const std::optional<int64_t> dim = parse_int<int64_t>(s.substr(i, end - i));
      if (!dim || *dim > (int64_t{1} << 40)) break;
      numel *= *dim;
      i = end - 1;
    }
    if (i < s.size() && s[i] == ']') w.numel_in = numel;
  }
  if (w.seq < 0) return std::nullopt;
  return w;
}

}  // namespace

std::optional<LogDesync> find_fingerprint_mismatch(const std::vector<std::string>& lines) {
  const std::string kMark = "Detected mismatch between collectives on ranks. ";
  for (const std::string& line : logical_lines(lines)) {
    const size_t at = line.find(kMark);
    if (at == std::string::npos) continue;
    const std::optional<WatchdogLine> a = fingerprint_at(line, at + kMark.size());
    const size_t but = line.find("but Rank ", at);
    const std::optional<WatchdogLine> b =
        but == std::string::npos ? std::nullopt : fingerprint_at(line, but + 4);
    if (!a || !b || a->rank == b->rank) continue;
    std::optional<LogDesync> d = find_log_desync({*a, *b});
    if (!d) continue;
    d->implies = "TORCH_DISTRIBUTED_DEBUG=DETAIL: " + d->implies;
    return d;
  }
  return std::nullopt;
}

std::optional<LogDesync> find_log_desync(const std::vector<WatchdogLine>& records) {
  // A record whose group the log does not name belongs to the only group it names.
  std::set<std::string> named;
  for (const WatchdogLine& w : records) {
    if (!w.pg.empty()) named.insert(w.pg);
  }
  const std::string unnamed = named.size() == 1 ? *named.begin() : std::string();
  std::map<std::string, Lane> groups;
  std::set<std::string> mixed;  // groups where one rank timed out at two works
  for (const WatchdogLine& w : records) {
    if (w.rank < 0 || w.seq < 0) continue;
    const std::string& pg = w.pg.empty() ? unnamed : w.pg;
    const WatchdogLine*& slot = groups[pg][w.rank];
    if (slot && slot->seq != w.seq) mixed.insert(pg);
    if (!slot || w.seq < slot->seq) slot = &w;
  }
  std::optional<LogDesync> best;
  for (const auto& [pg, lane] : groups) {
    // A watchdog reports one work per group; a rank at two works under one unknown
    // group is two groups the log does not name, which cannot be aligned.
    if (pg.empty() && mixed.count(pg)) continue;
    std::optional<LogDesync> d = group_desync(pg, lane);
    if (!d) continue;
    // A clear minority before a tie, then the group that disagrees earliest.
    if (!best || std::make_tuple(d->tie, d->seq) < std::make_tuple(best->tie, best->seq)) best = std::move(d);
  }
  return best;
}

}  // namespace fleetsim::diagnose
