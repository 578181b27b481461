// Copies a value of the node arena out into a JSON tree, iteratively (an explicit
// path, no recursion): the value a pickle holds, or one item of its biggest list. A container that holds
// itself, a path deeper than the depth bound, or shared memo references that
// would expand past the budget are refused at the byte that made the node.
#include <algorithm>

#include "sim/diagnose/pickle_machine.h"

namespace fleetsim::diagnose::pickle_detail {

using nlohmann::json;

namespace {

constexpr uint64_t kValueCost = 16;               // budget units per value copied out
constexpr uint64_t kExpandSlack = uint64_t{16} << 20;  // budget units every pickle has

// A dict key as text: strings as they are, numbers, booleans and None as Python prints them.
std::optional<std::string> key_text(const Node& n) {
  if (n.kind != Kind::kScalar) return std::nullopt;
  const json& v = n.scalar;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_null()) return "None";
  if (v.is_number()) return v.dump();
  return std::nullopt;
}

uint64_t cost_of(const Node& n) {
  if (n.kind != Kind::kScalar) return kValueCost;
  if (n.scalar.is_string()) return kValueCost + n.scalar.get_ref<const std::string&>().size();
  if (n.scalar.is_binary()) return kValueCost + n.scalar.get_binary().size();
  return kValueCost;
}

struct Frame {
  uint32_t node;
  size_t next = 0;
  json value;
  std::string key;  // a dict's key whose value is being copied
};

}  // namespace

std::optional<std::vector<uint32_t>> Machine::list_at(uint32_t id, std::string_view key) const {
  const Node& dict = nodes_[id];
  if (dict.kind != Kind::kDict) return std::nullopt;
  std::optional<std::vector<uint32_t>> found;
  for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {  // the last of repeated keys wins
    const Node& name = nodes_[dict.items[k]];
    if (name.kind != Kind::kScalar || !name.scalar.is_string() || name.scalar.get_ref<const std::string&>() != key)
      continue;
    const Node& value = nodes_[dict.items[k + 1]];
    found = value.kind == Kind::kList || value.kind == Kind::kTuple ? std::optional(value.items) : std::nullopt;
  }
  return found;
}

Result<json> Machine::to_json(uint32_t root, std::string_view omit_key) {
  const uint64_t budget = std::min<uint64_t>(UINT64_MAX / 2, limits_.expand_factor * bytes_.size()) + kExpandSlack;
  uint64_t& spent = spent_;
  on_path_.resize(nodes_.size(), 0);
  std::vector<uint8_t>& on_path = on_path_;
  std::vector<Frame> path;
  json result;
  auto emit = [&](json v) {
    if (path.empty()) {
      result = std::move(v);
      return;
    }
    Frame& parent = path.back();
    if (parent.value.is_object()) parent.value[parent.key] = std::move(v);
    else parent.value.push_back(std::move(v));
  };
  // Starts copying node `id` into the frame on top of the path.
  auto visit = [&](uint32_t id) {
    const Node& n = nodes_[id];
    spent += cost_of(n);
    if (spent > budget)
      return fail(n.at, "the values shared through the memo expand past " + std::to_string(limits_.expand_factor) +
                            " times the file's size: refused as too large");
    if (n.kind == Kind::kScalar) {
      emit(n.scalar);
      return true;
    }
    if (on_path[id]) return fail(n.at, "a " + std::string(kind_name(n.kind)) + " that holds itself: refused");
    if (path.size() >= limits_.max_depth)
      return fail(n.at, "containers nested deeper than " + std::to_string(limits_.max_depth) + ": refused");
    on_path[id] = 1;
    path.push_back({id, 0, n.kind == Kind::kDict ? json::object() : json::array(), {}});
    return true;
  };
  if (!visit(root)) return *error_;
  while (!path.empty()) {
    Frame& f = path.back();
    const Node& n = nodes_[f.node];
    if (f.next >= n.items.size()) {
      json done = std::move(f.value);
      on_path[f.node] = 0;
      path.pop_back();
      emit(std::move(done));
      continue;
    }
    if (n.kind == Kind::kDict) {
      const Node& key = nodes_[n.items[f.next]];
      std::optional<std::string> text = key_text(key);
      if (!text)
        return *(fail(key.at, std::string("a dict key must be a string or a number, got a ") +
                                  (key.scalar.is_binary() ? "bytes" : kind_name(key.kind))),
                 error_);
      ++f.next;
      if (path.size() == 1 && !omit_key.empty() && *text == omit_key) {
        ++f.next;  // its value is handed out elsewhere
        continue;
      }
      f.key = std::move(*text);
    }
    if (!visit(n.items[f.next++])) return *error_;
  }
  return result;
}

}  // namespace fleetsim::diagnose::pickle_detail
