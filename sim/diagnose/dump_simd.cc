// simdjson's read of a dump (dump_simd.h): one DOM parse per file into a parser and a
// padded buffer kept per thread, then a walk that builds the values nlohmann's parser
// would build (non-negative integers unsigned, negative ones signed; an object's
// repeated key keeps its last value) and files the entries' known keys into slots.
#include "sim/diagnose/dump_simd.h"

#include <cstring>
#include <memory>
#include <string_view>

#include <simdjson.h>

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

// A parser and a padded copy of the text, kept on each reading thread from one dump
// to the next (no fresh allocation per file).
struct SimdBuffers {
  dom::parser parser;
  std::unique_ptr<char[]> text;
  size_t capacity = 0;
};
thread_local SimdBuffers t_simd;

// The entries list: its objects to slots (numbered among the objects), its other
// items kept in `rest`, as the SAX pass keeps them.
void read_entries(dom::array list, json& rest, const DumpSax::EntrySink& on_entry) {
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
      slots.value[k] = to_json(field.value);
      slots.present[k] = true;
    }
    on_entry(index++, slots);
  }
}

}  // namespace

std::optional<json> read_dump_simd(const std::string& text, const DumpSax::EntrySink& on_entry,
                                   const std::function<void()>& on_reset) {
  if (has_negative_zero(text)) return std::nullopt;
  SimdBuffers& b = t_simd;
  if (b.capacity < text.size() + simdjson::SIMDJSON_PADDING) {
    b.capacity = text.size() + simdjson::SIMDJSON_PADDING;
    b.text.reset(new char[b.capacity]);
  }
  std::memcpy(b.text.get(), text.data(), text.size());
  std::memset(b.text.get() + text.size(), 0, simdjson::SIMDJSON_PADDING);
  dom::element doc;
  if (b.parser.parse(b.text.get(), text.size(), false).get(doc) != simdjson::SUCCESS) return std::nullopt;
  if (!doc.is_object()) return to_json(doc);
  json root = json::object();
  for (dom::key_value_pair field : dom::object(doc)) {
    json& slot = root[std::string(field.key)];
    if (field.key == "entries" && field.value.is_array()) {  // a repeated key: the last list wins
      on_reset();
      slot = json::array();
      read_entries(dom::array(field.value), slot, on_entry);
    } else {
      slot = to_json(field.value);
    }
  }
  return root;
}

}  // namespace fleetsim::diagnose
