// The divergence search's lanes (fr_lanes.h): one pass over each dump files its
// collective entries into its members' lanes (the groups its entries name met on the
// way) and notes the times the timeout check needs.
#include "sim/diagnose/fr_lanes.h"

#include <algorithm>
#include <climits>
#include <deque>
#include <functional>
#include <optional>
#include <tuple>

#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose::fr_detail {
namespace {

// One dump's part of one group: its lane, and the last non-empty description its
// entries give the group.
struct DumpPart {
  GroupView* view = nullptr;
  Lane* lane = nullptr;
  Sym entry_desc;
  bool ascending = true;  // the lane so far holds one entry a seq, ascending (no sort needed)
};

// Files one dump's collective entries into its lanes in one pass over the entries
// (by group symbol), each lane then sorted by seq with one entry per seq; notes its times.
// With `add_part`, an entry's non-empty group name without a part gets one made.
void fill_lanes(const FrDump& dump, std::vector<std::pair<Sym, DumpPart>>& parts, DumpTimes& times,
                const std::function<void(const std::string&)>& add_part) {
  static const Sym completed("completed");  // symbols are equal where their texts are: one compare each
  times.first_open = dump.entries.size();
  auto part_of = [&](Sym name) -> DumpPart* {
    for (auto& [n, part] : parts)
      if (n == name) return &part;
    return nullptr;
  };
  Sym last_name;
  DumpPart* last = part_of(last_name);
  for (const FrEntry& e : dump.entries) {
    times.latest_ns = std::max({times.latest_ns, e.time_created_ns, e.time_discovered_started_ns,
                                e.time_discovered_completed_ns});
    times.last_enqueue_ns = std::max(times.last_enqueue_ns, e.time_created_ns);
    if (times.first_open == dump.entries.size() && e.state() != completed)
      times.first_open = static_cast<size_t>(&e - dump.entries.data());
    const FrGroupFacts& group = e.group();  // read once: name and description
    if (group.pg_name != last_name) {
      last_name = group.pg_name;
      last = part_of(last_name);
      if (!last && add_part && !last_name.empty()) {
        add_part(last_name.str());
        last = &parts.back().second;
      }
    }
    if (!last) continue;
    if (!group.pg_desc.empty()) last->entry_desc = group.pg_desc;
    if (e.is_p2p || e.collective_seq_id < 0) continue;
    EntryRun& by_seq = last->lane->by_seq;
    if (!by_seq.empty() && by_seq.back()->collective_seq_id >= e.collective_seq_id) last->ascending = false;
    by_seq.push_back(dump.entries.data(), &e);
    last->lane->max_known = std::max(last->lane->max_known, e.collective_seq_id);
  }
  for (auto& [n, part] : parts) {
    Lane& lane = *part.lane;
    lane.has_dump = true;
    if (part.ascending) {
      lane.by_seq.shrink_to_fit();  // one entry a seq already: keep_last_by_seq would only check it
    } else {
      lane.by_seq.keep_last_by_seq();
    }
    auto st = dump.status.find(n.str());
    if (st != dump.status.end()) lane.max_known = std::max(lane.max_known, st->second.last_enqueued);
    if (part.view->desc.empty()) part.view->desc = part.entry_desc.str();
  }
}

}  // namespace

// The groups by (name, members), each member's lane filled. A group instance is found
// by its name and its interned member list (one pointer, shared by every dump naming
// the same members), not by comparing the lists; the instances are then put in
// (name, members) order.
std::vector<GroupView> build_groups(const std::map<int, FrDump>& dumps, std::vector<DumpTimes>& times) {
  times.assign(dumps.size(), DumpTimes{});
  std::map<std::pair<std::string, const std::vector<int>*>, size_t> index;
  std::deque<GroupView> views;  // pointers into it are held while a dump is filed
  std::vector<std::pair<Sym, DumpPart>> parts;
  size_t dump_index = 0;
  for (const auto& [rank, dump] : dumps) {
    parts.clear();
    const auto add_part = [&, &dump = dump, rank = rank](const std::string& n) {  // named captures: clang 14 takes no structured binding
      const FrGroup* g = group_config(dump, n);
      const std::vector<int>* members = g && !g->ranks.empty() ? &g->ranks.get() : nullptr;
      auto [it, fresh] = index.emplace(std::pair(n, members), views.size());
      if (fresh) {
        views.emplace_back();
        views.back().name = n;
        if (members) views.back().members = *members;
      }
      GroupView& v = views[it->second];
      if (g && !g->desc.empty()) v.desc = g->desc;
      parts.emplace_back(Sym(n), DumpPart{&v, &v.lanes[rank], Sym()});
    };
    // The entries' own group names are met in the pass (no pass of their own) unless
    // pg_config's empty key makes them needed first.
    bool pending = false;
    for (const std::string& n : group_names_before_entries(dump, &pending)) add_part(n);
    fill_lanes(dump, parts, times[dump_index++], pending ? std::function<void(const std::string&)>(add_part) : nullptr);
  }
  std::vector<size_t> order(views.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(views[a].name, views[a].members) < std::tie(views[b].name, views[b].members);
  });
  std::vector<GroupView> out;
  out.reserve(views.size());
  for (size_t i : order) {
    GroupView& v = views[i];
    if (v.members.empty()) {
      for (const auto& [r, lane] : v.lanes) v.members.push_back(r);
    }
    for (int r : v.members) v.lanes[r];  // members without a dump get an empty lane
    out.push_back(std::move(v));
  }
  return out;
}

// Every seq a member holds or enqueued last, ascending, each once: a flat vector. Where
// the seqs are dense (a ring holds consecutive ones) they are marked in a bitmap over
// their range, one store an entry; sparse ones are sorted.
std::vector<int64_t> seqs_of(const GroupView& v) {
  int64_t lo = INT64_MAX, hi = -1;
  size_t held = 0;
  for (const auto& [r, lane] : v.lanes) {
    if (!lane.by_seq.empty()) lo = std::min(lo, lane.by_seq.front()->collective_seq_id);
    if (lane.max_known >= 0) lo = std::min(lo, lane.max_known);
    hi = std::max(hi, lane.max_known);  // max_known is at least every seq the lane holds
    held += lane.by_seq.size() + 1;
  }
  std::vector<int64_t> seqs;
  if (hi < 0) return seqs;
  if (static_cast<uint64_t>(hi - lo) < 4 * held + 1024) {
    std::vector<uint8_t> seen(static_cast<size_t>(hi - lo + 1), 0);
    for (const auto& [r, lane] : v.lanes) {
      mark_seqs(lane.by_seq, lo, seen);
      if (lane.max_known >= 0) seen[static_cast<size_t>(lane.max_known - lo)] = 1;
    }
    return marked_seqs(seen, lo);
  }
  for (const auto& [r, lane] : v.lanes) {
    for (const FrEntry* e : lane.by_seq) seqs.push_back(e->collective_seq_id);
    if (lane.max_known >= 0) seqs.push_back(lane.max_known);
  }
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  return seqs;
}

}  // namespace fleetsim::diagnose::fr_detail
