// A dump's process groups (pg_config: names, descriptions, member lists) and its
// per-group counters (pg_status), read from the dump's value tree, JSON or pickle. A
// member list PyTorch writes as a JSON list inside a string is read straight off the
// text, once per distinct text on each reading thread; any other form goes through
// nlohmann's parser as the rest of the dump does.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "sim/diagnose/dump_reader.h"

namespace fleetsim::diagnose::record_detail {

namespace {

std::string as_string(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}


// A value that may have been written as a JSON-encoded string.
json unwrap(const json& v) {
  if (!v.is_string()) return v;
  json inner = json::parse(v.get<std::string>(), nullptr, false);
  return inner.is_discarded() ? v : inner;
}

bool json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// A JSON list of plain ranks in a string, "[0, 1, 2]", as PyTorch writes pg_config:
// read straight off the text (the world group's list is read from every dump, so
// building it as JSON would cost rank count x dump count). nullopt for anything else
// (a sign, a leading zero, a fraction, a rank past 2^31-1, a stray byte), which the
// JSON path then reads, or rejects, as before.
std::optional<std::vector<int>> plain_rank_list(std::string_view t) {
  size_t i = 0;
  const auto skip = [&] { while (i < t.size() && json_space(t[i])) ++i; };
  skip();
  if (i == t.size() || t[i] != '[') return std::nullopt;
  ++i;
  skip();
  std::vector<int> out;
  if (i < t.size() && t[i] == ']') {
    ++i;
  } else {
    out.reserve(t.size() / 4);
    while (true) {
      const size_t start = i;
      while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
      const size_t digits = i - start;
      if (digits == 0 || digits > 10 || (digits > 1 && t[start] == '0')) return std::nullopt;
      int64_t x = 0;
      for (size_t k = start; k < i; ++k) x = x * 10 + (t[k] - '0');
      if (x > INT32_MAX) return std::nullopt;
      out.push_back(static_cast<int>(x));
      skip();
      if (i == t.size()) return std::nullopt;
      if (t[i] == ']') { ++i; break; }
      if (t[i] != ',') return std::nullopt;
      ++i;
      skip();
    }
  }
  skip();
  if (i != t.size()) return std::nullopt;
  return out;
}

// A member list already read on this thread, by its exact text (known_list).
struct KnownList {
  std::string text;
  RankList ranks;
};
constexpr size_t kKnownLists = 16;  // a job has a few distinct lists; more are read again

// The list a plain member-list text names, read once per distinct text on each thread:
// every dump repeats the job's lists (the world's is ~96 KB at 16,384 ranks), so later
// dumps compare bytes only. nullopt for a text plain_rank_list does not read.
std::optional<RankList> known_list(std::string_view text) {
  thread_local std::vector<KnownList> known;  // the most recently read last
  for (auto it = known.rbegin(); it != known.rend(); ++it)
    if (it->text.size() == text.size() && std::memcmp(it->text.data(), text.data(), text.size()) == 0)
      return it->ranks;
  std::optional<std::vector<int>> plain = plain_rank_list(text);
  if (!plain) return std::nullopt;
  if (!std::is_sorted(plain->begin(), plain->end())) std::sort(plain->begin(), plain->end());
  if (known.size() == kKnownLists) known.erase(known.begin());
  known.push_back({std::string(text), RankList(*plain)});
  return known.back().ranks;
}

// A group's ranks: a list of integers >= 0 (or that list JSON-encoded in a string).
RankList parse_ranks(const json& v, DumpReader& rd, const JsonPath& path) {
  if (v.is_string()) {
    if (std::optional<RankList> plain = known_list(v.get_ref<const std::string&>())) return *plain;
  }
  std::vector<int> out;
  const json ranks = unwrap(v);
  if (!ranks.is_array()) return RankList(out);
  for (const json& r : ranks) {
    const int64_t x = rd.integer(SlotValue(&r), -1, path);
    if (x < 0 || x > INT32_MAX)
      rd.fail(path, "a rank must be an integer in 0 .. 2^31-1, got " + DumpReader::quote_json(SlotValue(&r)));
    out.push_back(static_cast<int>(x));
  }
  std::sort(out.begin(), out.end());
  return RankList(out);
}

}  // namespace

std::string field_string(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? "" : as_string(*it);
}

void read_groups(const json& root, FrDump& dump, DumpReader& rd) {
  auto cfg = root.find("pg_config");
  if (cfg == root.end() || !cfg->is_object()) return;
  for (auto it = cfg->begin(); it != cfg->end(); ++it) {
    json unwrapped;  // only a group written as a JSON string is parsed; others are read in place
    if (it.value().is_string()) unwrapped = unwrap(it.value());
    const json& v = it.value().is_string() ? unwrapped : it.value();
    FrGroup g;
    g.name = it.key();
    if (v.is_object()) {
      if (v.contains("name")) g.name = as_string(v["name"]);
      g.desc = field_string(v, "desc");
      if (v.contains("ranks")) g.ranks = parse_ranks(v["ranks"], rd, {{"pg_config", 0}, {it.key(), 0}, {"ranks", 0}});
    }
    dump.groups[g.name] = g;
  }
}

void read_status(const json& root, FrDump& dump, DumpReader& rd) {
  auto st = root.find("pg_status");
  if (st == root.end() || !st->is_object()) return;
  // pg_status is keyed by the rank-local pg_id; the analysis keys groups by their global
  // name. An entry names both; without one (an empty or onlyActive dump), local ids
  // 0..k-1 follow creation order, which is the numeric order of the k groups' names.
  std::map<std::string, std::string> id_to_name;
  // The first entry of each pg_id names it; entries sharing their group facts (one
  // interned tuple: one address) are looked at once.
  std::unordered_set<const FrGroupFacts*> seen;
  const FrGroupFacts* last = nullptr;
  for (const FrEntry& e : dump.entries) {
    const FrGroupFacts* g = &e.group();
    if (g == last || !seen.insert(g).second) continue;
    last = g;
    id_to_name.emplace(g->pg_id, g->pg_name);
  }
  std::vector<std::string> by_creation;
  for (const auto& [name, g] : dump.groups) by_creation.push_back(name);
  std::stable_sort(by_creation.begin(), by_creation.end(), [](const std::string& a, const std::string& b) {
    return std::make_pair(a.size(), a) < std::make_pair(b.size(), b);
  });
  bool local_ids = st->size() == by_creation.size();
  for (size_t i = 0; local_ids && i < by_creation.size(); ++i) local_ids = st->contains(std::to_string(i));
  for (auto it = st->begin(); it != st->end(); ++it) {
    const json v = unwrap(it.value());
    if (!v.is_object()) continue;
    std::string name = it.key();
    if (id_to_name.count(name)) {
      name = id_to_name[name];
    } else if (local_ids) {
      name = by_creation[static_cast<size_t>(std::stoul(name))];
    }
    const JsonPath at{{"pg_status", 0}, {it.key(), 0}};
    FrStatus s;
    s.last_enqueued = rd.field(v, "last_enqueued_collective", -1, at);
    s.last_started = rd.field(v, "last_started_collective", -1, at);
    s.last_completed = rd.field(v, "last_completed_collective", -1, at);
    dump.status[name] = s;
  }
}

}  // namespace fleetsim::diagnose::record_detail
