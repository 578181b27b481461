// The pickle reader's value nodes (pickle_machine.h builds them): a scalar, or a
// container whose items are a range of one item pool. PickleArena lets a reader
// outside the machine (slot_value.h) read a run's finished nodes in place.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fleetsim::diagnose::pickle_detail {

enum class Kind : uint8_t { kScalar, kList, kTuple, kDict, kSet, kFrozenSet };

constexpr const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kScalar: return "scalar";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
    case Kind::kSet: return "set";
    case Kind::kFrozenSet: return "frozenset";
  }
  return "value";
}

// What a kScalar node holds. Strings and bytes are views into the file's bytes (a
// BINUNICODE's text is raw UTF-8 there); JSON is built only where a value is copied out.
enum class Scalar : uint8_t { kNull, kBool, kInt, kUint, kFloat, kString, kBytes };

struct Node {
  Kind kind = Kind::kScalar;
  Scalar type = Scalar::kNull;    // for kScalar
  bool flag = false;              // kBool
  // Containers, once the walk (pickle_tree.cc) has gone through the whole subtree
  // without error: its height in containers (0 until then) and the budget it spent.
  uint32_t walked_height = 0;
  uint64_t at = 0;                // byte offset of the opcode that made it
  union {
    int64_t i;
    uint64_t u;
    double d;
  } num{};                        // kInt, kUint, kFloat
  std::string_view text;          // kString, kBytes: into the file's bytes
  // Containers: items [first, first + count) of the machine's one item pool, room for
  // `room` there; a dict's are key, value, key, value ...
  uint32_t first = 0, count = 0, room = 0;
  uint32_t walked_cost = 0;       // with walked_height: the budget units the subtree spends

  bool is_string() const { return kind == Kind::kScalar && type == Scalar::kString; }
};
static_assert(sizeof(Node) == 56, "the walk's memory sits in the node's padding");

// A scalar node's value as JSON (bytes as JSON binary).
nlohmann::json scalar_json(const Node& n);

// A dict key as the JSON object key it becomes: strings as they are, numbers,
// booleans and None as Python prints them; nullopt for a key no dict may have.
std::optional<std::string> key_text(const Node& n);

// A finished run's nodes and item pool, read in place (nothing is added after STOP).
struct PickleArena {
  const Node* nodes = nullptr;
  const uint32_t* items = nullptr;

  const Node& node(uint32_t id) const { return nodes[id]; }
  std::span<const uint32_t> items_of(const Node& n) const { return {items + n.first, n.count}; }
  // Node `id` as the JSON tree the walk (pickle_tree.cc) builds for it; only for a node
  // that walk has already checked (no cycles, within the depth bound).
  nlohmann::json to_json(uint32_t id) const;
};

}  // namespace fleetsim::diagnose::pickle_detail
