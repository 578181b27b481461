// Aligns flight-recorder entries by (process group, collective_seq_id) and finds the
// first sequence number where the members disagree. The culprit is the minority
// class at that seq, so the answer does not depend on which dump is read first
// (PyTorch's analyzer takes the first rank as the reference and blames the rest).
#include "sim/diagnose/fr_analyzer.h"

#include <algorithm>
#include <array>
#include <climits>
#include <set>
#include <tuple>

#include "sim/diagnose/fr_lanes.h"

namespace fleetsim::diagnose {
namespace {

using fr_detail::build_groups;
using fr_detail::DumpTimes;
using fr_detail::GroupView;
using fr_detail::Lane;
using fr_detail::seqs_of;

const char kAbsent[] = "\x01" "absent";
const char kEnqueuedNoEntry[] = "\x02" "enqueued";

// Collectives whose sizes differ from rank to rank by design: all-to-all with splits
// (expert parallelism's alltoallv), gather and scatter (only the root holds the list).
// Their sizes are no evidence of a mismatch; their type and dtypes still are.
bool variable_size(const std::string& profiling_name) {
  for (const char* op : {"all_to_all", "alltoall", "gather", "scatter"}) {
    if (profiling_name.find(op) != std::string::npos && profiling_name.find("all_gather") == std::string::npos &&
        profiling_name.find("reduce_scatter") == std::string::npos)
      return true;
  }
  return false;
}

std::string sizes_key(const FrEntry& e) {
  return variable_size(e.profiling_name()) ? std::string("*|*") : e.input_sizes() + "|" + e.output_sizes();
}

// A lane's entry at seq, or null.
const FrEntry* entry_at(const Lane& lane, int64_t seq) {
  return lane.by_seq.find(seq);
}

// The entry of a lane at seq, or a class marker; nullopt when the lane cannot say.
std::optional<std::string> class_at(const Lane& lane, int64_t seq, bool use_names,
                                    const FrEntry** entry) {
  *entry = nullptr;
  if (!lane.has_dump) return std::nullopt;
  if (seq > lane.max_known) return std::string(kAbsent);
  const FrEntry* found = entry_at(lane, seq);
  if (!found) {
    if (lane.by_seq.empty()) return std::string(kEnqueuedNoEntry);
    return std::nullopt;  // older than the ring holds
  }
  const FrEntry& e = *found;
  *entry = &e;
  std::string key = e.profiling_name() + "|" + sizes_key(e) + "|" +
                    e.input_dtypes() + "|" + e.output_dtypes();
  if (use_names) key += "|" + e.op_name();
  return key;
}

bool same_op(const FrEntry* a, const FrEntry* b) {
  return a && b && a->profiling_name() == b->profiling_name() && sizes_key(*a) == sizes_key(*b) &&
         a->input_dtypes() == b->input_dtypes() &&
         a->output_dtypes() == b->output_dtypes() &&
         (a->op_name().empty() || b->op_name().empty() || a->op_name() == b->op_name());
}

// How many ops in a row line up when the odd lane is read `offset` seqs later
// than the reference lane.
int run_length(const Lane& odd, const Lane& ref, int64_t seq, int offset) {
  int n = 0;
  for (int64_t s = seq;; ++s) {
    if (!same_op(entry_at(odd, s + offset), entry_at(ref, s))) return n;
    ++n;
  }
}

// +1 when the odd lane holds one extra op at seq, -1 when it skipped one, 0 unclear.
int detect_shift(const Lane& odd, const Lane& ref, int64_t seq) {
  const FrEntry* o = entry_at(odd, seq);
  const FrEntry* r = entry_at(ref, seq);
  if (o && !o->when().empty() && (!r || r->when().empty())) return +1;
  if (r && !r->when().empty() && (!o || o->when().empty())) return -1;
  const int extra = run_length(odd, ref, seq, +1);
  int skipped = 0;
  for (int64_t s = seq; same_op(entry_at(odd, s), entry_at(ref, s + 1)); ++s) ++skipped;
  // A one-off mismatch lines up again unshifted right after seq; a shift does not.
  const int unshifted = run_length(odd, ref, seq + 1, 0);
  if (std::max(extra, skipped) <= unshifted) return 0;
  if (extra != skipped) return extra > skipped ? +1 : -1;
  return odd.max_known > ref.max_known ? +1 : (odd.max_known < ref.max_known ? -1 : 0);
}

void describe_mismatch(const FrEntry& want, const FrEntry& got, Divergence& d) {
  if (want.profiling_name() != got.profiling_name()) {
    d.kind = DivergenceKind::kType;
    d.expected = want.profiling_name();
    d.found = got.profiling_name();
  } else if (sizes_key(want) != sizes_key(got)) {
    d.kind = DivergenceKind::kSize;
    d.expected = "input sizes " + want.input_sizes() + ", output sizes " + want.output_sizes();
    d.found = "input sizes " + got.input_sizes() + ", output sizes " + got.output_sizes();
  } else if (want.input_dtypes() != got.input_dtypes() || want.output_dtypes() != got.output_dtypes()) {
    d.kind = DivergenceKind::kDtype;
    d.expected = "dtypes " + want.input_dtypes();
    d.found = "dtypes " + got.input_dtypes();
  } else {
    d.kind = DivergenceKind::kOpName;
    d.expected = "op " + want.op_name();
    d.found = "op " + got.op_name();
  }
}

using Classes = std::map<std::string, std::vector<int>>;

// Picks the majority class; on a tie, a class whose op carries a rank condition is
// never the majority (that settles it), and a class that holds an entry beats one
// that lacks it (that does not: *tie stays set).
std::string pick_majority(const Classes& classes, const std::map<int, const FrEntry*>& at,
                          bool* tie) {
  auto score = [&](const Classes::value_type& c) {
    const FrEntry* e = at.count(c.second.front()) ? at.at(c.second.front()) : nullptr;
    const int has_when = e && !e->when().empty() ? 1 : 0;
    const int present = c.first == kAbsent ? 0 : 1;
    return std::tuple<size_t, int, int>(c.second.size(), 1 - has_when, present);
  };
  auto best = classes.begin();
  for (auto it = classes.begin(); it != classes.end(); ++it) {
    if (score(*it) > score(*best)) best = it;
  }
  *tie = false;
  for (auto it = classes.begin(); it != classes.end(); ++it) {
    if (it != best && std::get<0>(score(*it)) == std::get<0>(score(*best)) &&
        std::get<1>(score(*it)) == std::get<1>(score(*best))) {
      *tie = true;
    }
  }
  return best->first;
}

}  // namespace

namespace {

// The group's lanes walked in step with ascending seqs: each lane's entry at the seq in
// amortized constant time (a cursor per lane), where a binary search per lookup cost a log.
class LaneCursors {
 public:
  // Each cursor copies what the walk reads of its lane, so the walk never reads the
  // lanes' map nodes (one more cache miss a lane a seq, thousands of lanes a group).
  explicit LaneCursors(const GroupView& v) {
    for (const auto& [r, lane] : v.lanes)
      cursors_.push_back({lane.by_seq.base(), lane.by_seq.places(), lane.by_seq.size(), 0, lane.max_known,
                          lane.has_dump});
  }
  // Moves every cursor to `seq`; seqs must come in ascending order. Notes on the way
  // whether every entry at the seq names its op (frames[0].name).
  void advance(int64_t seq) {
    all_named_ = true;
    for (Cursor& c : cursors_) {
      while (c.pos < c.count && c.first[c.held[c.pos]].collective_seq_id < seq) ++c.pos;
      c.at = c.pos < c.count && c.first[c.held[c.pos]].collective_seq_id == seq ? c.first + c.held[c.pos] : nullptr;
      if (!c.at) continue;
      // Read at the next seq, after every other lane.
      if (c.pos + 1 < c.count) prefetch_entry(c.first + c.held[c.pos + 1]);
      c.call = &c.at->call();
      if (c.call->op_name.empty()) all_named_ = false;
    }
  }
  size_t size() const { return cursors_.size(); }
  bool has_dump(size_t i) const { return cursors_[i].has_dump; }  // the lane's
  int64_t max_known(size_t i) const { return cursors_[i].max_known; }
  bool holds_any(size_t i) const { return cursors_[i].count > 0; }
  const FrEntry* at(size_t i) const { return cursors_[i].at; }  // the lane's entry at the seq, or null
  const FrCall& call(size_t i) const { return *cursors_[i].call; }  // at(i)'s frame facts (at(i) not null)
  bool all_named() const { return all_named_; }  // every entry at the seq names its op

 private:
  struct Cursor {
    const FrEntry* first;  // the lane's dump's entries
    const uint32_t* held;  // the lane's by_seq: places among them
    size_t count;
    size_t pos;
    int64_t max_known;
    bool has_dump;
    const FrEntry* at = nullptr;
    const FrCall* call = nullptr;  // at's, read once
  };
  std::vector<Cursor> cursors_;
  bool all_named_ = true;
};

void fill_divergence(const GroupView& v, int64_t seq, const Classes& classes,
                     const std::map<int, const FrEntry*>& at, Divergence& d) {
  const std::string major = pick_majority(classes, at, &d.tie);
  d.majority = classes.at(major);
  for (const auto& [key, ranks] : classes) {
    if (key != major) d.minority.insert(d.minority.end(), ranks.begin(), ranks.end());
  }
  std::sort(d.minority.begin(), d.minority.end());
  const int odd = d.minority.front();
  const int ref = d.majority.front();
  const FrEntry* odd_e = at.count(odd) ? at.at(odd) : nullptr;
  const FrEntry* ref_e = at.count(ref) ? at.at(ref) : nullptr;
  if (odd_e && ref_e) d.shift = detect_shift(v.lanes.at(odd), v.lanes.at(ref), seq);
  // For a skipped op, show the op the minority skipped (the majority's).
  const FrEntry* shown = odd_e && d.shift >= 0 ? odd_e : (ref_e ? ref_e : odd_e);
  if (shown) {
    d.op = shown->profiling_name();
    d.op_name = shown->op_name();
    d.site = shown->site();
    d.step = shown->step();
  }
  if (odd_e && !odd_e->when().empty()) {
    d.when = odd_e->when();
    d.when_on_minority = true;
  } else if (ref_e && !ref_e->when().empty()) {
    d.when = ref_e->when();
  }
  d.time_ns = LLONG_MAX;
  for (const auto& [r, e] : at) d.time_ns = std::min(d.time_ns, e->time_created_ns);
  if (odd_e && ref_e) {
    describe_mismatch(*ref_e, *odd_e, d);
  } else {
    d.kind = DivergenceKind::kPresence;
    d.minority_has_entry = odd_e != nullptr || major == kAbsent;
    d.shift = d.minority_has_entry ? +1 : -1;
  }
}

// True when every lane that can say names the same class at seq, told by the symbols
// class_at's key is made of (equal symbols, equal keys): the common case, where no key
// is built. False where they differ (the keys, built, may still be equal).
bool one_class(const LaneCursors& lanes, int64_t seq, bool use_names) {
  using Print = std::array<uint32_t, 7>;
  std::optional<Print> first;
  bool variable = false;
  const FrEntry* first_entry = nullptr;  // the entry `first` was made of, if any
  const FrShape* first_shape = nullptr;  // and its tuples
  const FrCall* first_call = nullptr;
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (!lanes.has_dump(i)) continue;
    Print p{};
    const bool beyond = seq > lanes.max_known(i);
    const FrEntry* e = beyond ? nullptr : lanes.at(i);
    // The same op, shapes and frame facts as the first entry (the interned tuples are one
    // object each): the same print, told without reading the tuples' fields.
    if (e && first_entry && e->profiling_name() == first_entry->profiling_name() && &lanes.call(i) == first_call &&
        &e->shape() == first_shape)
      continue;
    if (beyond) {
      p[0] = 1;
    } else if (!e) {
      if (lanes.holds_any(i)) continue;  // older than the ring holds
      p[0] = 2;
    } else {
      if (!first || (*first)[0] != 0) variable = variable_size(e->profiling_name());
      const FrShape& shape = e->shape();
      p = {0, e->profiling_name().id(), variable ? 0 : shape.input_sizes.id(), variable ? 0 : shape.output_sizes.id(),
           shape.input_dtypes.id(), shape.output_dtypes.id(), use_names ? lanes.call(i).op_name.id() : 0};
      if (!first) {
        first_shape = &shape;
        first_call = &lanes.call(i);
      }
    }
    if (!first) {
      first = p;
      first_entry = e;
    } else if (p != *first) {
      return false;
    }
  }
  return true;
}

std::optional<Divergence> first_divergence(const GroupView& v) {
  LaneCursors cursors(v);
  for (int64_t seq : seqs_of(v)) {
    cursors.advance(seq);
    const bool use_names = cursors.all_named();
    if (one_class(cursors, seq, use_names)) continue;
    Classes classes;
    std::map<int, const FrEntry*> at;
    for (const auto& [r, lane] : v.lanes) {
      const FrEntry* e = nullptr;
      std::optional<std::string> c = class_at(lane, seq, use_names, &e);
      if (!c) continue;
      classes[*c].push_back(r);
      if (e) at[r] = e;
    }
    if (classes.size() < 2) continue;
    Divergence d;
    d.pg_name = v.name;
    d.pg_desc = v.desc;
    d.members = v.members;
    d.seq = seq;
    fill_divergence(v, seq, classes, at, d);
    return d;
  }
  return std::nullopt;
}

// Most telling first: a clear majority before a tie, a mismatch (a definite bug)
// before an op only some ranks reached, then the earliest in time: a rank that skips
// an op also runs ahead elsewhere, and a rank that adds one also lags elsewhere,
// and in both the first event is the cause.
bool more_telling(const Divergence& a, const Divergence& b) {
  const bool pa = a.kind == DivergenceKind::kPresence;
  const bool pb = b.kind == DivergenceKind::kPresence;
  return std::make_tuple(a.tie, pa, a.time_ns, a.pg_name) <
         std::make_tuple(b.tie, pb, b.time_ns, b.pg_name);
}

// `times`: each dump's, in rank order, as fill_lanes noted them.
void find_timeouts(const std::map<int, FrDump>& dumps, const std::vector<DumpTimes>& times, FrFindings& f) {
  const Sym completed("completed");  // symbols are equal where their texts are: one compare each
  size_t k = 0;
  for (const auto& [rank, dump] : dumps) {
    const DumpTimes& t = times[k++];
    if (dump.entries.empty()) continue;
    f.now_ns = std::max(f.now_ns, t.latest_ns);
    f.last_enqueue_ns[rank] = t.last_enqueue_ns;
  }
  size_t dump_index = 0;
  for (const auto& [rank, dump] : dumps) {
    Sym status_name;  // the group whose pg_status `status` is (looked up once a run of its entries)
    const FrStatus* status = nullptr;
    bool looked = false;
    for (size_t i = times[dump_index++].first_open; i < dump.entries.size(); ++i) {
      const FrEntry& e = dump.entries[i];
      if (e.state() == completed) continue;
      // With timing off an entry stays `scheduled` (and is retired) once done: pg_status
      // says whether its group completed it.
      if (!looked || e.pg_name() != status_name) {
        status_name = e.pg_name();
        auto st = dump.status.find(status_name.str());
        status = st == dump.status.end() ? nullptr : &st->second;
        looked = true;
      }
      const bool done_by_status =
          !e.is_p2p && status && e.collective_seq_id >= 0 && e.collective_seq_id <= status->last_completed;
      if (done_by_status) continue;
      const bool aged = e.timeout_ms() > 0 && e.time_created_ns > 0 &&
                        f.now_ns - e.time_created_ns > e.timeout_ms() * 1000000;
      if (!e.retired && !aged) continue;
      TimedOut t;
      t.rank = rank;
      t.pg_name = e.pg_name();
      t.seq = e.is_p2p ? e.p2p_seq_id : e.collective_seq_id;
      t.op = e.profiling_name();
      t.why = e.retired ? "retired, not completed" : "older than its timeout";
      f.timed_out.push_back(t);
    }
  }
}

}  // namespace

FrFindings analyze_fr(const std::map<int, FrDump>& dumps, bool waits) {
  FrFindings f;
  std::set<int> missing;
  std::vector<GroupView> groups;
  std::vector<DumpTimes> times;
  {
    PhaseTimer t("divergence alignment");
    groups = build_groups(dumps, times);
  }
  {
    PhaseTimer t("timeouts");  // the tails of the dumps (their times were read with the lanes)
    find_timeouts(dumps, times, f);
  }
  {
    PhaseTimer t("divergence search");
    for (const GroupView& v : groups) {
      ++f.groups;
      for (const auto& [r, lane] : v.lanes) {
        if (!lane.has_dump && !dumps.count(r)) missing.insert(r);  // a dump without this group is no missing dump
      }
      if (std::optional<Divergence> d = first_divergence(v)) f.divergences.push_back(*d);
    }
    f.missing_dumps.assign(missing.begin(), missing.end());
    groups = {};  // the lanes go before the wait graph is built
  }
  if (waits) {
    PhaseTimer t("wait graph");
    f.waits = build_wait_graph(dumps);
  }
  PhaseTimer t_p2p("p2p divergences");
  for (Divergence& d : find_p2p_divergences(dumps)) f.divergences.push_back(std::move(d));
  sort_divergences(f.divergences);
  return f;
}

void sort_divergences(std::vector<Divergence>& divs) {
  std::stable_sort(divs.begin(), divs.end(), [](const Divergence& a, const Divergence& b) {
    if (a.p2p != b.p2p) return !a.p2p;
    return !a.p2p && more_telling(a, b);
  });
}

}  // namespace fleetsim::diagnose
