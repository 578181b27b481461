// The template reader of a JSON dump (dump_template.h).
#include "sim/diagnose/dump_template.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

#include "sim/diagnose/json_nodes.h"

namespace fleetsim::diagnose {

using nlohmann::json;

namespace {

using pickle_detail::Kind;
using pickle_detail::Node;
using pickle_detail::Scalar;

// Deeper values are left to simdjson's read (whose bound is 1024).
constexpr int kMaxDepth = 64;
// Larger files too (simdjson's bound is 4 GiB).
constexpr size_t kMaxText = size_t{1} << 30;

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
// A byte that may follow a number or a literal: JSON whitespace or a structural character.
inline bool ends_token(char c) { return is_space(c) || c == ',' || c == '}' || c == ']'; }

// One place of an entry (a key and its value) as the entries before met it.
struct Field {
  // A value's text and node, and the values its nodes stand for (the bound counts them).
  struct Seen {
    std::string_view text;
    uint32_t node = 0;
    uint32_t values = 0;
    bool closed = false;  // the text ends the value ('"', ']' or '}'); a number or literal needs a byte that ends it
  };
  std::string_view sep;  // from the previous value's end (or past the entry's '{') to this value's start
  EntryKey key = kEntryKeyCount;
  std::array<Seen, 2> seen;  // the last two values met here, the latest first
};

// The shape slots' print (DeferredShape): their nodes. Equal nodes are equal values.
class NodeShape final : public DeferredShape {
 public:
  explicit NodeShape(EntrySlots& slots) : slots_(slots) {}
  void set() {
    for (size_t i = 0; i < kShapeKeys.size(); ++i)
      words_[i] = slots_.present[kShapeKeys[i]] ? uint64_t{slots_.node[kShapeKeys[i]]} + 1 : 0;
    print = std::span<const uint64_t>(words_.data(), words_.size());
    slots_.deferred = this;
  }
  void make() const override { slots_.deferred = nullptr; }  // the slots are nodes already

 private:
  EntrySlots& slots_;
  std::array<uint64_t, kShapeKeys.size()> words_{};
};

class TemplateReader {
 public:
  TemplateReader(const std::string& text, JsonNodes& nodes, size_t max_values)
      : end_(text.data() + text.size()), nodes_(nodes), max_values_(max_values) {}

  const char* skip_space(const char* p) const {
    while (p < end_ && is_space(*p)) ++p;
    return p;
  }

  // A string at p ('"'): its text, and the place past it; null for an escape, a
  // control byte or a byte past ASCII (simdjson's read checks those).
  const char* string(const char* p, std::string_view& out) const {
    for (const char* q = p + 1; q < end_; ++q) {
      const unsigned char c = static_cast<unsigned char>(*q);
      if (c == '"') {
        out = std::string_view(p + 1, static_cast<size_t>(q - p - 1));
        return q + 1;
      }
      if (c == '\\' || c < 0x20 || c >= 0x80) return nullptr;
    }
    return nullptr;
  }

  // The value at p as nodes, its node in `id`; the place past it, or null.
  const char* value(const char* p, uint32_t& id, int depth) {
    if (p == end_ || ++values_ >= max_values_) return nullptr;
    switch (*p) {
      case '"': {
        std::string_view text;
        const char* q = string(p, text);
        if (q) id = nodes_.string_node(text);
        return q;
      }
      case '[': return container(p, id, depth + 1, Kind::kList);
      case '{': return container(p, id, depth + 1, Kind::kDict);
      case 't': return literal(p, "true", id, Scalar::kBool, true);
      case 'f': return literal(p, "false", id, Scalar::kBool, false);
      case 'n': return literal(p, "null", id, Scalar::kNull, false);
      default: return number(p, id);
    }
  }

  // The top-level `entries` list at p ('['), each object's slots to `on_entry`.
  const char* entries(const char* p, const DumpSax::EntrySink& on_entry) {
    EntrySlots slots;
    NodeShape shape(slots);
    p = skip_space(p + 1);
    if (p < end_ && *p == ']') return p + 1;
    for (size_t index = 0;; ++index) {
      if (p == end_ || *p != '{') return nullptr;  // an item not an object: simdjson's read keeps it in the root
      slots.clear();
      p = entry(p + 1, slots);
      if (!p || values_ >= max_values_) return nullptr;
      shape.set();
      slots.arena = &nodes_.view();
      on_entry(index, slots);
      p = skip_space(p);
      if (p == end_) return nullptr;
      if (*p == ']') return p + 1;
      if (*p != ',') return nullptr;
      p = skip_space(p + 1);
    }
  }

 private:
  // Whether the text at p starts with `s`.
  bool at(const char* p, std::string_view s) const {
    return static_cast<size_t>(end_ - p) >= s.size() && same_text(std::string_view(p, s.size()), s);
  }

  const char* literal(const char* p, std::string_view word, uint32_t& id, Scalar type, bool flag) {
    if (!at(p, word) || static_cast<size_t>(end_ - p) == word.size() || !ends_token(p[word.size()])) return nullptr;
    Node& n = nodes_.push(id);
    n.type = type;
    n.flag = flag;
    return p + word.size();
  }

  // A number as nlohmann types it: an integer below 0 signed, any other unsigned (both
  // within 64 bits: past them simdjson's read refuses it and the SAX pass reads a
  // double), a fraction or exponent a double. "-0" is the SAX pass's (it stays signed).
  const char* number(const char* p, uint32_t& id) {
    const char* q = p;
    const bool negative = *q == '-';
    if (negative) ++q;
    if (q == end_ || !is_digit(*q)) return nullptr;
    const char* digits = q;
    if (*q == '0') {
      ++q;
    } else {
      while (q < end_ && is_digit(*q)) ++q;
    }
    const char* digits_end = q;
    bool fraction = false;
    if (q < end_ && *q == '.') {
      fraction = true;
      if (++q == end_ || !is_digit(*q)) return nullptr;
      while (q < end_ && is_digit(*q)) ++q;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      fraction = true;
      if (++q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q == end_ || !is_digit(*q)) return nullptr;
      while (q < end_ && is_digit(*q)) ++q;
    }
    if (q == end_ || !ends_token(*q) || q - p > 64) return nullptr;
    if (fraction) {
      double d = 0;
      const std::from_chars_result r = std::from_chars(p, q, d);
      if (r.ec != std::errc() || r.ptr != q || !std::isfinite(d)) return nullptr;
      Node& n = nodes_.push(id);
      n.type = Scalar::kFloat;
      n.num.d = d;
      return q;
    }
    if (digits_end - digits > 20) return nullptr;
    uint64_t v = 0;
    for (const char* d = digits; d < digits_end; ++d) {
      const uint64_t digit = static_cast<uint64_t>(*d - '0');
      if (v > (UINT64_MAX - digit) / 10) return nullptr;
      v = v * 10 + digit;
    }
    Node& n = nodes_.push(id);
    if (!negative) {
      n.type = Scalar::kUint;
      n.num.u = v;
    } else {
      if (v == 0 || v > uint64_t{1} << 63) return nullptr;
      n.type = Scalar::kInt;
      n.num.i = static_cast<int64_t>(0 - v);  // two's complement: -2^63 included
    }
    return q;
  }

  // A container's items: children_ from `base` on, moved into the pool.
  void close(uint32_t id, Kind kind, size_t base) {
    const size_t count = children_.size() - base;
    const uint32_t first = nodes_.reserve_items(count);
    for (size_t i = 0; i < count; ++i) nodes_.item(first + static_cast<uint32_t>(i)) = children_[base + i];
    children_.resize(base);
    Node& n = nodes_.node(id);
    n.kind = kind;
    n.first = first;
    n.count = n.room = static_cast<uint32_t>(count);
  }

  // A list, or an object (key, value, key, value ... as the items; a repeated key's last
  // value is read), at p ('[' or '{').
  const char* container(const char* p, uint32_t& id, int depth, Kind kind) {
    if (depth > kMaxDepth) return nullptr;
    const char closing = kind == Kind::kList ? ']' : '}';
    nodes_.push(id);
    const size_t base = children_.size();
    p = skip_space(p + 1);
    if (p < end_ && *p == closing) {
      close(id, kind, base);
      return p + 1;
    }
    for (;;) {
      if (kind == Kind::kDict) {
        std::string_view key;
        if (p == end_ || *p != '"' || !(p = string(p, key))) return nullptr;
        if (++values_ >= max_values_) return nullptr;
        children_.push_back(nodes_.string_node(key));
        p = skip_space(p);
        if (p == end_ || *p != ':') return nullptr;
        p = skip_space(p + 1);
      }
      uint32_t child = 0;
      p = value(p, child, depth);
      if (!p) return nullptr;
      children_.push_back(child);
      p = skip_space(p);
      if (p == end_) return nullptr;
      if (*p == closing) break;
      if (*p != ',') return nullptr;
      p = skip_space(p + 1);
    }
    close(id, kind, base);
    return p + 1;
  }

  // Value `id` in the entry's slot for `k`; false for a key the entry already holds
  // (simdjson's read keeps the last, and makes the first's nodes: the bound counts them).
  static bool put(EntrySlots& slots, EntryKey k, uint32_t id, uint32_t& held) {
    if (k == kEntryKeyCount) return true;
    if (held >> k & 1) return false;
    held |= uint32_t{1} << k;
    slots.node[k] = id;
    slots.present[k] = true;
    return true;
  }
  static_assert(kEntryKeyCount <= 32, "an entry's keys held as the bits of one word");

  // The value at v, as one of the last two met at field f when its text is theirs, else
  // read and kept as the latest; the place past it, or null.
  const char* field_value(Field& f, const char* v, uint32_t& id) {
    for (size_t i = 0; i < f.seen.size(); ++i) {
      const Field::Seen& s = f.seen[i];
      if (s.text.empty()) break;
      if (!at(v, s.text)) continue;
      const char* after = v + s.text.size();
      if (!s.closed && (after == end_ || !ends_token(*after))) continue;
      id = s.node;
      values_ += s.values;
      if (i > 0) std::swap(f.seen[0], f.seen[i]);
      return after;
    }
    const size_t before = values_;
    const char* after = value(v, id, 0);
    if (!after) return nullptr;
    f.seen[1] = f.seen[0];
    f.seen[0] = {std::string_view(v, static_cast<size_t>(after - v)), id, static_cast<uint32_t>(values_ - before),
                 *v == '"' || *v == '[' || *v == '{'};
    return after;
  }

  // An entry's keys and values, from past its '{' to past its '}': along the fields the
  // entry before had, as long as the text between values is theirs, then read as JSON
  // (the fields from there on taken from this entry).
  const char* entry(const char* p, EntrySlots& slots) {
    uint32_t held = 0;
    size_t i = 0;
    for (; i < fields_.size(); ++i) {
      Field& f = fields_[i];
      if (!at(p, f.sep)) break;
      uint32_t id = 0;
      p = field_value(f, p + f.sep.size(), id);
      if (!p || !put(slots, f.key, id, held)) return nullptr;
    }
    if (i == fields_.size() && !tail_.empty() && at(p, tail_)) return p + tail_.size();
    fields_.resize(i);
    for (;; ++i) {
      const char* sep = p;
      p = skip_space(p);
      if (p == end_) return nullptr;
      if (*p == '}') {
        tail_ = std::string_view(sep, static_cast<size_t>(p + 1 - sep));
        return p + 1;
      }
      if (i > 0) {
        if (*p != ',') return nullptr;
        p = skip_space(p + 1);
      }
      std::string_view key;
      if (p == end_ || *p != '"' || !(p = string(p, key))) return nullptr;
      p = skip_space(p);
      if (p == end_ || *p != ':') return nullptr;
      p = skip_space(p + 1);
      Field& f = fields_.emplace_back();
      f.sep = std::string_view(sep, static_cast<size_t>(p - sep));
      f.key = entry_key(key);
      uint32_t id = 0;
      p = field_value(f, p, id);
      if (!p || !put(slots, f.key, id, held)) return nullptr;
    }
  }

  const char* end_;
  JsonNodes& nodes_;
  size_t values_ = 0;
  size_t max_values_;
  std::vector<uint32_t> children_;  // the items of the containers being read, the innermost's last
  std::vector<Field> fields_;       // the last entry's fields
  std::string_view tail_;           // from its last value's end to its '}' inclusive (empty before the first entry)
};

// Past the value at p, not read: a string to its closing quote, a list or object to
// its closing bracket (strings inside skipped whole), anything else to the byte that
// ends it. simdjson's read of the root checks what is skipped here.
const char* skip_value(const char* p, const char* end) {
  auto past_string = [end](const char* q) -> const char* {
    for (++q; q < end; ++q) {
      if (*q == '\\') {
        ++q;
      } else if (*q == '"') {
        return q + 1;
      }
    }
    return nullptr;
  };
  if (p == end) return nullptr;
  if (*p == '"') return past_string(p);
  if (*p == '[' || *p == '{') {
    size_t depth = 0;
    while (p < end) {
      const char c = *p;
      if (c == '"') {
        if (!(p = past_string(p))) return nullptr;
        continue;
      }
      if (c == '[' || c == '{') ++depth;
      if ((c == ']' || c == '}') && --depth == 0) return p + 1;
      ++p;
    }
    return nullptr;
  }
  while (p < end && !ends_token(*p)) ++p;
  return p;
}

thread_local JsonNodes t_nodes;

// Past this many nodes a file left to the next reader gives the nodes' memory back (up
// to 56 bytes a value of the bound, 2^25 by default), so that reader has the room.
constexpr size_t kKeepNodes = size_t{1} << 20;

std::optional<json> read_root(const std::string& text, const DumpSax::EntrySink& on_entry,
                              const std::function<void()>& on_reset, size_t max_values) {
  if (text.size() > kMaxText || json_has_negative_zero(text)) return std::nullopt;
  t_nodes.clear();
  TemplateReader reader(text, t_nodes, max_values);
  const char* const begin = text.data();
  const char* const end = begin + text.size();
  const char* p = reader.skip_space(begin);
  if (p == end || *p != '{') return std::nullopt;
  p = reader.skip_space(p + 1);
  const char* list_begin = nullptr;
  const char* list_end = nullptr;
  for (;;) {  // the root's keys: `entries` read, the others skipped
    std::string_view key;
    if (p == end || *p != '"' || !(p = reader.string(p, key))) return std::nullopt;
    p = reader.skip_space(p);
    if (p == end || *p != ':') return std::nullopt;
    p = reader.skip_space(p + 1);
    if (key == "entries") {
      if (list_begin || p == end || *p != '[') return std::nullopt;  // repeated, or not a list
      list_begin = p;
      on_reset();
      p = reader.entries(p, on_entry);
      list_end = p;
    } else {
      p = skip_value(p, end);
    }
    if (!p) return std::nullopt;
    p = reader.skip_space(p);
    if (p == end) return std::nullopt;
    if (*p == '}') break;
    if (*p != ',') return std::nullopt;
    p = reader.skip_space(p + 1);
  }
  if (!list_begin || reader.skip_space(p + 1) != end) return std::nullopt;
  // The rest of the root, the entries list as `[]`, read by simdjson (padded, in place).
  std::string rest;
  rest.reserve(text.size() - static_cast<size_t>(list_end - list_begin) + 2 + kJsonReadPadding);
  rest.append(begin, list_begin).append("[]").append(list_end, end);
  return read_dump_simd(
      rest, [](size_t, const EntrySlots&) {}, [] {}, max_values);
}

}  // namespace

std::optional<json> read_dump_template(const std::string& text, const DumpSax::EntrySink& on_entry,
                                       const std::function<void()>& on_reset, size_t max_values) {
  std::optional<json> root = read_root(text, on_entry, on_reset, max_values);
  if (!root && t_nodes.size() > kKeepNodes) t_nodes.release();
  return root;
}

}  // namespace fleetsim::diagnose
