// simdjson's read of a dump (dump_simd.h): one DOM parse per file, in place where the
// text has simdjson's padding allocated, by a parser kept per thread. The entries' known keys become nodes of a pickle-style
// arena (pickle_node.h) read in place (slot_value.h), typed as nlohmann's parser types
// them (non-negative integers unsigned, negative ones signed; an object's repeated key
// keeps its last value); the rest of the file is built as nlohmann values.
#include "sim/diagnose/dump_simd.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "fleetsim/status.h"
#include "sim/diagnose/json_nodes.h"

namespace fleetsim::diagnose {

using nlohmann::json;
namespace dom = simdjson::dom;

namespace {

// A value as nlohmann's parser builds it. simdjson stores a non-negative integer
// below 2^63 as int64: nlohmann makes every non-negative integer unsigned.
json to_json(dom::element e) {
  switch (e.type()) {
    case dom::element_type::OBJECT: {
      json out = json::object();
      for (dom::key_value_pair field : dom::object(e)) out[std::string(field.key)] = to_json(field.value);
      return out;
    }
    case dom::element_type::ARRAY: {
      json out = json::array();
      for (dom::element item : dom::array(e)) out.push_back(to_json(item));
      return out;
    }
    case dom::element_type::INT64: {
      const int64_t v = int64_t(e);
      return v < 0 ? json(v) : json(static_cast<uint64_t>(v));
    }
    case dom::element_type::UINT64: return json(uint64_t(e));
    case dom::element_type::DOUBLE: return json(double(e));
    case dom::element_type::STRING: return json(std::string(std::string_view(e)));
    case dom::element_type::BOOL: return json(bool(e));
    case dom::element_type::NULL_VALUE: return json(nullptr);
  }
  return json();
}

}  // namespace

// Such a "-0" (dump_simd.h) is one not followed by more of a number, after a value's start
// (':', '[', ',' or the text's start, whitespace between). Such a "-0" inside a string
// counts too (the SAX pass then reads the file); PyTorch's "nccl:recv 1<-0" does not.
bool json_has_negative_zero(std::string_view text) {
  for (size_t at = text.find("-0"); at != std::string_view::npos; at = text.find("-0", at + 2)) {
    const char next = at + 2 < text.size() ? text[at + 2] : ' ';
    if ((next >= '0' && next <= '9') || next == '.' || next == 'e' || next == 'E') continue;
    size_t before = at;
    while (before > 0 && (text[before - 1] == ' ' || text[before - 1] == '\t' || text[before - 1] == '\n' ||
                          text[before - 1] == '\r'))
      --before;
    if (before == 0 || text[before - 1] == ':' || text[before - 1] == '[' || text[before - 1] == ',') return true;
  }
  return false;
}

namespace {

// One dump's entry values as nodes (JsonNodes), kept for the whole read of the dump:
// the record reader's caches name values by node, as a pickle's. Strings are views into
// the parser's string buffer, which lives as long (the parser is not reused meanwhile).
class JsonArena {
 public:
  void clear(size_t max_values) {
    max_values_ = max_values;
    overflowed_ = false;
    nodes_.clear();
    printed_ = 0;
  }
  // Element `e` as a node and (a container) its subtree; its id. A string or a scalar
  // (most of an entry's values) is made here, inlined in the loops over fields and items.
  uint32_t add(dom::element e) {
    const dom::element_type type = e.type();
    if (type == dom::element_type::STRING) return nodes_.string_node(e.get_string().value_unsafe());
    if (type == dom::element_type::ARRAY || type == dom::element_type::OBJECT) return add_container(e, type);
    return add_scalar(e, type);
  }
  // Gives the nodes' memory back (after an overflow: the SAX pass needs the room).
  void release() { nodes_.release(); }
  // Appends a print of `e` (DeferredShape) to `out`, counting its values as the nodes
  // add() would make, less the strings (a long one is a node either way; a short one is
  // in the print, and a node only once its slot is made). False for an object, a print
  // past out's room, or a value past the bound (overflowed() then says so).
  bool print(dom::element e, PrintWords& out);
  // The values printed and not (yet) made as nodes: set back when they are made, or
  // when a print stops short and its values are made instead.
  size_t printed() const { return printed_; }
  void set_printed(size_t count) { printed_ = count; }
  // Whether the dump holds more values than the bound clear() set (its read then stops
  // making nodes), counting those printed as the nodes they stand for.
  bool overflowed() const { return overflowed_ || values() > max_values_; }
  // The nodes so far, read in place (JsonNodes::view).
  const pickle_detail::PickleArena& view() { return nodes_.view(); }

 private:
  uint32_t add_container(dom::element e, dom::element_type type);
  uint32_t add_scalar(dom::element e, dom::element_type type);
  bool print_leaf(dom::element e, dom::element_type type, PrintWords& out);
  size_t values() const { return nodes_.size() + printed_; }

  size_t max_values_ = kMaxJsonValues;
  bool overflowed_ = false;
  JsonNodes nodes_;
  size_t printed_ = 0;
};

// A container's item count: simdjson's size saturates at 0xFFFFFF, and past it the items
// are counted (out of line: the common case is one compare).
template <class Container>
[[gnu::noinline]] size_t count_items(Container c) {
  size_t n = 0;
  for ([[maybe_unused]] auto item : c) ++n;
  return n;
}
template <class Container>
inline size_t count_of(Container c) {
  const size_t n = c.size();
  return n < 0xFFFFFF ? n : count_items(c);
}

// The container's node is made first, its fields set before the children move the
// vector. The element's type is known, so its value is taken unchecked (value_unsafe).
uint32_t JsonArena::add_container(dom::element e, dom::element_type type) {
  using pickle_detail::Kind;
  uint32_t id = 0;
  pickle_detail::Node& n = nodes_.push(id);
  if (type == dom::element_type::ARRAY) {
    const dom::array list = e.get_array().value_unsafe();
    const uint32_t count = static_cast<uint32_t>(count_of(list));
    uint32_t at = nodes_.reserve_items(count);
    n.kind = Kind::kList;
    n.first = at;
    n.count = n.room = count;
    for (dom::element item : list) {
      if (values() >= max_values_) {  // a list of millions of values: the SAX pass reads the file
        overflowed_ = true;
        return id;
      }
      const uint32_t child = add(item);
      nodes_.item(at++) = child;
    }
    return id;
  }
  // An object: key, value, key, value ... (the last of repeated keys wins)
  const dom::object fields = e.get_object().value_unsafe();
  const uint32_t count = static_cast<uint32_t>(2 * count_of(fields));
  uint32_t at = nodes_.reserve_items(count);
  n.kind = Kind::kDict;
  n.first = at;
  n.count = n.room = count;
  for (dom::key_value_pair field : fields) {
    if (values() >= max_values_) {
      overflowed_ = true;
      return id;
    }
    const uint32_t key = nodes_.string_node(field.key);
    nodes_.item(at++) = key;
    const uint32_t value = add(field.value);
    nodes_.item(at++) = value;
  }
  return id;
}

inline uint32_t JsonArena::add_scalar(dom::element e, dom::element_type type) {
  using pickle_detail::Scalar;
  uint32_t id = 0;
  pickle_detail::Node& n = nodes_.push(id);
  switch (type) {
    case dom::element_type::INT64:  // nlohmann makes every non-negative integer unsigned
      n.num.i = e.get_int64().value_unsafe();
      n.type = n.num.i < 0 ? Scalar::kInt : Scalar::kUint;
      break;
    case dom::element_type::UINT64:
      n.type = Scalar::kUint;
      n.num.u = e.get_uint64().value_unsafe();
      break;
    case dom::element_type::DOUBLE:
      n.type = Scalar::kFloat;
      n.num.d = e.get_double().value_unsafe();
      break;
    case dom::element_type::BOOL:
      n.type = Scalar::kBool;
      n.flag = e.get_bool().value_unsafe();
      break;
    case dom::element_type::NULL_VALUE: break;
    default: FLEETSIM_DCHECK(false);  // strings and containers: add, add_container
  }
  return id;
}

// The words of a print: a tag in the top byte, then a count, a flag, a string's length
// or node below it; a number's bits, or a short string's bytes, in the words after it.
// The word 0 is an absent slot.
enum PrintTag : uint64_t {
  kPrintList = 1, kPrintNull, kPrintBool, kPrintNegative, kPrintNonNegative, kPrintFloat, kPrintString, kPrintShortString
};
constexpr uint64_t print_word(PrintTag tag, uint64_t low = 0) { return PrintWords::tagged(tag, low); }

// A value other than a list: a string of up to 16 bytes by its bytes, a longer one by
// its node (one per distinct text, up to a bound: equal nodes, equal texts), an integer
// as nlohmann types it (an int64 below 0 signed, any other unsigned: the same bits, the
// same text) and its bits, a float by its bits; false for an object.
inline bool JsonArena::print_leaf(dom::element e, dom::element_type type, PrintWords& out) {
  if (type != dom::element_type::STRING) ++printed_;  // a string is counted as a node (string_node) or not at all
  switch (type) {
    case dom::element_type::STRING: {
      const std::string_view text = e.get_string().value_unsafe();
      if (text.size() > 16) return out.put(print_word(kPrintString, nodes_.string_node(text)));
      uint64_t bytes[2] = {0, 0};
      std::memcpy(bytes, text.data(), text.size());
      return out.put(print_word(kPrintShortString, text.size())) && out.put(bytes[0]) && out.put(bytes[1]);
    }
    case dom::element_type::INT64: {
      const int64_t v = e.get_int64().value_unsafe();
      return out.put(print_word(v < 0 ? kPrintNegative : kPrintNonNegative)) && out.put(static_cast<uint64_t>(v));
    }
    case dom::element_type::UINT64:
      return out.put(print_word(kPrintNonNegative)) && out.put(e.get_uint64().value_unsafe());
    case dom::element_type::DOUBLE:
      return out.put(print_word(kPrintFloat)) && out.put(std::bit_cast<uint64_t>(e.get_double().value_unsafe()));
    case dom::element_type::BOOL:
      return out.put(print_word(kPrintBool, e.get_bool().value_unsafe() ? 1 : 0));
    case dom::element_type::NULL_VALUE: return out.put(print_word(kPrintNull));
    case dom::element_type::ARRAY:
    case dom::element_type::OBJECT: return false;
  }
  return false;
}

// A list by its count and its items (the count as add_container reads it).
bool JsonArena::print(dom::element e, PrintWords& out) {
  const dom::element_type type = e.type();
  if (type != dom::element_type::ARRAY) return print_leaf(e, type, out);
  const dom::array list = e.get_array().value_unsafe();
  ++printed_;
  if (!out.put(print_word(kPrintList, count_of(list)))) return false;
  for (dom::element item : list) {
    if (values() >= max_values_) {  // as add_container stops
      overflowed_ = true;
      return false;
    }
    const dom::element_type item_type = item.type();
    if (!(item_type == dom::element_type::ARRAY ? print(item, out) : print_leaf(item, item_type, out))) return false;
  }
  return true;
}

// An entry's shape slots as the parse left them (DeferredShape): printed where they can
// be (lists, strings, numbers, up to 256 words), else made as nodes at once.
class SimdShape final : public DeferredShape {
 public:
  SimdShape(EntrySlots& slots, JsonArena& arena) : slots_(slots), arena_(arena) {}

  void clear() { kept_ = {}; }
  // The value of shape key `k`; a repeated key's earlier value is made as nodes and
  // left, as the reader makes every value it meets (the last one wins).
  void keep(EntryKey k, dom::element value) {
    const size_t i = k - kKeyInputSizes;
    if (kept_[i]) (void)arena_.add(value_[i]);
    value_[i] = value;
    kept_[i] = true;
  }
  // At the entry's end: its print, and the entry's `deferred` set to this; or the
  // slots made as nodes (a value not printed), or nothing more (past the bound).
  void print_or_make() {
    const size_t before = arena_.printed();
    PrintWords out{words_.data(), words_.data() + words_.size()};
    for (size_t i = 0; i < kShapeKeys.size(); ++i) {
      if (kept_[i] ? arena_.print(value_[i], out) : out.put(0)) continue;
      arena_.set_printed(before);
      printed_ = 0;
      if (!arena_.overflowed()) make();
      return;
    }
    printed_ = arena_.printed() - before;
    print = std::span<const uint64_t>(words_.data(), out.at);
    slots_.deferred = this;
  }
  void make() const override {
    arena_.set_printed(arena_.printed() - printed_);
    for (size_t i = 0; i < kShapeKeys.size(); ++i) {
      if (!kept_[i]) continue;
      const EntryKey k = kShapeKeys[i];
      slots_.node[k] = arena_.add(value_[i]);
      slots_.present[k] = true;
    }
    slots_.arena = &arena_.view();
    slots_.deferred = nullptr;
  }

 private:
  EntrySlots& slots_;
  JsonArena& arena_;
  std::array<dom::element, kShapeKeys.size()> value_;
  std::array<bool, kShapeKeys.size()> kept_{};
  size_t printed_ = 0;
  std::array<uint64_t, 256> words_;
};

// A parser and an arena, kept on each reading thread from one dump to the next (no
// fresh allocation per file).
struct SimdBuffers {
  dom::parser parser;
  JsonArena arena;
};
static_assert(kJsonReadPadding >= simdjson::SIMDJSON_PADDING);
thread_local SimdBuffers t_simd;

// The entries list: its objects to slots naming their values' nodes in `arena`
// (numbered among the objects), its other items kept in `rest`, as the SAX pass keeps them.
bool read_entries(dom::array list, json& rest, JsonArena& arena, const DumpSax::EntrySink& on_entry) {
  EntrySlots slots;
  SimdShape shape(slots, arena);
  size_t index = 0;
  for (dom::element item : list) {
    if (!item.is_object()) {
      rest.push_back(to_json(item));
      continue;
    }
    slots.clear();
    shape.clear();
    for (dom::key_value_pair field : dom::object(item)) {
      const EntryKey k = entry_key(field.key);
      if (k == kEntryKeyCount) continue;
      if (is_shape_key(k)) {
        shape.keep(k, field.value);
        continue;
      }
      slots.node[k] = arena.add(field.value);
      slots.present[k] = true;
    }
    shape.print_or_make();
    if (arena.overflowed()) return false;
    slots.arena = &arena.view();
    on_entry(index++, slots);
  }
  return true;
}

}  // namespace

std::optional<json> read_dump_simd(const std::string& text, const DumpSax::EntrySink& on_entry,
                                   const std::function<void()>& on_reset, size_t max_values) {
  if (json_has_negative_zero(text)) return std::nullopt;
  SimdBuffers& b = t_simd;
  dom::element doc;
  // In place when `text` has the padding allocated (the read workers' buffers do), else a padded copy.
  if (b.parser.parse(text).get(doc) != simdjson::SUCCESS) return std::nullopt;
  if (!doc.is_object()) return to_json(doc);
  b.arena.clear(max_values);
  json root = json::object();
  for (dom::key_value_pair field : dom::object(doc)) {
    json& slot = root[std::string(field.key)];
    if (field.key == "entries" && field.value.is_array()) {  // a repeated key: the last list wins
      on_reset();
      slot = json::array();
      if (!read_entries(dom::array(field.value), slot, b.arena, on_entry)) {
        b.arena.release();  // the arena's and the parse's memory back before the SAX pass reads the file
        b.parser = dom::parser();
        return std::nullopt;
      }
    } else {
      slot = to_json(field.value);
    }
  }
  return root;
}

}  // namespace fleetsim::diagnose
