// SlotValue (slot_value.h): each question answered from a JSON value or a pickle node
// as the JSON tree the node would become answers it.
#include "sim/diagnose/slot_value.h"

namespace fleetsim::diagnose {

using pickle_detail::Kind;
using pickle_detail::Node;
using pickle_detail::Scalar;

namespace {

bool scalar_of(const Node* n, Scalar type) { return n->kind == Kind::kScalar && n->type == type; }

}  // namespace

bool SlotValue::is_null() const { return json_ ? json_->is_null() : arena_ && scalar_of(node(), Scalar::kNull); }

bool SlotValue::is_boolean() const { return json_ ? json_->is_boolean() : arena_ && scalar_of(node(), Scalar::kBool); }

bool SlotValue::is_number_unsigned() const {
  return json_ ? json_->is_number_unsigned() : arena_ && scalar_of(node(), Scalar::kUint);
}

bool SlotValue::is_number_integer() const {
  if (json_) return json_->is_number_integer();
  return arena_ && (scalar_of(node(), Scalar::kInt) || scalar_of(node(), Scalar::kUint));
}

bool SlotValue::is_number_float() const {
  return json_ ? json_->is_number_float() : arena_ && scalar_of(node(), Scalar::kFloat);
}

bool SlotValue::is_number() const { return is_number_integer() || is_number_float(); }

bool SlotValue::is_string() const { return json_ ? json_->is_string() : arena_ && node()->is_string(); }

bool SlotValue::is_array() const {
  if (json_) return json_->is_array();
  return arena_ && node()->kind != Kind::kScalar && node()->kind != Kind::kDict;
}

bool SlotValue::is_object() const { return json_ ? json_->is_object() : arena_ && node()->kind == Kind::kDict; }

bool SlotValue::get_bool() const { return json_ ? json_->get<bool>() : node()->flag; }

int64_t SlotValue::get_int() const {
  if (json_) return json_->get<int64_t>();
  return node()->type == Scalar::kUint ? static_cast<int64_t>(node()->num.u) : node()->num.i;
}

uint64_t SlotValue::get_uint() const { return json_ ? json_->get<uint64_t>() : node()->num.u; }

double SlotValue::get_double() const {
  if (json_) return json_->get<double>();
  switch (node()->type) {
    case Scalar::kInt: return static_cast<double>(node()->num.i);
    case Scalar::kUint: return static_cast<double>(node()->num.u);
    default: return node()->num.d;
  }
}

std::string_view SlotValue::get_string() const {
  return json_ ? std::string_view(json_->get_ref<const std::string&>()) : node()->text;
}

size_t SlotValue::size() const { return json_ ? json_->size() : node()->count; }

SlotValue SlotValue::item(size_t i) const {
  if (json_) return SlotValue(&(*json_)[i]);
  return SlotValue(arena_, arena_->items_of(*node())[i]);
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

const void* SlotValue::identity() const { return json_ ? static_cast<const void*>(json_) : node(); }

}  // namespace fleetsim::diagnose
