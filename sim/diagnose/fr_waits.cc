// The wait-for graph over the pending window of flight-recorder dumps (see
// fr_analyzer.h). Per process group, keyed by its global name (process_group[0], the
// pg_config key; never the rank-local pg_id), each member's progress is read from
// pg_status (last enqueued / last completed) and from its entries: an entry counts as
// finished when its state says so or when pg_status has completed its seq, since with
// timing off every entry stays `scheduled`. A member with unfinished work waits on
// the members that never enqueued that seq or left no dump.
#include <algorithm>
#include <climits>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose {
namespace {

struct Progress {
  int64_t enqueued = -1;
  int64_t completed = -1;
  int64_t waits_at = -1;  // the oldest unfinished seq, when enqueued > completed
};

// seq -> the first profiling name given for it: a flat window over the seqs (a ring
// holds consecutive ones, and the members' windows overlap), a map for seqs far outside.
class FirstOpAt {
 public:
  void add(int64_t seq, Sym op) {
    if (!fits(seq)) {
      far_.try_emplace(seq, op);
      return;
    }
    const size_t i = static_cast<size_t>(seq - base_);
    if (!set_[i]) {
      set_[i] = 1;
      op_[i] = op;
      ++held_;
    }
  }
  // The first op given for `seq`, or null.
  const Sym* find(int64_t seq) const {
    if (auto it = far_.find(seq); it != far_.end()) return &it->second;  // given before the window reached it
    if (seq < base_ || seq - base_ >= static_cast<int64_t>(set_.size())) return nullptr;
    const size_t i = static_cast<size_t>(seq - base_);
    return set_[i] ? &op_[i] : nullptr;
  }

 private:
  // Whether `seq` is in the window, growing it when that keeps it within a few times
  // the seqs it holds (one grown below gets slack, so a run of such growths is linear).
  bool fits(int64_t seq) {
    const int64_t size = static_cast<int64_t>(set_.size());
    if (size == 0) {
      base_ = seq;
      set_.assign(1, 0);
      op_.assign(1, Sym());
      return true;
    }
    if (seq >= base_ && seq - base_ < size) return true;
    const int64_t limit = 4 * static_cast<int64_t>(held_) + 4096;
    if (seq > base_) {
      if (seq - base_ >= limit) return false;
      set_.resize(static_cast<size_t>(seq - base_ + 1), 0);
      op_.resize(set_.size());
      return true;
    }
    if (base_ - seq + size > limit) return false;
    const int64_t grow = std::min(std::max(base_ - seq, size / 2), limit - size);
    set_.insert(set_.begin(), static_cast<size_t>(grow), 0);
    op_.insert(op_.begin(), static_cast<size_t>(grow), Sym());
    base_ -= grow;
    return true;
  }

  int64_t base_ = 0;
  std::vector<uint8_t> set_;
  std::vector<Sym> op_;
  size_t held_ = 0;
  std::map<int64_t, Sym> far_;
};

struct Group {
  std::string desc;
  std::vector<int> members;
  std::map<int, Progress> at;  // members with a dump
  FirstOpAt op_at;             // seq -> profiling name, from the first member (in rank order) holding it
  std::map<int64_t, std::vector<int64_t>> created_at;  // seq -> enqueue times of its unfinished entries
};

// Whether the dump's recorder times its work: then an entry ends `completed`, and a
// retired one that is not has timed out. Without timing, entries stay `scheduled`
// and one is retired when done.
// The states compared per entry, as symbols (equal where their texts are: one compare).
const Sym& completed_state() {
  static const Sym s("completed");
  return s;
}

bool timing_on(const FrDump& dump) {
  static const Sym started("started");
  for (const FrEntry& e : dump.entries) {
    if (e.state() == completed_state() || e.state() == started) return true;
  }
  return false;
}

bool finished(const FrEntry& e, const FrStatus* st, bool timed) {
  if (e.state() == completed_state()) return true;
  if (st && !e.is_p2p) return e.collective_seq_id <= st->last_completed;
  return e.retired && !timed;
}

// Unfinished point-to-point work, in rank order and then dump order: a rank blocked in
// a send or recv is not idle.
struct OpenP2p {
  int rank = -1;
  const FrEntry* entry = nullptr;
};

// One rank's reading of one group, gathered in one pass over its dump's entries.
struct Scan {
  Sym name;
  Group* g = nullptr;
  const FrStatus* st = nullptr;
  int64_t first_open = -1, max_seen = -1, max_done = -1;
};

// Files one collective entry of the scan's group: its op, and whether it is finished.
void scan_entry(const FrEntry& e, bool timed, Scan& s) {
  if (s.g->desc.empty()) s.g->desc = e.pg_desc();  // the first entry's that gives one
  if (e.is_p2p || e.collective_seq_id < 0) return;
  s.g->op_at.add(e.collective_seq_id, e.profiling_name());
  s.max_seen = std::max(s.max_seen, e.collective_seq_id);
  if (finished(e, s.st, timed)) {
    s.max_done = std::max(s.max_done, e.collective_seq_id);
    return;
  }
  if (s.first_open < 0 || e.collective_seq_id < s.first_open) s.first_open = e.collective_seq_id;
  if (e.time_created_ns > 0) s.g->created_at[e.collective_seq_id].push_back(e.time_created_ns);
}

// Every listed group's scan over the dump's entries, and its unfinished p2p work, in
// one pass (by group symbol). With `add_scan`, an entry's non-empty group name without a
// scan gets one made.
void scan_dump(int rank, const FrDump& dump, bool timed, std::vector<Scan>& scans, std::vector<OpenP2p>& open,
               const std::function<void(const std::string&)>& add_scan) {
  Scan* last = nullptr;
  for (const FrEntry& e : dump.entries) {
    if (e.is_p2p && !finished(e, nullptr, timed)) open.push_back({rank, &e});
    if (!last || last->name != e.pg_name()) {
      last = nullptr;
      for (Scan& s : scans)
        if (s.name == e.pg_name()) last = &s;
      if (!last && add_scan && !e.pg_name().empty()) {
        add_scan(e.pg_name().str());
        last = &scans.back();
      }
      if (!last) continue;
    }
    scan_entry(e, timed, *last);
  }
}

// One rank's progress on one group from its pg_status and entries. With no status,
// the first unfinished entry marks where it stands.
Progress progress_of(const Scan& s) {
  const FrStatus* st = s.st;
  const int64_t first_open = s.first_open, max_seen = s.max_seen, max_done = s.max_done;
  Progress p;
  if (st) {
    p.enqueued = std::max(st->last_enqueued, max_seen);
    p.completed = st->last_completed;
  } else {
    p.enqueued = max_seen;
    p.completed = first_open >= 0 ? first_open - 1 : max_done;
  }
  // Sequence numbers count from 1: with nothing completed, the first is waited for.
  if (p.enqueued > p.completed) p.waits_at = first_open >= 0 ? first_open : std::max<int64_t>(p.completed + 1, 1);
  return p;
}

// Whether any of the dump's entries names group `name`.
bool in_entries(const FrDump& dump, Sym name) {
  return std::any_of(dump.entries.begin(), dump.entries.end(), [&](const FrEntry& e) { return e.pg_name() == name; });
}

// Every group's members' progress, and (in `open`) the unfinished p2p work.
std::map<std::string, Group> collect_groups(const std::map<int, FrDump>& dumps, std::vector<OpenP2p>& open) {
  std::map<std::string, Group> groups;
  for (const auto& [rank, dump] : dumps) {
    const bool timed = timing_on(dump);
    std::vector<Scan> scans;
    const auto add_scan = [&, &dump = dump](const std::string& n) {  // named captures: clang 14 takes no structured binding
      const FrGroup* c = group_config(dump, n);
      Group& g = groups[n];
      if (c) {
        if (g.members.empty()) g.members = c->ranks;
        if (g.desc.empty()) g.desc = c->desc;
      }
      auto st = dump.status.find(n);
      scans.push_back(Scan{Sym(n), &g, st == dump.status.end() ? nullptr : &st->second});
    };
    // The entries' own group names are met in the pass (no pass of their own) unless
    // pg_config's empty key makes them needed first.
    bool pending = false;
    for (const std::string& n : group_names_before_entries(dump, &pending)) {
      // pg_status keyed by a local pg_id the reader could not map (an empty dump) would
      // land on another group's global name: only the groups the dump names otherwise
      // (a name the entries give is met in the pass, where `pending`).
      if (!group_config(dump, n) && !dump.groups.empty() && (pending || !in_entries(dump, Sym(n)))) continue;
      add_scan(n);
    }
    scan_dump(rank, dump, timed, scans, open, pending ? std::function<void(const std::string&)>(add_scan) : nullptr);
    for (const Scan& s : scans) s.g->at[rank] = progress_of(s);
  }
  for (auto& [n, g] : groups) {
    if (g.members.empty()) {
      for (const auto& [r, p] : g.at) g.members.push_back(r);
    }
  }
  return groups;
}

// A member of `g` that holds a dump but not this group at all issued nothing on it.
Progress member_progress(const Group& g, int r, const std::map<int, FrDump>& dumps, bool* has_dump) {
  *has_dump = dumps.count(r) > 0;
  auto it = g.at.find(r);
  return it == g.at.end() ? Progress{} : it->second;
}

struct Blocked {
  WaitRoot root;
  std::set<int> waiters;
};

// blocker -> the ranks that wait on it directly; a blocker with work of its own
// pending is a link in a chain, and its waiters wait, through it, on the root.
using WaitsOn = std::map<int, std::set<int>>;

// The earliest wait on a blocker that has work of its own pending: in a cycle (each
// waits on the other), the first wait names the rank that went on without the op.
struct FirstWait {
  int64_t time_ns = INT64_MAX;
  WaitRoot root;
  std::set<int> waiters;
};

// A root of kind `kind`: `rank` holds up the waiters at `seq` of group `pg`.
WaitRoot wait_root(int rank, WaitKind kind, const std::string& pg, const std::string& desc, int64_t seq,
                   const std::string& op, int64_t last_enqueued, bool p2p) {
  return WaitRoot{rank, kind, pg, desc, seq, op, last_enqueued, p2p, 0, true};
}

// The first wait found on a blocker names its root; every one adds its waiters.
template <class Waiters>
void add_blocked(Blocked& b, const WaitRoot& root, const Waiters& waiters) {
  if (b.waiters.empty()) b.root = root;
  b.waiters.insert(std::begin(waiters), std::end(waiters));
}

// Keeps in `f` the wait on a pending blocker with the earliest enqueue time.
template <class Waiters>
void keep_first_wait(FirstWait& f, int64_t when, const WaitRoot& root, const Waiters& waiters) {
  if (when >= f.time_ns) return;
  f.time_ns = when;
  f.root = root;
  f.waiters = std::set<int>(std::begin(waiters), std::end(waiters));
}

// For each seq some member waits at, the members that never enqueued it or left no
// dump: sorting the members by what they enqueued makes each seq one scan.
void find_blockers(const std::string& name, const Group& g, const std::map<int, FrDump>& dumps,
                   const std::map<int, bool>& pending, std::map<int, Blocked>& blocked, WaitsOn& chain,
                   std::map<int, FirstWait>& first_wait, WaitGraph& w) {
  std::map<int64_t, std::vector<int>> waiting_at;  // seq -> waiters
  for (const auto& [r, p] : g.at) {
    if (p.waits_at >= 0) waiting_at[p.waits_at].push_back(r);
  }
  if (waiting_at.empty()) return;
  ++w.stuck_groups;
  std::vector<std::pair<int64_t, int>> by_enqueued;  // (enqueued, rank); no dump: -2
  for (int r : g.members) {
    bool has_dump = false;
    const Progress p = member_progress(g, r, dumps, &has_dump);
    by_enqueued.emplace_back(has_dump ? p.enqueued : -2, r);
  }
  std::sort(by_enqueued.begin(), by_enqueued.end());
  for (const auto& [seq, waiters] : waiting_at) {
    const Sym* op_sym = g.op_at.find(seq);
    const std::string op = op_sym ? op_sym->str() : "";
    for (const auto& [enq, r] : by_enqueued) {
      if (enq >= seq) break;
      const bool no_dump = enq == -2;
      if (!no_dump && pending.at(r)) {  // itself waiting: a link in a chain, not a root
        chain[r].insert(waiters.begin(), waiters.end());
        // When the waiters enqueued it: the median, since the rank that went on early
        // may itself be among them, with an op enqueued out of turn.
        auto t = g.created_at.find(seq);
        if (t == g.created_at.end() || t->second.empty()) continue;
        std::vector<int64_t> times = t->second;
        std::nth_element(times.begin(), times.begin() + static_cast<long>(times.size() / 2), times.end());
        keep_first_wait(first_wait[r], times[times.size() / 2],
                        wait_root(r, WaitKind::kSkipped, name, g.desc, seq, op, enq, false), waiters);
        continue;
      }
      add_blocked(blocked[r],
                  wait_root(r, no_dump ? WaitKind::kNoDump : WaitKind::kNeverIssued, name, g.desc, seq, op,
                            no_dump ? -1 : enq, false),
                  waiters);
    }
  }
}

// The half that pairs with `op`: "nccl:send 0->1" pairs with "nccl:recv 1<-0".
std::string partner_op(const std::string& op) {
  const size_t colon = op.find(':'), sp = op.find(' ');
  const bool send = op.compare(colon + 1, 5, "send ") == 0;
  const size_t arrow = op.find(send ? "->" : "<-");
  if (colon == std::string::npos || sp == std::string::npos || arrow == std::string::npos || arrow < sp) return op;
  const std::string a = op.substr(sp + 1, arrow - sp - 1), b = op.substr(arrow + 2);
  return op.substr(0, colon + 1) + (send ? "recv " + b + "<-" + a : "send " + b + "->" + a);
}

// Point-to-point: a rank blocked in a send or recv waits on its peer when the peer has
// no matching half pending (a send to q pairs with q's recv from this rank). Works on
// the pending window alone, so onlyActive dumps of long pipelines need no history.
void find_p2p_blockers(const std::map<int, FrDump>& dumps, const std::vector<OpenP2p>& unfinished,
                       const std::map<int, bool>& pending, std::map<int, Blocked>& blocked, WaitsOn& chain,
                       std::map<int, FirstWait>& first_wait) {
  using Key = std::tuple<std::string, int, int, bool>;  // pg, self, peer, self sends
  std::map<Key, const FrEntry*> open;                    // the oldest unfinished op per direction
  std::map<std::string, std::string> desc;
  for (const auto& [rank, entry] : unfinished) {
    const FrEntry& e = *entry;
    const FrGroup* g = group_config(dumps.at(rank), e.pg_name());
    const std::optional<P2pPeer> p = p2p_peer(e, rank, g ? g->ranks : std::vector<int>{});
    if (!p) continue;
    open.emplace(Key{e.pg_name(), rank, p->peer, p->send}, &e);
    if (g && !g->desc.empty()) desc[e.pg_name()] = g->desc;
  }
  for (const auto& [key, e] : open) {
    const auto& [pg, self, peer, send] = key;
    if (open.count({pg, peer, self, !send})) continue;  // its partner's half is posted
    const bool no_dump = !dumps.count(peer);
    const std::string& pg_desc = desc.count(pg) ? desc[pg] : e->pg_desc();
    const std::string op = partner_op(e->profiling_name());
    const int waiter[] = {self};
    if (!no_dump && pending.at(peer)) {
      chain[peer].insert(self);
      if (e->time_created_ns > 0)
        keep_first_wait(first_wait[peer], e->time_created_ns,
                        wait_root(peer, WaitKind::kSkipped, pg, pg_desc, e->p2p_seq_id, op, -1, true), waiter);
      continue;
    }
    add_blocked(blocked[peer],
                wait_root(peer, no_dump ? WaitKind::kNoDump : WaitKind::kNeverIssued, pg, pg_desc, e->p2p_seq_id,
                          op, -1, true),
                waiter);
  }
}

// No one is missing: every stuck group had all its members issue the seq. The ranks
// common to every stuck group are the ones whose failure explains them all.
void common_to_stuck_groups(const std::map<std::string, Group>& groups, WaitGraph& w) {
  std::optional<std::set<int>> common;
  const Group* first = nullptr;
  std::string first_name;
  size_t smallest = SIZE_MAX;
  for (const auto& [name, g] : groups) {
    bool stuck = false;
    for (const auto& [r, p] : g.at) stuck = stuck || p.enqueued > p.completed;
    if (!stuck) continue;
    std::set<int> m(g.members.begin(), g.members.end());
    if (!common) {
      common = m;
    } else {
      std::set<int> both;
      std::set_intersection(common->begin(), common->end(), m.begin(), m.end(), std::inserter(both, both.end()));
      common = both;
    }
    if (m.size() < smallest) {
      smallest = m.size();
      first = &g;
      first_name = name;
    }
  }
  // Only a strict subset of the smallest stuck group singles anyone out.
  if (!common || common->empty() || common->size() >= smallest || !first) return;
  for (int r : *common) {
    WaitRoot root;
    root.rank = r;
    root.kind = WaitKind::kIssuedNotFinished;
    root.pg_name = first_name;
    root.pg_desc = first->desc;
    if (auto it = first->at.find(r); it != first->at.end()) {
      root.seq = it->second.waits_at;
      root.last_enqueued = it->second.enqueued;
    }
    if (const Sym* op = first->op_at.find(root.seq)) root.op = *op;
    root.waiters = static_cast<int>(smallest) - 1;
    w.roots.push_back(root);
  }
}

// Every waited-on rank is itself waiting: a cycle (a rank skipped an op and went on
// to one its peers, blocked in the skipped op, never reach). The wait that began
// first is the original one; the rank it waits on went on without the op. Unless
// more ranks went on without it than issued it: then the issuers are the odd ones
// out (rank 0 alone all-reduces a metric that no peer calls, then waits in it while
// its peers wait for it at their next collective), and the root is not a minority.
void skipped_in_cycle(const std::map<int, FirstWait>& first_wait, WaitGraph& w) {
  const FirstWait* best = nullptr;
  for (const auto& [r, f] : first_wait) {
    if (f.time_ns == INT64_MAX) continue;
    if (!best || f.time_ns < best->time_ns) best = &f;
  }
  if (!best) return;
  std::vector<WaitRoot> went_on;  // every rank that skipped the op the first wait is in, by rank
  for (const auto& [r, f] : first_wait) {
    if (f.time_ns == INT64_MAX || f.root.pg_name != best->root.pg_name || f.root.seq != best->root.seq ||
        f.root.p2p != best->root.p2p) {
      continue;
    }
    went_on.push_back(f.root);
    went_on.back().waiters = static_cast<int>(f.waiters.size());
  }
  const int waiters = static_cast<int>(best->waiters.size());
  for (WaitRoot& root : went_on) {
    root.minority = static_cast<int>(went_on.size()) <= waiters;  // one against one: the times decide
    w.roots.push_back(root);
  }
}

}  // namespace

WaitGraph build_wait_graph(const std::map<int, FrDump>& dumps) {
  WaitGraph w;
  std::vector<OpenP2p> open;
  const std::map<std::string, Group> groups = collect_groups(dumps, open);
  std::map<int, bool> pending;
  for (const auto& [rank, dump] : dumps) pending[rank] = false;
  for (const OpenP2p& o : open) pending[o.rank] = true;
  for (const auto& [name, g] : groups) {
    for (const auto& [r, p] : g.at) pending[r] = pending[r] || p.enqueued > p.completed;
  }
  std::map<int, Blocked> blocked;
  WaitsOn chain;
  std::map<int, FirstWait> first_wait;
  for (const auto& [name, g] : groups) find_blockers(name, g, dumps, pending, blocked, chain, first_wait, w);
  find_p2p_blockers(dumps, open, pending, blocked, chain, first_wait);
  std::set<int> waiting;
  for (const auto& [r, b] : blocked) {
    WaitRoot root = b.root;
    root.waiters = static_cast<int>(b.waiters.size());
    // Everyone who waits on it, directly or through a chain of waiting ranks.
    std::vector<int> todo(b.waiters.begin(), b.waiters.end());
    while (!todo.empty()) {
      const int x = todo.back();
      todo.pop_back();
      if (!waiting.insert(x).second) continue;
      if (auto c = chain.find(x); c != chain.end()) todo.insert(todo.end(), c->second.begin(), c->second.end());
    }
    w.roots.push_back(root);
  }
  w.waiting = static_cast<int>(waiting.size());
  std::map<std::pair<std::string, int64_t>, int> roots_at;
  for (const WaitRoot& r : w.roots) ++roots_at[{r.pg_name, r.seq}];
  // A send or recv waits on one peer: an idle peer is the odd one whatever the counts.
  for (WaitRoot& r : w.roots) {
    r.minority = r.p2p || r.kind == WaitKind::kNoDump || roots_at[{r.pg_name, r.seq}] < r.waiters;
  }
  if (w.roots.empty()) skipped_in_cycle(first_wait, w);
  if (w.roots.empty()) common_to_stuck_groups(groups, w);
  return w;
}

std::string to_string(WaitKind kind) {
  switch (kind) {
    case WaitKind::kNeverIssued: return "never issued it, nothing pending anywhere";
    case WaitKind::kNoDump: return "left no dump";
    case WaitKind::kIssuedNotFinished: return "issued it and never finished";
    case WaitKind::kSkipped: return "never issued it and went on to later work";
  }
  return "?";
}

}  // namespace fleetsim::diagnose
