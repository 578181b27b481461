// Timing evidence from flight-recorder entries of a slow (not hung) run: which rank
// arrives last at its collectives, and which group moves bytes far slower than its
// siblings. Bus bandwidth follows nccl-tests: busbw = algbw * 2(n-1)/n for all-reduce.
#include <algorithm>
#include <cmath>

#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose {
namespace {

// (group key) -> seq -> rank -> entry, completed collectives only.
using Aligned = std::map<std::string, std::map<int64_t, std::map<int, const FrEntry*>>>;

struct GroupInfo {
  std::string name;
  std::string desc;
  std::vector<int> members;
};

Aligned align_completed(const std::map<int, FrDump>& dumps, std::map<std::string, GroupInfo>* info) {
  Aligned out;
  for (const auto& [rank, dump] : dumps) {
    for (const FrEntry& e : dump.entries) {
      if (e.is_p2p || e.state != "completed" || e.collective_seq_id < 0) continue;
      const FrGroup* g = group_config(dump, e.pg_name);
      std::vector<int> members = g ? g->ranks : std::vector<int>{};
      const std::string key = e.pg_name + format_ranks(members);
      GroupInfo& gi = (*info)[key];
      gi.name = e.pg_name;
      gi.desc = e.pg_desc.empty() && g ? g->desc : e.pg_desc;
      gi.members = members;
      out[key][e.collective_seq_id][rank] = &e;
    }
  }
  return out;
}

double dtype_bytes(const std::string& dtypes) {
  if (dtypes.find("Double") != std::string::npos || dtypes.find("Long") != std::string::npos) return 8;
  if (dtypes.find("BFloat16") != std::string::npos || dtypes.find("Half") != std::string::npos) return 2;
  if (dtypes.find("Byte") != std::string::npos || dtypes.find("Char") != std::string::npos) return 1;
  return 4;
}

double bus_factor(const std::string& op, double n) {
  if (n < 2) return 1;
  if (op.find("all_reduce") != std::string::npos) return 2 * (n - 1) / n;
  if (op.find("all_gather") != std::string::npos || op.find("reduce_scatter") != std::string::npos) {
    return (n - 1) / n;
  }
  return 1;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

std::optional<LateArriver> find_late_arriver(const std::map<int, FrDump>& dumps) {
  std::map<std::string, GroupInfo> info;
  const Aligned aligned = align_completed(dumps, &info);
  std::map<int, int> late;
  std::map<int, double> lag_ms;
  int compared = 0;
  for (const auto& [key, seqs] : aligned) {
    for (const auto& [seq, at] : seqs) {
      if (at.size() < 2) continue;
      std::vector<std::pair<int64_t, int>> starts;
      for (const auto& [r, e] : at) {
        if (e->time_discovered_started_ns > 0) starts.emplace_back(e->time_discovered_started_ns, r);
      }
      if (starts.size() != at.size()) continue;
      std::sort(starts.begin(), starts.end());
      ++compared;
      const int64_t gap = starts.back().first - starts[starts.size() - 2].first;
      if (gap <= 0) continue;  // a tie: nobody is last
      ++late[starts.back().second];
      lag_ms[starts.back().second] += static_cast<double>(gap) / 1e6;
    }
  }
  LateArriver best;
  for (const auto& [r, n] : late) {
    if (n > best.late_count) {
      best.rank = r;
      best.late_count = n;
    }
  }
  best.seq_count = compared;
  if (best.rank < 0 || best.late_count < 3 || best.late_count * 5 < compared * 3) return std::nullopt;
  best.mean_lag_ms = lag_ms[best.rank] / best.late_count;
  if (best.mean_lag_ms < 1.0) return std::nullopt;  // noise, not a straggler
  return best;
}

std::optional<SlowGroup> find_slow_group(const std::map<int, FrDump>& dumps) {
  std::map<std::string, GroupInfo> info;
  const Aligned aligned = align_completed(dumps, &info);
  std::map<std::string, double> busbw;  // per group key, GB/s
  for (const auto& [key, seqs] : aligned) {
    std::vector<double> samples;
    for (const auto& [seq, at] : seqs) {
      double fastest_ms = 0;
      const FrEntry* any = nullptr;
      for (const auto& [r, e] : at) {
        if (!e->duration_ms || *e->duration_ms <= 0) continue;
        if (!any || *e->duration_ms < fastest_ms) fastest_ms = *e->duration_ms;
        any = e;
      }
      if (!any || any->input_numel <= 0) continue;
      const double bytes = static_cast<double>(any->input_numel) * dtype_bytes(any->input_dtypes);
      const double n = static_cast<double>(std::max<size_t>(info[key].members.size(), at.size()));
      samples.push_back(bytes / (fastest_ms * 1e6) * bus_factor(any->profiling_name, n));
    }
    if (!samples.empty()) busbw[key] = median(samples);
  }
  std::optional<SlowGroup> worst;
  for (const auto& [key, bw] : busbw) {
    std::vector<double> siblings;
    for (const auto& [k2, bw2] : busbw) {
      const bool same_kind = info[k2].desc == info[key].desc &&
                             (!info[key].desc.empty() || info[k2].name == info[key].name);
      if (k2 != key && same_kind) {
        siblings.push_back(bw2);
      }
    }
    const double peer = median(siblings);
    if (siblings.empty() || bw >= 0.5 * peer) continue;
    if (worst && bw / peer >= worst->busbw_gbps / worst->sibling_busbw_gbps) continue;
    SlowGroup g;
    g.pg_name = info[key].name;
    g.pg_desc = info[key].desc;
    g.members = info[key].members;
    g.busbw_gbps = bw;
    g.sibling_busbw_gbps = peer;
    worst = g;
  }
  return worst;
}

}  // namespace fleetsim::diagnose
