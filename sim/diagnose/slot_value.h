// One value of an entry's slot (dump_sax.h), read in place wherever it lives: a JSON
// value (the SAX pass's) or a node of an arena (pickle_node.h: a pickle's, or simdjson's
// read of a JSON dump, dump_simd.h). The record
// reader's rules read both through this one interface, each answer the same as the
// JSON tree the pickle would become (nlohmann's typing: "integer" covers unsigned).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sim/diagnose/pickle_node.h"

namespace fleetsim::diagnose {

class SlotValue {
 public:
  SlotValue() = default;  // absent
  explicit SlotValue(const nlohmann::json* v) : json_(v) {}
  SlotValue(const pickle_detail::PickleArena* arena, uint32_t node) : arena_(arena), node_(node) {}

  bool present() const { return json_ || arena_; }
  explicit operator bool() const { return present(); }

  bool is_null() const { return json_ ? json_->is_null() : arena_ && scalar(Scalar::kNull); }
  bool is_boolean() const { return json_ ? json_->is_boolean() : arena_ && scalar(Scalar::kBool); }
  bool is_number() const { return is_number_integer() || is_number_float(); }
  bool is_number_integer() const {  // signed or unsigned
    return json_ ? json_->is_number_integer() : arena_ && (scalar(Scalar::kInt) || scalar(Scalar::kUint));
  }
  bool is_number_unsigned() const { return json_ ? json_->is_number_unsigned() : arena_ && scalar(Scalar::kUint); }
  bool is_number_float() const { return json_ ? json_->is_number_float() : arena_ && scalar(Scalar::kFloat); }
  bool is_string() const { return json_ ? json_->is_string() : arena_ && node()->is_string(); }
  bool is_array() const {  // a list, tuple, set or frozenset
    return json_ ? json_->is_array() : arena_ && node()->kind != Kind::kScalar && node()->kind != Kind::kDict;
  }
  bool is_object() const { return json_ ? json_->is_object() : arena_ && node()->kind == Kind::kDict; }
  bool get_bool() const { return json_ ? json_->get<bool>() : node()->flag; }
  int64_t get_int() const {  // an integer's value (unsigned ones cast, as nlohmann does)
    if (json_) return json_->get<int64_t>();
    return node()->type == Scalar::kUint ? static_cast<int64_t>(node()->num.u) : node()->num.i;
  }
  uint64_t get_uint() const { return json_ ? json_->get<uint64_t>() : node()->num.u; }
  double get_double() const;  // a number's value
  std::string_view get_string() const {  // a string's text: a view, valid as long as the value
    return json_ ? std::string_view(json_->get_ref<const std::string&>()) : node()->text;
  }
  size_t size() const { return json_ ? json_->size() : node()->count; }  // an array's items
  SlotValue item(size_t i) const {
    if (json_) return SlotValue(&(*json_)[i]);
    return SlotValue(arena_, arena_->items_of(*node())[i]);
  }
  // An object's value at `key` (the last of repeated keys); absent if none.
  SlotValue find(std::string_view key) const;

  nlohmann::json to_json() const;  // the value as a tree (a pickle node's is built)
  std::string dump() const { return to_json().dump(); }
  // The same pointer for the same value: a JSON value's address, a pickle node's entry.
  const void* identity() const { return json_ ? static_cast<const void*>(json_) : node(); }
  const pickle_detail::Node* node() const { return arena_ ? &arena_->node(node_) : nullptr; }
  const pickle_detail::PickleArena* arena() const { return arena_; }  // a pickle node's, else null
  uint32_t node_id() const { return node_; }  // a pickle node's index in its arena

 private:
  using Kind = pickle_detail::Kind;
  using Scalar = pickle_detail::Scalar;
  bool scalar(Scalar type) const { return node()->kind == Kind::kScalar && node()->type == type; }

  const nlohmann::json* json_ = nullptr;
  const pickle_detail::PickleArena* arena_ = nullptr;
  uint32_t node_ = 0;
};

// Whether two values dump to the same JSON text: same types all the way down (an
// integer and an equal float dump differently), floats bit for bit, objects and bytes
// by text.
bool same_value(const SlotValue& a, const SlotValue& b);

// A hash consistent with same_value, from the values' numbers and texts (no dump),
// mixed into `seed`.
size_t hash_value(const SlotValue& v, size_t seed);

}  // namespace fleetsim::diagnose
