// The group helpers the flight-recorder analyses share (fr_analyzer.h): which groups a
// dump names and their pg_config entries, one entry per seq in a member's list, and
// the texts of kinds and rank lists.
#include <algorithm>
#include <set>
#include <vector>

#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose {
namespace {

// pg_status's group names, the empty one aside, into `names`.
void add_status_names(const FrDump& dump, std::set<std::string>& names) {
  for (const auto& [n, st] : dump.status) {
    if (!n.empty()) names.insert(n);
  }
}

// The names a dump gives its groups in entries and pg_status, the empty one aside.
std::set<std::string> named_in_work(const FrDump& dump) {
  std::vector<Sym> seen;  // the distinct names, a handful: compared as symbols, one compare each
  Sym last;  // entries come in runs of one group: a name is looked up once a run
  for (const FrEntry& e : dump.entries) {
    if (e.pg_name() == last) continue;
    last = e.pg_name();
    if (!last.empty() && std::find(seen.begin(), seen.end(), last) == seen.end()) seen.push_back(last);
  }
  std::set<std::string> names(seen.begin(), seen.end());
  add_status_names(dump, names);
  return names;
}

}  // namespace

const FrGroup* group_config(const FrDump& dump, const std::string& name) {
  if (auto g = dump.groups.find(name); g != dump.groups.end()) return &g->second;
  auto empty = dump.groups.find("");
  if (name.empty() || empty == dump.groups.end() || dump.groups.size() != 1) return nullptr;
  const std::set<std::string> named = named_in_work(dump);
  return named.size() == 1 && *named.begin() == name ? &empty->second : nullptr;
}

std::vector<std::string> group_names(const FrDump& dump) {
  std::set<std::string> names = named_in_work(dump);
  // The empty pg_config name stands for the one group the work names, and for none
  // when it names several (gloo's pg_config then holds only the last group created).
  const bool drop_empty = !names.empty();
  for (const auto& [n, g] : dump.groups) {
    if (!(drop_empty && n.empty())) names.insert(n);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

std::vector<std::string> group_names_before_entries(const FrDump& dump, bool* entries_pending) {
  *entries_pending = !dump.groups.count("");
  if (!*entries_pending) return group_names(dump);
  std::set<std::string> names;
  add_status_names(dump, names);
  for (const auto& [n, g] : dump.groups) names.insert(n);
  return std::vector<std::string>(names.begin(), names.end());
}

const FrEntry* EntryRun::find(int64_t seq) const {
  const FrEntry* first = base_;
  auto it = std::lower_bound(at_.begin(), at_.end(), seq,
                             [first](uint32_t at, int64_t s) { return first[at].collective_seq_id < s; });
  return it == at_.end() || first[*it].collective_seq_id != seq ? nullptr : first + *it;
}

void EntryRun::keep_last_by_seq() {
  const FrEntry* first = base_;
  const auto seq = [first](uint32_t at) { return first[at].collective_seq_id; };
  const auto out_of_step = [&](uint32_t a, uint32_t b) { return seq(a) >= seq(b); };
  if (std::adjacent_find(at_.begin(), at_.end(), out_of_step) == at_.end()) {
    at_.shrink_to_fit();  // the common case: one entry a seq, ascending; no sort, no buffer
    return;
  }
  std::stable_sort(at_.begin(), at_.end(), [&](uint32_t a, uint32_t b) { return seq(a) < seq(b); });
  size_t kept = 0;
  for (size_t i = 0; i < at_.size(); ++i) {
    if (i + 1 < at_.size() && seq(at_[i + 1]) == seq(at_[i])) continue;
    at_[kept++] = at_[i];
  }
  at_.resize(kept);
  at_.shrink_to_fit();
}

void mark_seqs(const EntryRun& run, int64_t lo, std::vector<uint8_t>& seen) {
  if (run.empty()) return;
  const int64_t first = run.front()->collective_seq_id, last = run.back()->collective_seq_id;
  if (static_cast<uint64_t>(last - first) + 1 == run.size()) {  // one a seq, ascending: consecutive
    std::fill(seen.begin() + (first - lo), seen.begin() + (last - lo) + 1, uint8_t{1});
    return;
  }
  for (const FrEntry* e : run) seen[static_cast<size_t>(e->collective_seq_id - lo)] = 1;
}

std::vector<int64_t> marked_seqs(const std::vector<uint8_t>& seen, int64_t lo) {
  std::vector<int64_t> seqs;
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i]) seqs.push_back(lo + static_cast<int64_t>(i));
  return seqs;
}

std::string to_string(DivergenceKind kind) {
  switch (kind) {
    case DivergenceKind::kPresence: return "not all ranks joined";
    case DivergenceKind::kType: return "collective type mismatch";
    case DivergenceKind::kSize: return "size mismatch";
    case DivergenceKind::kDtype: return "dtype mismatch";
    case DivergenceKind::kOpName: return "op mismatch";
  }
  return "?";
}

std::string format_ranks(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(ranks[i]);
  }
  return s + "]";
}

}  // namespace fleetsim::diagnose
