// One value of an entry's slot (dump_sax.h), read in place wherever it lives: a JSON
// value (the JSON reader's) or a node of a pickle's arena (pickle_node.h). The record
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

  bool is_null() const;
  bool is_boolean() const;
  bool is_number() const;
  bool is_number_integer() const;  // signed or unsigned
  bool is_number_unsigned() const;
  bool is_number_float() const;
  bool is_string() const;
  bool is_array() const;   // a list, tuple, set or frozenset
  bool is_object() const;  // a dict
  bool get_bool() const;
  int64_t get_int() const;    // an integer's value (unsigned ones cast, as nlohmann does)
  uint64_t get_uint() const;  // an unsigned integer's value
  double get_double() const;  // a number's value
  std::string_view get_string() const;  // a string's text: a view, valid as long as the value
  size_t size() const;                  // an array's items
  SlotValue item(size_t i) const;
  // An object's value at `key` (the last of repeated keys); absent if none.
  SlotValue find(std::string_view key) const;

  nlohmann::json to_json() const;  // the value as a tree (a pickle node's is built)
  std::string dump() const { return to_json().dump(); }
  // The same pointer for the same value: a JSON value's address, a pickle node's entry.
  const void* identity() const;
  const pickle_detail::Node* node() const { return arena_ ? &arena_->node(node_) : nullptr; }

 private:
  const nlohmann::json* json_ = nullptr;
  const pickle_detail::PickleArena* arena_ = nullptr;
  uint32_t node_ = 0;
};

}  // namespace fleetsim::diagnose
