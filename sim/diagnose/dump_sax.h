// A SAX pass over a JSON flight-recorder dump: the dump's top-level `entries` list is
// never built as a tree. Each entry object's known keys land in a fixed array of slots
// (EntrySlots) handed to a sink at the entry's end; everything else (pg_config,
// pg_status, version, ...) is built as a JSON tree, as nlohmann's own parser would.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/slot_value.h"

namespace fleetsim::diagnose {

// The entry keys the reader reads (docs/flight-recorder-formats.md); others are skipped.
enum EntryKey : uint8_t {
  kKeyRecordId, kKeyPgId, kKeyProcessGroup, kKeyCollectiveSeqId, kKeyP2pSeqId, kKeyIsP2p, kKeyProfilingName,
  kKeyTimeCreated, kKeyTimeStarted, kKeyTimeCompleted, kKeyDuration, kKeyInputSizes, kKeyOutputSizes,
  kKeyInputDtypes, kKeyOutputDtypes, kKeyState, kKeyRetired, kKeyTimeoutMs, kKeyFrames, kEntryKeyCount
};
// The four slots of an entry's shape, in the order their prints and texts are made.
inline constexpr std::array<EntryKey, 4> kShapeKeys = {kKeyInputSizes, kKeyOutputSizes, kKeyInputDtypes,
                                                       kKeyOutputDtypes};
static_assert(kKeyOutputDtypes - kKeyInputSizes == 3, "the shape keys are consecutive (is_shape_key)");
inline constexpr bool is_shape_key(EntryKey k) { return k >= kKeyInputSizes && k <= kKeyOutputDtypes; }
inline constexpr std::array<std::string_view, kEntryKeyCount> kEntryKeyNames = {
    "record_id", "pg_id", "process_group", "collective_seq_id", "p2p_seq_id", "is_p2p", "profiling_name",
    "time_created_ns", "time_discovered_started_ns", "time_discovered_completed_ns", "duration_ms",
    "input_sizes", "output_sizes", "input_dtypes", "output_dtypes", "state", "retired", "timeout_ms", "frames"};

// Whether two texts are equal, compared by word loads inlined here: the readers compare
// millions of short keys and strings, for which a call to memcmp costs more than the compare.
inline bool same_text(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  const size_t n = a.size();
  auto word = [](const char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  };
  if (n >= 8) {
    for (size_t i = 0; i + 8 < n; i += 8)
      if (word(a.data() + i) != word(b.data() + i)) return false;
    return word(a.data() + n - 8) == word(b.data() + n - 8);  // the last 8, overlapping
  }
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

namespace dump_sax_detail {

// A key's slot in kKeyTable: the names differ in it (checked below), so a key is
// compared with one name at most.
constexpr size_t key_slot(std::string_view key) {
  if (key.size() < 2) return 0;
  const size_t first = static_cast<unsigned char>(key[0]), second_last = static_cast<unsigned char>(key[key.size() - 2]);
  return (key.size() * 4 + first + second_last * 5) & 63;
}

constexpr std::array<EntryKey, 64> make_key_table() {
  std::array<EntryKey, 64> table{};
  table.fill(kEntryKeyCount);
  for (size_t i = 0; i < kEntryKeyNames.size(); ++i) table[key_slot(kEntryKeyNames[i])] = static_cast<EntryKey>(i);
  return table;
}
inline constexpr std::array<EntryKey, 64> kKeyTable = make_key_table();

constexpr bool every_name_has_its_slot() {
  for (size_t i = 0; i < kEntryKeyNames.size(); ++i)
    if (kKeyTable[key_slot(kEntryKeyNames[i])] != i) return false;
  return true;
}
static_assert(every_name_has_its_slot(), "two entry key names share a slot: change key_slot's factors");

}  // namespace dump_sax_detail

// The slot of an entry key, or kEntryKeyCount for a key nothing reads: one table
// lookup and one compare, inlined where the readers match millions of keys.
inline EntryKey entry_key(std::string_view key) {
  const EntryKey k = dump_sax_detail::kKeyTable[dump_sax_detail::key_slot(key)];
  return k != kEntryKeyCount && same_text(kEntryKeyNames[k], key) ? k : kEntryKeyCount;
}

// Where a print of values is written (a shape's: DeferredShape, and the record reader's
// of a pickle's nodes), with room for `end - at` more words: put() is false once full.
struct PrintWords {
  uint64_t* at;
  uint64_t* end;
  bool put(uint64_t word) {
    if (at == end) return false;
    *at++ = word;
    return true;
  }
  // A word of a print: a tag in the top byte, a value below 2^56 under it.
  static constexpr uint64_t tagged(uint64_t tag, uint64_t low = 0) { return tag << 56 | low; }
};

// An entry's four shape slots (input_sizes, output_sizes, input_dtypes, output_dtypes)
// as the simdjson reader (dump_simd.h) leaves them: not yet arena nodes, but a print of
// their content (equal prints, equal values: types, numbers by their bits, strings by
// their node, lists by their items; an absent slot by a word of its own). Most entries
// of a dump repeat a few shapes, so the record reader finds the shape by the print and
// asks for the nodes (make) only for a print new to the dump.
class DeferredShape {
 public:
  std::span<const uint64_t> print;
  // Makes the four slots' nodes in the entry's arena and sets them present, as the
  // reader would have; the entry's `deferred` is then null.
  virtual void make() const = 0;

 protected:
  ~DeferredShape() = default;
};

// One entry's values by key; `present` tells an absent key from a null one. The SAX
// pass builds each value into `value`; the pickle reader leaves its values in its
// arena (`arena` set) and names each by its node, so nothing is copied out, and the
// simdjson reader (dump_simd.h) builds its values as nodes of such an arena, but for
// the shape slots, which it may leave `deferred`: absent until deferred->make().
struct EntrySlots {
  std::array<nlohmann::json, kEntryKeyCount> value;
  std::array<bool, kEntryKeyCount> present{};
  std::array<uint32_t, kEntryKeyCount> node{};
  const pickle_detail::PickleArena* arena = nullptr;  // outlives the whole dump's read
  const DeferredShape* deferred = nullptr;

  SlotValue find(EntryKey k) const {
    if (!present[k]) return {};
    return arena ? SlotValue(arena, node[k]) : SlotValue(&value[k]);
  }
  void clear();
  // From an entry already parsed as a JSON object; its values are moved out.
  static void from_object(nlohmann::json&& object, EntrySlots& out);
};

// The SAX handler for nlohmann::json::sax_parse. Syntax errors are rethrown as the
// exceptions nlohmann's own parser throws, so callers locate them the same way.
class DumpSax {
 public:
  // Called at the end of each object of the top-level `entries` list, with its index
  // among those objects; `on_reset` when a repeated `entries` key starts a new list.
  using EntrySink = std::function<void(size_t index, const EntrySlots& slots)>;
  DumpSax(EntrySink on_entry, std::function<void()> on_reset)
      : on_entry_(std::move(on_entry)), on_reset_(std::move(on_reset)) {}

  nlohmann::json& root() { return root_; }

  bool null() { return put(nlohmann::json(nullptr)); }
  bool boolean(bool v) { return put(nlohmann::json(v)); }
  bool number_integer(int64_t v) { return put(nlohmann::json(v)); }
  bool number_unsigned(uint64_t v) { return put(nlohmann::json(v)); }
  bool number_float(double v, const std::string&) { return put(nlohmann::json(v)); }
  bool string(std::string& v) { return put(nlohmann::json(std::move(v))); }
  bool binary(nlohmann::json::binary_t& v) { return put(nlohmann::json::binary(std::move(v))); }
  bool start_object(size_t) { return open(true); }
  bool start_array(size_t) { return open(false); }
  bool key(std::string& k);
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  template <class Exception>
  bool parse_error(size_t, const std::string&, const Exception& ex) {
    throw ex;
  }

 private:
  enum class Mode : uint8_t { kValue, kEntry, kSkip };
  struct Level {
    nlohmann::json* value = nullptr;  // kValue: the container being built
    Mode mode = Mode::kValue;
    EntryKey slot = kEntryKeyCount;  // kEntry: the slot of the last key
    std::string key;                 // kValue objects: the last key
  };
  nlohmann::json* target();  // where the next value goes (nullptr: dropped)
  bool put(nlohmann::json&& v);
  bool open(bool object);
  bool close();

  EntrySink on_entry_;
  std::function<void()> on_reset_;
  nlohmann::json root_;
  std::vector<Level> levels_;
  bool in_entries_ = false;  // levels_[1] is the top-level `entries` list
  size_t entry_index_ = 0;
  EntrySlots slots_;
};

}  // namespace fleetsim::diagnose
