// The drill's `fr dump`: every rank's flight-recorder dump as pg_status, newest
// collective and newest p2p entry per group (identical rows coalesced), and, with
// timing on, a summary per communicator of the collective's own time and of who
// arrived last, computed from the dumps' entries as a script over them would.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/drill/drill_incident.h"

namespace fleetsim::drill {
namespace {

std::string entry_text(const diagnose::FrEntry& e) {
  return "seq " + std::to_string(e.collective_seq_id) + " " + e.profiling_name() + " in " + e.input_sizes() + " " +
         e.input_dtypes() + " " + e.state() + (e.op_name().empty() ? "" : " (" + e.op_name() + ")");
}

// One rank's row: each group's pg_status, newest collective and newest p2p entry
// (p2p names carry group ranks, "nccl:send 0->1", as PyTorch writes them). Groups
// are named by their kind (default_pg, tp, dp, pp), in that order: each instance has
// its own global name, and rows that differ only in which instance coalesce.
std::string fr_row(const diagnose::FrDump& d) {
  static const std::vector<std::string> kKindOrder = {"default_pg", "tp", "dp", "pp"};
  std::vector<std::pair<std::pair<size_t, std::string>, std::string>> lines;  // (kind order, desc) -> text
  for (const auto& [pg, st] : d.status) {
    const diagnose::FrEntry* last = nullptr;
    const diagnose::FrEntry* last_p2p = nullptr;
    for (const auto& e : d.entries) {
      if (e.pg_name() == pg) (e.is_p2p ? last_p2p : last) = &e;
    }
    const auto g = d.groups.find(pg);
    const std::string desc = g == d.groups.end() || g->second.desc.empty() ? "pg " + pg : g->second.desc;
    std::string text = "  " + desc + ": enqueued " + std::to_string(st.last_enqueued) + ", completed " +
                       std::to_string(st.last_completed) + (last ? "; newest: " + entry_text(*last) : "") + "\n";
    if (last_p2p) {
      const diagnose::FrEntry& e = *last_p2p;
      text += "    newest p2p: p2p_seq " + std::to_string(e.p2p_seq_id) + " " + e.profiling_name() + " in " +
              e.input_sizes() + " " + e.input_dtypes() + " " + e.state() +
              (e.op_name().empty() ? "" : " (" + e.op_name() + ")") +
              "\n";
    }
    const size_t kind = static_cast<size_t>(
        std::find(kKindOrder.begin(), kKindOrder.end(), desc) - kKindOrder.begin());
    lines.push_back({{kind, desc}, text});
  }
  std::sort(lines.begin(), lines.end());
  std::string row;
  for (const auto& [key, text] : lines) row += text;
  return row;
}

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f ms", v);
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A collective's durations at one sequence number on one communicator: (ms, rank).
using Arrivals = std::vector<std::pair<double, int>>;
using Comms = std::map<std::vector<int>, std::map<int64_t, Arrivals>>;  // communicator's ranks -> seq -> arrivals

// One group's lines: the communicators whose own time stands out (or that it is
// alike on all), and who came last where one rank clearly did.
std::string pg_timing(const std::string& label, const Comms& comms) {
  std::vector<std::pair<double, std::vector<int>>> own;  // median fastest duration per communicator
  std::map<int, int> last_count;
  std::map<int, int> clear_in_comm;  // per rank: its communicator's clear sequence numbers
  int clear = 0;
  for (const auto& [members, by_seq] : comms) {
    std::vector<double> fastest;
    int comm_clear = 0;
    for (const auto& [seq, v] : by_seq) {
      if (v.size() != members.size()) continue;
      const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
      fastest.push_back(lo->first);
      if (hi->first > 1.5 * lo->first && hi->first - lo->first > 1.0) {
        ++comm_clear;
        ++last_count[lo->second];
      }
    }
    for (int r : members) clear_in_comm[r] = comm_clear;
    clear += comm_clear;
    if (!fastest.empty()) own.push_back({median(fastest), members});
  }
  std::vector<double> all;
  for (const auto& o : own) all.push_back(o.first);
  const double typical = median(all);
  std::string out;
  char buf[160];
  for (const auto& [t, members] : own) {
    if (own.size() < 2 || t <= 1.5 * typical) continue;
    std::snprintf(buf, sizeof buf, ", %.1fx the median of its %zu communicators (", t / typical, own.size());
    out += "  " + label + " communicator of rank " + rank_list(members) + ": the collective's own time " + ms(t) + buf +
           ms(typical) + ")\n";
  }
  if (out.empty() && !own.empty()) {
    const auto [lo, hi] = std::minmax_element(all.begin(), all.end());
    out = "  " + label + ": the collective's own time alike on " +
          (own.size() == 1 ? std::string("its communicator") : "all " + std::to_string(own.size()) + " communicators") +
          " (" + (*hi - *lo < 0.005 ? ms(*lo) : ms(*lo).substr(0, ms(*lo).size() - 3) + "-" + ms(*hi)) + ")\n";
  }
  if (clear == 0) return out;
  std::vector<int> often;
  int most = 0;
  for (const auto& [r, c] : last_count) {
    most = std::max(most, c);
    if (2 * c > clear_in_comm[r]) often.push_back(r);
  }
  if (!often.empty())
    return out + "  " + label + ": came last (the shortest duration) at more than half of their communicator's " +
           "clear sequence numbers: rank " + rank_list(often) + "\n";
  return out + "  " + label + ": the rank that came last changes: " + std::to_string(last_count.size()) +
         " different ranks over " + std::to_string(clear) + " sequence numbers, none more than " +
         std::to_string(most) + " times\n";
}

// With timing on (entries carry duration_ms), per group and communicator over the
// dumps' rings: the collective's own time (the duration on the rank that arrived
// last, which waited for no one), and which rank arrived last (the shortest
// duration) where one clearly did.
std::string fr_timing(const Incident& inc) {
  // By the groups' kind (desc): each instance has its own global name, and an
  // instance stands out only against the other instances of its kind.
  std::map<std::string, Comms> seqs;
  for (const auto& [rank, d] : inc.record.dumps) {
    for (const auto& e : d.entries) {
      if (e.is_p2p || !e.duration_ms()) continue;
      const auto g = d.groups.find(e.pg_name());
      if (g == d.groups.end() || g->second.ranks.size() < 2) continue;
      const std::string kind = g->second.desc.empty() ? "pg " + e.pg_name() : g->second.desc;
      seqs[kind][g->second.ranks][e.collective_seq_id].push_back({*e.duration_ms(), rank});
    }
  }
  if (seqs.empty()) return "";
  std::string out = "timing on (duration_ms), over each communicator's sequence numbers in the dumps:\n";
  for (const auto& [kind, comms] : seqs) out += pg_timing(kind, comms);
  return out;
}

}  // namespace

std::string render_fr_dump(const Incident& inc) {
  const auto& dumps = inc.record.dumps;
  std::string out = "$ echo 1 > $TORCH_NCCL_DEBUG_INFO_PIPE_FILE<rank>.pipe on every rank; collected " +
                    std::to_string(dumps.size()) + " of " + std::to_string(inc.plan.ranks) + " dumps\n";
  std::vector<int> missing;
  for (int r = 0; r < inc.plan.ranks; ++r) {
    if (!dumps.count(r)) missing.push_back(r);
  }
  if (!missing.empty()) out += "no dump from rank " + rank_list(missing) + "\n";
  // Per rank: each group's pg_status, its newest entry and newest p2p entry;
  // identical rows coalesce.
  std::map<std::string, std::vector<int>> rows;
  std::vector<std::string> order;
  for (const auto& [rank, d] : dumps) {
    const std::string row = fr_row(d);
    if (!rows.count(row)) order.push_back(row);
    rows[row].push_back(rank);
  }
  for (const std::string& row : order) out += "rank " + rank_list(rows[row]) + ":\n" + row;
  // Timing summarizes a slow run; in a hang the tail that never completed tells more.
  if (inc.result.outcome != Outcome::kCompleted) return out;
  return out + fr_timing(inc);
}

}  // namespace fleetsim::drill
