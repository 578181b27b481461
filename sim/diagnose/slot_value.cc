// SlotValue (slot_value.h): each question answered from a JSON value or a pickle node
// as the JSON tree the node would become answers it.
#include "sim/diagnose/slot_value.h"

#include <cstring>
#include <functional>

#include "sim/diagnose/symbol.h"

namespace fleetsim::diagnose {

using pickle_detail::Node;
using pickle_detail::Scalar;

double SlotValue::get_double() const {
  if (json_) return json_->get<double>();
  switch (node()->type) {
    case Scalar::kInt: return static_cast<double>(node()->num.i);
    case Scalar::kUint: return static_cast<double>(node()->num.u);
    default: return node()->num.d;
  }
}

SlotValue SlotValue::find(std::string_view key) const {
  if (json_) {
    auto it = json_->find(key);
    return it == json_->end() ? SlotValue() : SlotValue(&*it);
  }
  const std::span<const uint32_t> list = arena_->items_of(*node());
  SlotValue found;
  for (size_t k = 0; k + 1 < list.size(); k += 2) {
    const Node& name = arena_->node(list[k]);
    const bool match = name.is_string() ? name.text == key : pickle_detail::key_text(name) == key;
    if (match) found = SlotValue(arena_, list[k + 1]);
  }
  return found;
}

nlohmann::json SlotValue::to_json() const {
  if (json_) return *json_;
  return arena_ ? arena_->to_json(node_) : nlohmann::json();
}

namespace {

// A value's type as the JSON tree has it: what same_value and hash_value compare first.
enum class ValueType : uint8_t { kAbsent, kNull, kBool, kInt, kUint, kFloat, kString, kArray, kOther };

// A pickle node's type, read from its kind and scalar type at once.
ValueType node_type(const Node& n) {
  if (n.kind == pickle_detail::Kind::kDict) return ValueType::kOther;
  if (n.kind != pickle_detail::Kind::kScalar) return ValueType::kArray;
  switch (n.type) {
    case Scalar::kNull: return ValueType::kNull;
    case Scalar::kBool: return ValueType::kBool;
    case Scalar::kInt: return ValueType::kInt;
    case Scalar::kUint: return ValueType::kUint;
    case Scalar::kFloat: return ValueType::kFloat;
    case Scalar::kString: return ValueType::kString;
    case Scalar::kBytes: return ValueType::kOther;
  }
  return ValueType::kOther;
}

ValueType type_of(const SlotValue& v) {
  if (const Node* n = v.node()) return node_type(*n);
  if (!v) return ValueType::kAbsent;
  if (v.is_null()) return ValueType::kNull;
  if (v.is_boolean()) return ValueType::kBool;
  if (v.is_number_unsigned()) return ValueType::kUint;
  if (v.is_number_integer()) return ValueType::kInt;
  if (v.is_number_float()) return ValueType::kFloat;
  if (v.is_string()) return ValueType::kString;
  if (v.is_array()) return ValueType::kArray;
  return ValueType::kOther;  // objects and bytes: compared by their JSON text
}

// hash_value of a pickle node, read straight from the arena (the same numbers).
size_t node_hash(const pickle_detail::PickleArena& arena, uint32_t id, size_t h) {
  const Node& n = arena.node(id);
  const ValueType t = node_type(n);
  h = hash_mix(h, static_cast<uint64_t>(t));
  switch (t) {
    case ValueType::kArray:
      for (uint32_t item : arena.items_of(n)) h = node_hash(arena, item, h);
      return h;
    case ValueType::kInt: return hash_mix(h, static_cast<uint64_t>(n.num.i));
    case ValueType::kUint: return hash_mix(h, n.num.u);
    case ValueType::kString: return hash_mix(h, std::hash<std::string_view>{}(n.text));
    case ValueType::kBool: return hash_mix(h, n.flag);
    case ValueType::kOther: return hash_mix(h, std::hash<std::string>{}(SlotValue(&arena, id).dump()));
    default: return h;
  }
}

// same_value of two nodes of one arena, read straight from it: a node is itself.
bool same_node(const pickle_detail::PickleArena& arena, uint32_t a, uint32_t b) {
  if (a == b) return true;
  const Node& x = arena.node(a);
  const Node& y = arena.node(b);
  const ValueType t = node_type(x);
  if (t != node_type(y)) return false;
  switch (t) {
    case ValueType::kNull: return true;
    case ValueType::kBool: return x.flag == y.flag;
    case ValueType::kInt:
    case ValueType::kUint:
    case ValueType::kFloat: return x.num.u == y.num.u;  // floats bit for bit, as memcmp
    case ValueType::kString: return x.text == y.text;
    case ValueType::kArray: {
      if (x.count != y.count) return false;
      const std::span<const uint32_t> xs = arena.items_of(x), ys = arena.items_of(y);
      for (size_t i = 0; i < xs.size(); ++i)
        if (!same_node(arena, xs[i], ys[i])) return false;
      return true;
    }
    default: return SlotValue(&arena, a).dump() == SlotValue(&arena, b).dump();
  }
}

}  // namespace

bool same_value(const SlotValue& a, const SlotValue& b) {
  if (a.arena() && a.arena() == b.arena()) return same_node(*a.arena(), a.node_id(), b.node_id());
  if (a.identity() && a.identity() == b.identity()) return true;
  const ValueType t = type_of(a);
  if (t != type_of(b)) return false;
  switch (t) {
    case ValueType::kAbsent:
    case ValueType::kNull: return true;
    case ValueType::kBool: return a.get_bool() == b.get_bool();
    case ValueType::kInt: return a.get_int() == b.get_int();
    case ValueType::kUint: return a.get_uint() == b.get_uint();
    case ValueType::kFloat: {
      const double x = a.get_double(), y = b.get_double();
      return std::memcmp(&x, &y, sizeof x) == 0;
    }
    case ValueType::kString: return a.get_string() == b.get_string();
    case ValueType::kArray: {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!same_value(a.item(i), b.item(i))) return false;
      return true;
    }
    case ValueType::kOther: return a.dump() == b.dump();
  }
  return false;
}

size_t hash_value(const SlotValue& v, size_t h) {
  if (v.arena()) return node_hash(*v.arena(), v.node_id(), h);
  const ValueType t = type_of(v);
  h = hash_mix(h, static_cast<uint64_t>(t));
  switch (t) {
    case ValueType::kArray:
      for (size_t i = 0; i < v.size(); ++i) h = hash_value(v.item(i), h);
      return h;
    case ValueType::kInt: return hash_mix(h, static_cast<uint64_t>(v.get_int()));
    case ValueType::kUint: return hash_mix(h, v.get_uint());
    case ValueType::kString: return hash_mix(h, std::hash<std::string_view>{}(v.get_string()));
    case ValueType::kBool: return hash_mix(h, v.get_bool());
    case ValueType::kOther: return hash_mix(h, std::hash<std::string>{}(v.dump()));  // rare: objects, bytes
    default: return h;  // null, absent, floats
  }
}

}  // namespace fleetsim::diagnose
