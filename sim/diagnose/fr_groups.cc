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

void keep_last_by_seq(std::vector<const FrEntry*>& entries) {
  const auto out_of_step = [](const FrEntry* a, const FrEntry* b) { return a->collective_seq_id >= b->collective_seq_id; };
  if (std::adjacent_find(entries.begin(), entries.end(), out_of_step) == entries.end()) {
    entries.shrink_to_fit();  // the common case: one entry a seq, ascending; no sort, no buffer
    return;
  }
  std::stable_sort(entries.begin(), entries.end(), [](const FrEntry* a, const FrEntry* b) {
    return a->collective_seq_id < b->collective_seq_id;
  });  // a ring holds them in order already
  size_t kept = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i + 1 < entries.size() && entries[i + 1]->collective_seq_id == entries[i]->collective_seq_id) continue;
    entries[kept++] = entries[i];
  }
  entries.resize(kept);
  entries.shrink_to_fit();
}

void mark_seqs(const std::vector<const FrEntry*>& run, int64_t lo, std::vector<uint8_t>& seen) {
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
