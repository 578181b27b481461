// The state of one flight-recorder dump being read (internal to record_reader.cc and
// record_groups.cc): the first value that cannot be read becomes a located Diagnostic,
// and a pickle's reads are kept by node for the whole dump (most entries share their
// group, shapes and frames with thousands of others).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/json_path.h"
#include "sim/diagnose/record.h"
#include "sim/diagnose/slot_value.h"
#include "sim/diagnose/symbol.h"
#include "sim/io/units.h"

namespace fleetsim::diagnose::record_detail {

using nlohmann::json;

// Shapes already seen, by the hash of their four slots' values (shape_of). The SAX
// pass's values are kept as copies (`owned`), arena nodes (a pickle's, simdjson's) as views.
struct ShapeCache {
  struct Cached {
    std::unique_ptr<std::array<json, 4>> owned;
    std::array<SlotValue, 4> view;
    FrShapeId id;
  };
  std::unordered_map<size_t, std::vector<Cached>> buckets;
};

// A hash of a value's print (call_of): two lanes, so the multiplies overlap.
inline size_t print_hash(std::span<const uint64_t> print) {
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;
  uint64_t a = print.size(), b = ~a;
  size_t i = 0;
  for (; i + 1 < print.size(); i += 2) {
    a = std::rotl((a ^ print[i]) * kMul, 29);
    b = std::rotl((b ^ print[i + 1]) * kMul, 31);
  }
  if (i < print.size()) a = std::rotl((a ^ print[i]) * kMul, 29);
  return static_cast<size_t>(hash_mix(a, b));
}
struct PrintHash {
  size_t operator()(const std::vector<uint64_t>& print) const { return print_hash(print); }
};

// Values by a print (a run of words), for the per-dump caches: the prints are kept end
// to end in one vector and found by open addressing, so a lookup allocates nothing and
// costs one hash of the words and one compare of them.
template <class V>
class PrintTable {
 public:
  const V* find(std::span<const uint64_t> print, size_t hash) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = hash & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.hash == hash && s.len == print.size() && same_words(words_.data() + s.at, print)) return &s.value;
    }
  }
  // Adds a print that find does not know.
  void insert(std::span<const uint64_t> print, size_t hash, V value) {
    if ((count_ + 1) * 2 > slots_.size()) grow();
    place(Slot{hash, words_.size(), print.size(), value, true});
    words_.insert(words_.end(), print.begin(), print.end());
    ++count_;
  }
  size_t size() const { return count_; }
  void clear() {
    slots_.clear();
    words_.clear();
    count_ = 0;
  }

 private:
  static bool same_words(const uint64_t* kept, std::span<const uint64_t> print) {  // prints are short: no memcmp call
    for (size_t i = 0; i < print.size(); ++i)
      if (kept[i] != print[i]) return false;
    return true;
  }
  struct Slot {
    size_t hash = 0, at = 0, len = 0;
    V value{};
    bool used = false;
  };
  void place(const Slot& slot) {
    size_t i = slot.hash & (slots_.size() - 1);
    while (slots_[i].used) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = slot;
  }
  void grow() {
    std::vector<Slot> old(std::max<size_t>(64, slots_.size() * 2));
    old.swap(slots_);
    for (const Slot& s : old)
      if (s.used) place(s);
  }
  std::vector<Slot> slots_;  // a power of two of them, at most half used
  std::vector<uint64_t> words_;
  size_t count_ = 0;
};

// A pickle's reads by node, kept for the whole dump: each string node's symbol, its
// shapes, and the call of each frames list by its print (call_of): most entries share
// their group, shapes and frames with thousands of others.
struct NodeCaches {
  std::vector<Sym> syms;  // by node index; "" (the default) is read again: cheap
  ShapeCache shapes;
  std::unordered_map<std::vector<uint64_t>, FrCallId, PrintHash> calls;
  // The same calls by the frames list's items as nodes (call_of): entries whose frames
  // are the same memoized nodes (as PyTorch's pickler shares them) are found without
  // printing them.
  PrintTable<FrCallId> calls_by_node;
  // Shapes by the print of their four slots (pickle_shape_of): found without a walk to
  // hash and another to compare.
  PrintTable<FrShapeId> shapes_by_print;
  // Shapes by the print the simdjson reader made of their slots (DeferredShape, dump_sax.h).
  PrintTable<FrShapeId> shapes_by_parse_print;
  std::array<uint64_t, 256> shape_print;  // the shape print being made (a longer one is not printed)
  std::vector<uint64_t> print, by_node;  // the prints being made (no allocation per entry)
};

// A slot value as a symbol: a string as it is (interned from its view), null as "", else
// its JSON (an integer's, the plain decimal nlohmann writes, without building the JSON).
Sym as_sym(const SlotValue& v);

// One dump being read: the first value it cannot read becomes a Diagnostic
// naming its path and what was expected, at the value's FILE:LINE:COL in a
// JSON dump (`text`), at the file in a pickle (`text` null). A pickle's values stay in
// its arena for the whole read, so what is made of them is kept by node (`nodes`).
struct DumpReader {
  struct IntSym {
    uint64_t bits = 0;
    bool is_unsigned = false, used = false;
    Sym sym;
  };

  const std::string* text;
  const std::string& file;
  std::optional<Diagnostic> error;
  NodeCaches nodes;
  std::array<IntSym, 16> int_syms{};
  InternMemo<FrGroupFacts, FrFactsHash, 16> groups{};       // an entry's group facts
  InternMemo<FrEntryFacts, FrEntryFactsHash, 64> facts{};  // an entry's facts, its group's id among them

  void fail(const JsonPath& path, const std::string& message) {
    if (error) return;
    Diagnostic d;
    if (text) d.loc = loc_from_offset(*text, offset_of(*text, path) + 1, file);
    else d.loc.file = file;
    d.message = path_text(path) + ": " + message;
    error = std::move(d);
  }

  // An integer, written as a JSON integer, a float with no fraction, or a
  // string of decimal digits (PyTorch writes both forms); null or absent
  // reads as `fallback`. Anything else is an error.
  int64_t integer(const SlotValue& v, int64_t fallback, const JsonPath& path) {
    return integer_at(v, fallback, [&] { return path; });
  }
  // As integer, the value's path made by `where` only when there is an error to name.
  template <class Where>
  int64_t integer_at(const SlotValue& v, int64_t fallback, const Where& where) {
    // A node's integer, the common case, read once: a pickle's int, or JSON's non-negative
    // integer (typed unsigned, as nlohmann types it) below 2^63.
    if (const pickle_detail::Node* n = v.node(); n && n->kind == pickle_detail::Kind::kScalar) {
      if (n->type == pickle_detail::Scalar::kInt) return n->num.i;
      if (n->type == pickle_detail::Scalar::kUint && n->num.u <= static_cast<uint64_t>(INT64_MAX))
        return static_cast<int64_t>(n->num.u);
    }
    if (v.is_null()) return fallback;
    if (v.is_number_unsigned()) {
      if (v.get_uint() <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(v.get_uint());
    } else if (v.is_number_integer()) {
      return v.get_int();
    } else if (v.is_number_float()) {
      const double d = v.get_double();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) return static_cast<int64_t>(d);
    } else if (v.is_string()) {
      const std::string s(v.get_string());
      char* end = nullptr;
      errno = 0;
      const long long x = std::strtoll(s.c_str(), &end, 10);
      if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return x;
    }
    fail(where(), "expected an integer, got " + quote_json(v));
    return fallback;
  }

  int64_t field(const json& obj, const char* key, int64_t fallback, JsonPath path) {
    auto it = obj.find(key);
    if (it == obj.end()) return fallback;
    path.push_back({key, 0});
    return integer(SlotValue(&*it), fallback, path);
  }

  // A sequence number: an integer >= 0 where present.
  int64_t seq(const json& obj, const char* key, JsonPath path) {
    const int64_t v = field(obj, key, -1, path);
    if (v < 0 && obj.contains(key) && !obj[key].is_null()) {
      path.push_back({key, 0});
      fail(path, "a sequence number must be >= 0, got " + std::to_string(v));
    }
    return v;
  }

  // A slot value as a symbol (as_sym); a pickle's strings interned once per node, its
  // integers (never memoized: a node each) by value (`int_syms`).
  Sym sym(const SlotValue& v) {
    const pickle_detail::Node* n = v.node();  // read once
    if (!n) return as_sym(v);
    if (!n->is_string()) {
      const bool integer = n->kind == pickle_detail::Kind::kScalar &&
                           (n->type == pickle_detail::Scalar::kInt || n->type == pickle_detail::Scalar::kUint);
      return integer ? int_sym(v) : as_sym(v);
    }
    std::vector<Sym>& syms = nodes.syms;
    if (v.node_id() >= syms.size()) syms.resize(std::max<size_t>(v.node_id() + 1, syms.size() * 2));
    Sym& s = syms[v.node_id()];
    if (s.empty()) s = as_sym(v);
    return s;
  }

  // An integer node's symbol, by its bits and signedness, from a few kept by their low
  // bits: an entry's pg_id is one of a few integers.
  Sym int_sym(const SlotValue& v) {
    const uint64_t bits = v.get_uint();
    const bool is_unsigned = v.is_number_unsigned();
    IntSym& kept = int_syms[(bits ^ bits >> 7) & (int_syms.size() - 1)];
    if (!kept.used || kept.bits != bits || kept.is_unsigned != is_unsigned) kept = {bits, is_unsigned, true, as_sym(v)};
    return kept.sym;
  }


  // A JSON value as an error message quotes it: at most ~200 characters.
  static std::string quote_json(const SlotValue& v) { return clip_value(v.dump()); }
};

// A dump's `key` as text: a string as it is, null or absent as "", else its JSON.
std::string field_string(const json& obj, const char* key);
// pg_config's groups and pg_status's counters (record_groups.cc).
void read_groups(const json& root, FrDump& dump, DumpReader& rd);
void read_status(const json& root, FrDump& dump, DumpReader& rd);

// Entry `index` of a dump's `entries` list, from its slots (record_entry.cc); the first
// error is kept in `rd`.
FrEntry parse_entry(const EntrySlots& e, DumpReader& rd, size_t index);

}  // namespace fleetsim::diagnose::record_detail
