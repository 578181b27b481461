// SlotValue (slot_value.h): each question answered from a JSON value or a pickle node
// as the JSON tree the node would become answers it.
#include "sim/diagnose/slot_value.h"

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

}  // namespace fleetsim::diagnose
