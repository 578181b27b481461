// simdjson's read of a dump (dump_simd.h): one DOM parse per file, in place where the
// text has simdjson's padding allocated, by a parser kept per thread. The entries' known keys become nodes of a pickle-style
// arena (pickle_node.h) read in place (slot_value.h), typed as nlohmann's parser types
// them (non-negative integers unsigned, negative ones signed; an object's repeated key
// keeps its last value); the rest of the file is built as nlohmann values.
#include "sim/diagnose/dump_simd.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "fleetsim/status.h"

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

// Whether the text may hold "-0" as a number (nlohmann: a signed 0; simdjson: an int64
// 0, as for "0"): a "-0" not followed by more of a number, after a value's start
// (':', '[', ',' or the text's start, whitespace between). Such a "-0" inside a string
// counts too (the SAX pass then reads the file); PyTorch's "nccl:recv 1<-0" does not.
bool has_negative_zero(std::string_view text) {
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

// One dump's entry values as nodes (pickle_node.h), kept for the whole read of the dump:
// the record reader's caches name values by node, as a pickle's. Strings are views into
// the parser's string buffer, which lives as long (the parser is not reused meanwhile).
class JsonArena {
 public:
  void clear(size_t max_values) {
    max_values_ = max_values;
    overflowed_ = false;
    nodes_.clear();
    items_.clear();
    strings_.assign(strings_.size(), StringSlot{});
    string_count_ = 0;
  }
  // Element `e` as a node and (a container) its subtree; its id. A string or a scalar
  // (most of an entry's values) is made here, inlined in the loops over fields and items.
  uint32_t add(dom::element e) {
    const dom::element_type type = e.type();
    if (type == dom::element_type::STRING) return string_node(e.get_string().value_unsafe());
    if (type == dom::element_type::ARRAY || type == dom::element_type::OBJECT) return add_container(e, type);
    return add_scalar(e, type);
  }
  // Gives the nodes' memory back (after an overflow: the SAX pass needs the room).
  void release() {
    std::vector<pickle_detail::Node>().swap(nodes_);
    std::vector<uint32_t>().swap(items_);
  }
  // Whether the dump holds more values than the bound clear() set (its read then stops making nodes).
  bool overflowed() const { return overflowed_ || nodes_.size() > max_values_; }
  // The nodes so far, read in place; the same object all along (the vectors move as they
  // grow: the pointers are set again after each entry).
  const pickle_detail::PickleArena& view() {
    view_.nodes = nodes_.data();
    view_.items = items_.data();
    return view_;
  }

 private:
  // Room for `count` items in the pool: a container's items sit together, its children's after.
  uint32_t reserve_items(size_t count) {
    const size_t first = items_.size();
    items_.resize(first + count);
    return static_cast<uint32_t>(first);
  }

  // A string's node: one per distinct text in the dump (up to kMaxStrings of them), as
  // a pickle's memo shares its strings, so what the record reader keeps by node (a
  // string's symbol) is found again for the next entry's equal string.
  uint32_t string_node(std::string_view text);
  uint32_t add_container(dom::element e, dom::element_type type);
  uint32_t add_scalar(dom::element e, dom::element_type type);

  struct StringSlot {
    std::string_view text;
    uint32_t node = 0;
    bool used = false;
  };
  static constexpr size_t kMaxStrings = 1 << 16;
  size_t max_values_ = kMaxJsonValues;
  bool overflowed_ = false;
  std::vector<pickle_detail::Node> nodes_;
  std::vector<uint32_t> items_;
  std::vector<StringSlot> strings_;  // open addressing: a power of two of them, at most half used
  size_t string_count_ = 0;
  pickle_detail::PickleArena view_;
};

// A short string's hash: its length and its first and last (up to) 8 bytes, mixed.
uint64_t string_hash(std::string_view s) {
  uint64_t head = 0, tail = 0;
  std::memcpy(&head, s.data(), std::min<size_t>(s.size(), 8));
  if (s.size() > 8) std::memcpy(&tail, s.data() + s.size() - 8, 8);  // overlapping the head where shorter than 16
  const uint64_t h = (head ^ s.size() << 56) * 0x9e3779b97f4a7c15ULL ^ tail * 0xc2b2ae3d27d4eb4fULL;
  return h ^ h >> 29;
}

uint32_t JsonArena::string_node(std::string_view text) {
  auto fresh = [&] {
    const uint32_t id = static_cast<uint32_t>(nodes_.size());
    pickle_detail::Node& n = nodes_.emplace_back();
    n.type = pickle_detail::Scalar::kString;
    n.text = text;
    return id;
  };
  if (string_count_ >= kMaxStrings) return fresh();  // a bound for dumps whose every string differs
  if ((string_count_ + 1) * 2 > strings_.size()) {
    std::vector<StringSlot> old(std::max<size_t>(1024, strings_.size() * 2));
    old.swap(strings_);
    for (const StringSlot& s : old) {
      if (!s.used) continue;
      size_t i = string_hash(s.text) & (strings_.size() - 1);
      while (strings_[i].used) i = (i + 1) & (strings_.size() - 1);
      strings_[i] = s;
    }
  }
  size_t i = string_hash(text) & (strings_.size() - 1);
  for (; strings_[i].used; i = (i + 1) & (strings_.size() - 1))
    if (same_text(strings_[i].text, text)) return strings_[i].node;
  const uint32_t id = fresh();
  strings_[i] = StringSlot{text, id, true};
  ++string_count_;
  return id;
}

// A container's item count: simdjson's size saturates at 0xFFFFFF.
template <class Container>
size_t count_of(Container c) {
  size_t n = c.size();
  if (n < 0xFFFFFF) return n;
  n = 0;
  for ([[maybe_unused]] auto item : c) ++n;
  return n;
}

// Each node is made in place in the vector (a node built aside and copied in stalls on
// its partly written bytes), its fields set before the children move the vector. The
// element's type is known, so its value is taken unchecked (value_unsafe).
uint32_t JsonArena::add_container(dom::element e, dom::element_type type) {
  using pickle_detail::Kind;
  const uint32_t id = static_cast<uint32_t>(nodes_.size());
  pickle_detail::Node& n = nodes_.emplace_back();
  if (type == dom::element_type::ARRAY) {
    const dom::array list = e.get_array().value_unsafe();
    const uint32_t count = static_cast<uint32_t>(count_of(list));
    uint32_t at = reserve_items(count);
    n.kind = Kind::kList;
    n.first = at;
    n.count = n.room = count;
    for (dom::element item : list) {
      if (nodes_.size() >= max_values_) {  // a list of millions of values: the SAX pass reads the file
        overflowed_ = true;
        return id;
      }
      const uint32_t child = add(item);
      items_[at++] = child;
    }
    return id;
  }
  // An object: key, value, key, value ... (the last of repeated keys wins)
  const dom::object fields = e.get_object().value_unsafe();
  const uint32_t count = static_cast<uint32_t>(2 * count_of(fields));
  uint32_t at = reserve_items(count);
  n.kind = Kind::kDict;
  n.first = at;
  n.count = n.room = count;
  for (dom::key_value_pair field : fields) {
    if (nodes_.size() >= max_values_) {
      overflowed_ = true;
      return id;
    }
    const uint32_t key = string_node(field.key);
    items_[at++] = key;
    const uint32_t value = add(field.value);
    items_[at++] = value;
  }
  return id;
}

inline uint32_t JsonArena::add_scalar(dom::element e, dom::element_type type) {
  using pickle_detail::Scalar;
  const uint32_t id = static_cast<uint32_t>(nodes_.size());
  pickle_detail::Node& n = nodes_.emplace_back();
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
  size_t index = 0;
  for (dom::element item : list) {
    if (!item.is_object()) {
      rest.push_back(to_json(item));
      continue;
    }
    slots.clear();
    for (dom::key_value_pair field : dom::object(item)) {
      const EntryKey k = entry_key(field.key);
      if (k == kEntryKeyCount) continue;
      slots.node[k] = arena.add(field.value);
      slots.present[k] = true;
    }
    if (arena.overflowed()) return false;
    slots.arena = &arena.view();
    on_entry(index++, slots);
  }
  return true;
}

}  // namespace

std::optional<json> read_dump_simd(const std::string& text, const DumpSax::EntrySink& on_entry,
                                   const std::function<void()>& on_reset, size_t max_values) {
  if (has_negative_zero(text)) return std::nullopt;
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
