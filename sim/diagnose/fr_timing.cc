// Timing evidence from flight-recorder entries of a slow (not hung) run: which rank
// arrives last at its collectives, and which group moves bytes far slower than its
// siblings. Bus bandwidth follows nccl-tests: busbw = algbw * 2(n-1)/n for all-reduce.
#include <algorithm>
#include <climits>
#include <cmath>
#include <optional>
#include <functional>
#include <queue>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose {
namespace {

struct GroupInfo {
  std::string name;
  std::string desc;
  std::vector<int> members;
};

// One member's completed collectives of one group instance, sorted by seq, one per seq
// (a rank's later entry for one seq replaces its earlier one). `index` is the member's
// place among the dumps in rank order, so per-rank tallies are flat arrays.
struct RankRun {
  int rank = 0;
  uint32_t index = 0;
  EntryRun at;
};
// One group instance's completed collectives, members in rank order: 4 bytes an entry
// (a (seq, rank, entry) row each, with growth slack, was about 27 at 1,024 ranks), and
// its distinct seqs ascending when they are dense (nullopt: the runs are merged in a heap).
struct AlignedGroup {
  GroupInfo info;
  std::vector<RankRun> runs;
  std::optional<std::vector<int64_t>> seqs;
};
// By group key (pg name, then its members), completed collectives only.
using Aligned = std::vector<AlignedGroup>;

// Where one dump's entries of one group go: the group instance, the run, its config,
// and whether the run so far is one entry a seq, ascending (then it needs no sort).
struct RunPlace {
  size_t group = 0;
  size_t run = 0;
  const FrGroup* config = nullptr;  // the group's pg_config entry in this dump, or null
  bool ascending = true;
};

// The distinct seqs of `ag`'s runs, ascending, when they are dense enough that walking
// every run at every seq costs no more than a few times the entries; else nullopt. A
// run whose seqs are consecutive (a ring's usual run) marks its range without reading
// its entries.
std::optional<std::vector<int64_t>> dense_seqs(const AlignedGroup& ag) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  size_t held = 0;
  for (const RankRun& r : ag.runs) {
    if (r.at.empty()) continue;
    lo = std::min(lo, r.at.front()->collective_seq_id);
    hi = std::max(hi, r.at.back()->collective_seq_id);
    held += r.at.size();
  }
  if (held == 0) return std::vector<int64_t>{};
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  if (span > 4 * held + 1024 || span * ag.runs.size() > 4 * held + 4096) return std::nullopt;
  std::vector<uint8_t> seen(span, 0);
  for (const RankRun& r : ag.runs) mark_seqs(r.at, lo, seen);
  return marked_seqs(seen, lo);
}

// Files one dump's completed collectives into `out`'s runs in one pass (by group symbol).
void file_dump(int rank, uint32_t index, const FrDump& dump,
               std::map<std::pair<uint32_t, const std::vector<int>*>, size_t>& instance,
               std::vector<std::string>& keys, Aligned& out) {
  static const Sym completed("completed");  // symbols are equal where their texts are: one compare each
  // This dump's pg names (by symbol) -> its run's place in `out`, the key made once.
  std::unordered_map<uint32_t, RunPlace> of_name;
  uint32_t last_name = UINT32_MAX;
  RunPlace* place = nullptr;
  EntryRun* at = nullptr;
  for (const FrEntry& e : dump.entries) {
    if (e.is_p2p || e.state() != completed || e.collective_seq_id < 0) continue;
    if (e.pg_name().id() != last_name) {
      last_name = e.pg_name().id();
      auto named = of_name.find(last_name);
      if (named == of_name.end()) {
        const FrGroup* g = group_config(dump, e.pg_name());
        const std::vector<int>* members = g && !g->ranks.empty() ? &g->ranks.get() : nullptr;
        auto [it, fresh] = instance.emplace(std::pair(last_name, members), out.size());
        if (fresh) {
          out.push_back({GroupInfo{e.pg_name(), "", members ? *members : std::vector<int>{}}, {}, {}});
          keys.push_back(e.pg_name() + format_ranks(out.back().info.members));
        }
        out[it->second].runs.push_back({rank, index, {}});
        named = of_name.emplace(last_name, RunPlace{it->second, out[it->second].runs.size() - 1, g}).first;
      }
      place = &named->second;
      at = &out[place->group].runs[place->run].at;
    }
    if (!at->empty() && at->back()->collective_seq_id >= e.collective_seq_id) place->ascending = false;
    at->push_back(dump.entries.data(), &e);
  }
  for (auto& [name, p] : of_name) {
    AlignedGroup& ag = out[p.group];
    EntryRun& run = ag.runs[p.run].at;
    const FrEntry& last = *run.back();  // the group's description: its last entry's, as filed
    ag.info.desc = last.pg_desc().empty() && p.config ? p.config->desc : last.pg_desc().str();
    if (p.ascending) {
      run.shrink_to_fit();  // one entry a seq already (keep_last_by_seq would only check it)
    } else {
      run.keep_last_by_seq();
    }
  }
}

Aligned align_completed(const std::map<int, FrDump>& dumps) {
  // Group instance by (pg name symbol, interned member list: one pointer per distinct
  // list) -> into `out`; the text key (name, then members) is printed once an instance.
  std::map<std::pair<uint32_t, const std::vector<int>*>, size_t> instance;
  std::vector<std::string> keys;
  Aligned out;
  uint32_t index = 0;
  for (const auto& [rank, dump] : dumps) file_dump(rank, index++, dump, instance, keys, out);
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  Aligned sorted;
  sorted.reserve(out.size());
  for (size_t i : order) {
    sorted.push_back(std::move(out[i]));
    sorted.back().seqs = dense_seqs(sorted.back());
  }
  return sorted;
}

// One member's entry at a seq: the member's place among the dumps in rank order, so
// (index) orders as (rank) does.
using AtSeq = std::vector<std::pair<uint32_t, const FrEntry*>>;

// Calls f(entries of that seq in rank order) for each seq of `ag`, ascending: a merge of
// the members' runs, each already in seq order. Dense seqs walk a cursor per run, seq
// by seq; others merge the runs' heads in a heap (ties in rank order).
template <class F>
void for_each_seq(const AlignedGroup& ag, F&& f) {
  AtSeq run;
  if (ag.seqs) {
    std::vector<size_t> cursor(ag.runs.size(), 0);
    for (const int64_t seq : *ag.seqs) {
      run.clear();
      for (size_t i = 0; i < ag.runs.size(); ++i) {
        const EntryRun& at = ag.runs[i].at;
        if (cursor[i] < at.size() && at[cursor[i]]->collective_seq_id == seq) {
          run.emplace_back(ag.runs[i].index, at[cursor[i]++]);
          if (cursor[i] < at.size()) prefetch_entry(at[cursor[i]]);  // read at a later seq
        }
      }
      f(run);
    }
    return;
  }
  using Head = std::pair<int64_t, size_t>;  // (seq at the run's cursor, run) - runs are in rank order
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  std::vector<size_t> pos(ag.runs.size(), 0);
  for (size_t i = 0; i < ag.runs.size(); ++i) {
    if (!ag.runs[i].at.empty()) heads.emplace(ag.runs[i].at.front()->collective_seq_id, i);
  }
  while (!heads.empty()) {
    const int64_t seq = heads.top().first;
    run.clear();
    while (!heads.empty() && heads.top().first == seq) {
      const size_t i = heads.top().second;
      heads.pop();
      const EntryRun& at = ag.runs[i].at;
      run.emplace_back(ag.runs[i].index, at[pos[i]]);
      if (++pos[i] < at.size()) heads.emplace(at[pos[i]]->collective_seq_id, i);
    }
    f(run);
  }
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

// The median of sorted `v` less its element `skip` (as median() of that list): 0 if empty.
double median_less_one(const std::vector<double>& v, size_t skip) {
  const size_t n = v.size() - 1;
  if (n == 0) return 0;
  const auto at = [&](size_t j) { return v[j < skip ? j : j + 1]; };
  return n % 2 ? at(n / 2) : (at(n / 2 - 1) + at(n / 2)) / 2;
}

// The late arriver's tallies, per member by its place among the dumps in rank order.
struct LateTally {
  explicit LateTally(size_t dumps) : late(dumps, 0), lag_ms(dumps, 0) {}
  std::vector<int> late;       // seqs at which the member started last
  std::vector<double> lag_ms;  // how long the others waited for it there, summed
  int compared = 0;            // seqs where every member's start is known
};

// Tallies one seq's entries: who started last, by (start, rank), and by how much.
void tally_late(const AtSeq& at, LateTally& t) {
  if (at.size() < 2) return;
  // The last and second-last starts, by (start, rank): one pass, no sort.
  using Start = std::pair<int64_t, uint32_t>;
  Start last{INT64_MIN, 0}, second{INT64_MIN, 0};
  for (const auto& [i, e] : at) {
    if (e->time_discovered_started_ns <= 0) return;  // every member's start is needed
    const Start s(e->time_discovered_started_ns, i);
    if (s > last) {
      second = last;
      last = s;
    } else if (s > second) {
      second = s;
    }
  }
  ++t.compared;
  const int64_t gap = last.first - second.first;
  if (gap <= 0) return;  // a tie: nobody is last
  ++t.late[last.second];
  t.lag_ms[last.second] += static_cast<double>(gap) / 1e6;
}

std::optional<LateArriver> late_arriver_of(const LateTally& t, const std::map<int, FrDump>& dumps) {
  LateArriver best;
  size_t best_index = 0;
  size_t i = 0;
  for (const auto& [rank, dump] : dumps) {  // in rank order: the first of equal counts wins
    if (t.late[i] > best.late_count) {
      best.rank = rank;
      best.late_count = t.late[i];
      best_index = i;
    }
    ++i;
  }
  best.seq_count = t.compared;
  if (best.rank < 0 || best.late_count < 3 || best.late_count * 5 < t.compared * 3) return std::nullopt;
  best.mean_lag_ms = t.lag_ms[best_index] / best.late_count;
  if (best.mean_lag_ms < 1.0) return std::nullopt;  // noise, not a straggler
  return best;
}

// The last dtype and op texts read, with what they gave: consecutive seqs of a group
// mostly repeat them, so their texts are searched once a change, not once a seq.
struct TextMemo {
  Sym dtypes;
  double dtype_bytes = 0;
  Sym op;
  double n = 0;
  double bus_factor = 0;
  bool any = false;
};

// One seq's bus bandwidth in GB/s (from its fastest member's duration), or nullopt.
std::optional<double> busbw_sample(const AlignedGroup& ag, const AtSeq& at, TextMemo& memo) {
  double fastest_ms = 0;
  const FrEntry* any = nullptr;
  for (const auto& [i, e] : at) {
    if (!e->duration_ms() || *e->duration_ms() <= 0) continue;
    if (!any || *e->duration_ms() < fastest_ms) fastest_ms = *e->duration_ms();
    any = e;
  }
  if (!any) return std::nullopt;
  const FrShape& shape = any->shape();
  if (shape.input_numel <= 0) return std::nullopt;
  const double n = static_cast<double>(std::max<size_t>(ag.info.members.size(), at.size()));
  if (!memo.any || memo.dtypes != shape.input_dtypes || memo.op != any->profiling_name() || memo.n != n) {
    memo = {shape.input_dtypes, dtype_bytes(shape.input_dtypes), any->profiling_name(), n,
            bus_factor(any->profiling_name(), n), true};
  }
  const double bytes = static_cast<double>(shape.input_numel) * memo.dtype_bytes;
  return bytes / (fastest_ms * 1e6) * memo.bus_factor;
}

// `busbw`: per group (index into `aligned`, in key order), its median sample, GB/s.
std::optional<SlowGroup> slow_group_of(const Aligned& aligned, const std::map<size_t, double>& busbw) {
  // Groups of one kind (same desc; same name where the desc is empty) are siblings: the
  // kind's busbw values sorted once, and a group's siblings are that list less one copy
  // of its own value (the median reads values only), not a pass over every group.
  using Kind = std::pair<std::string_view, std::string_view>;
  const auto kind_of = [&](size_t key) {
    const GroupInfo& info = aligned[key].info;
    return Kind(info.desc, info.desc.empty() ? std::string_view(info.name) : std::string_view());
  };
  std::map<Kind, std::vector<double>> of_kind;
  for (const auto& [key, bw] : busbw) of_kind[kind_of(key)].push_back(bw);
  for (auto& [kind, bws] : of_kind) std::sort(bws.begin(), bws.end());
  std::optional<SlowGroup> worst;
  for (const auto& [key, bw] : busbw) {
    const std::vector<double>& kin = of_kind.at(kind_of(key));
    const size_t self = static_cast<size_t>(std::lower_bound(kin.begin(), kin.end(), bw) - kin.begin());
    const double peer = median_less_one(kin, self);
    if (kin.size() < 2 || bw >= 0.5 * peer) continue;
    if (worst && bw / peer >= worst->busbw_gbps / worst->sibling_busbw_gbps) continue;
    SlowGroup g;
    g.pg_name = aligned[key].info.name;
    g.pg_desc = aligned[key].info.desc;
    g.members = aligned[key].info.members;
    g.busbw_gbps = bw;
    g.sibling_busbw_gbps = peer;
    worst = g;
  }
  return worst;
}

}  // namespace

// One alignment and one walk of it for both: each seq's entries feed the late
// arriver's tallies and the group's busbw samples, in the order each alone read them.
TimingFindings find_timing(const std::map<int, FrDump>& dumps, bool slow_group) {
  const Aligned aligned = [&] {
    PhaseTimer t("timing alignment");
    return align_completed(dumps);
  }();
  PhaseTimer t("late arriver and slow group");
  LateTally tally(dumps.size());
  std::map<size_t, double> busbw;
  std::vector<double> samples;
  TextMemo memo;
  for (size_t key = 0; key < aligned.size(); ++key) {
    samples.clear();
    for_each_seq(aligned[key], [&](const AtSeq& at) {
      tally_late(at, tally);
      if (!slow_group) return;
      if (const std::optional<double> bw = busbw_sample(aligned[key], at, memo)) samples.push_back(*bw);
    });
    if (!samples.empty()) busbw[key] = median(samples);
  }
  TimingFindings out;
  out.late = late_arriver_of(tally, dumps);
  if (slow_group) out.slow_group = slow_group_of(aligned, busbw);
  return out;
}

}  // namespace fleetsim::diagnose
