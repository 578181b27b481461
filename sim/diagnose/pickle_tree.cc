// Copies a value of the node arena out into a JSON tree, iteratively (an explicit
// path, no recursion): the value a pickle holds, or one item of its biggest list; or
// fills an entry's slots straight from the arena, building only the values of the
// keys read (an entry first by a recursion at most 8 deep, which hands anything else
// to the iterative walk). A container that holds itself, a path deeper than the depth bound, or
// shared memo references that would expand past the budget are refused at the byte
// that made the node, whether the value is built or only walked.
#include <algorithm>

#include "sim/diagnose/pickle_machine.h"

namespace fleetsim::diagnose::pickle_detail {

using nlohmann::json;

namespace {

constexpr uint64_t kValueCost = 16;               // budget units per value copied out
constexpr uint64_t kExpandSlack = uint64_t{16} << 20;  // budget units every pickle has

uint64_t cost_of(const Node& n) {
  if (n.kind != Kind::kScalar) return kValueCost;
  if (n.type == Scalar::kString || n.type == Scalar::kBytes) return kValueCost + n.text.size();
  return kValueCost;
}

// Spends the scalar items of container `list` (a dict's when `dict`) from `next` on,
// as the walk would visit them, up to the first item it must visit itself: a container
// value, a key that is not a string, or a value past the budget (the walk then finds
// the error at the same byte). Returns where it stopped. Only below a walk's root, where
// no key is omitted and nothing is built: a leaf container costs no path frame.
size_t spend_scalars(const Node* nodes, std::span<const uint32_t> list, bool dict, size_t next, uint64_t& spent,
                     uint64_t budget) {
  const size_t step = dict ? 2 : 1;
  for (; next + step <= list.size(); next += step) {
    if (dict && !nodes[list[next]].is_string()) break;
    const Node& value = nodes[list[next + step - 1]];
    if (value.kind != Kind::kScalar) break;
    const uint64_t cost = cost_of(value);
    if (spent + cost > budget) break;
    spent += cost;
  }
  return next;
}

}  // namespace

std::optional<std::string> key_text(const Node& n) {
  if (n.kind != Kind::kScalar) return std::nullopt;
  switch (n.type) {
    case Scalar::kString: return std::string(n.text);
    case Scalar::kBool: return n.flag ? "True" : "False";
    case Scalar::kNull: return "None";
    case Scalar::kInt:
    case Scalar::kUint:
    case Scalar::kFloat: return scalar_json(n).dump();
    case Scalar::kBytes: return std::nullopt;
  }
  return std::nullopt;
}

json PickleArena::to_json(uint32_t id) const {
  const Node& n = node(id);
  if (n.kind == Kind::kScalar) return scalar_json(n);
  const std::span<const uint32_t> list = items_of(n);
  if (n.kind != Kind::kDict) {
    json out = json::array();
    for (uint32_t item : list) out.push_back(to_json(item));
    return out;
  }
  json out = json::object();
  for (size_t k = 0; k + 1 < list.size(); k += 2) out[*key_text(node(list[k]))] = to_json(list[k + 1]);
  return out;
}

json scalar_json(const Node& n) {
  switch (n.type) {
    case Scalar::kNull: return json(nullptr);
    case Scalar::kBool: return json(n.flag);
    case Scalar::kInt: return json(n.num.i);
    case Scalar::kUint: return json(n.num.u);
    case Scalar::kFloat: return json(n.num.d);
    case Scalar::kString: return json(std::string(n.text));
    case Scalar::kBytes: return json::binary(std::vector<uint8_t>(n.text.begin(), n.text.end()));
  }
  return json(nullptr);
}

uint64_t Machine::walk_budget() const {
  return std::min<uint64_t>(UINT64_MAX / 2, limits_.expand_factor * bytes_.size()) + kExpandSlack;
}

std::optional<std::vector<uint32_t>> Machine::list_at(uint32_t id, std::string_view key) const {
  const Node& dict = nodes_[id];
  if (dict.kind != Kind::kDict) return std::nullopt;
  std::optional<std::vector<uint32_t>> found;
  const std::span<const uint32_t> entries = items(dict);
  for (size_t k = 0; k + 1 < entries.size(); k += 2) {  // the last of repeated keys wins
    const Node& name = nodes_[entries[k]];
    if (!name.is_string() || name.text != key)
      continue;
    const Node& value = nodes_[entries[k + 1]];
    const std::span<const uint32_t> list = items(value);
    found = value.kind == Kind::kList || value.kind == Kind::kTuple
                ? std::optional(std::vector<uint32_t>(list.begin(), list.end()))
                : std::nullopt;
  }
  return found;
}

Result<json> Machine::to_json(uint32_t root, std::string_view omit_key) {
  json result;
  if (!walk(root, omit_key, &result, nullptr)) return *error_;
  return result;
}

Result<bool> Machine::to_slots(uint32_t root, EntrySlots& slots) {
  if (slots.arena == &arena_) {
    slots.present.fill(false);  // filled here before: only nodes were filed, no JSON values
  } else {
    slots.clear();
  }
  arena_ = {nodes_.data(), items_.data()};  // the run is over: neither grows again
  slots.arena = &arena_;
  const bool dict = nodes_[root].kind == Kind::kDict;
  if (nodes_[root].kind != Kind::kScalar) {
    const uint64_t start = spent_;
    on_path_.resize(nodes_.size(), 0);
    key_slot_.resize(nodes_.size(), kUnknownSlot);  // slot_of's answers, one per node
    uint32_t height = 0;
    if (quick_walk(root, 0, walk_budget(), height, dict ? &slots : nullptr)) return dict;
    spent_ = start;  // something the quick walk does not take, or an error: the full walk finds it
    slots.present.fill(false);
  }
  key_slot_.resize(nodes_.size(), kUnknownSlot);
  if (!walk(root, {}, nullptr, &slots)) return *error_;
  return dict;
}

// to_slots' walk of node `id` (a container `depth` containers deep) by recursion, each
// node visited once: it spends and checks as walk() does and notes the walked subtrees
// (note_walked), filing `slots` from a dict's keys. False, with no error and the budget
// to be reset by the caller, where walk() must take over: at any check that would fail,
// a key that is not a string, or a path deeper than kQuickDepth. What it noted as walked
// was walked whole without error, so walk() then skips it only where it would pass.
bool Machine::quick_walk(uint32_t id, size_t depth, uint64_t budget, uint32_t& height, EntrySlots* slots) {
  constexpr size_t kQuickDepth = 8;
  if (on_path_[id] || depth >= limits_.max_depth || depth >= kQuickDepth) return false;
  const uint64_t before = spent_;
  uint64_t spent = spent_ + kValueCost;  // kept in a register; spent_ is written back before each recursion
  if (spent > budget) return false;
  on_path_[id] = 1;
  const Node& n = nodes_[id];
  const Node* nodes = nodes_.data();
  const uint32_t* list = items_.data() + n.first;
  const size_t size = n.count;
  const size_t step = n.kind == Kind::kDict ? 2 : 1;
  uint32_t below = 0;
  bool ok = true;
  for (size_t k = 0; k + step <= size; k += step) {
    if (step == 2) {
      const uint32_t key = list[k];
      if (!nodes[key].is_string()) { ok = false; break; }
      if (slots) {
        if (const EntryKey slot = slot_of(key); slot != kEntryKeyCount) {
          slots->present[slot] = true;
          slots->node[slot] = list[k + 1];
        }
      }
    }
    const uint32_t vid = list[k + step - 1];
    const Node& v = nodes[vid];
    if (v.kind == Kind::kScalar) {
      spent += cost_of(v);
      if (spent > budget) { ok = false; break; }
    } else if (v.walked_height != 0 && spent + v.walked_cost <= budget &&
               depth + 1 + v.walked_height <= limits_.max_depth) {
      spent += v.walked_cost;  // as skip_walked
      below = std::max(below, v.walked_height);
    } else {
      uint32_t h = 0;
      spent_ = spent;
      if (!quick_walk(vid, depth + 1, budget, h, nullptr)) { ok = false; break; }
      spent = spent_;
      below = std::max(below, h);
    }
  }
  spent_ = spent;
  on_path_[id] = 0;
  if (!ok || (step == 2 && size % 2 != 0)) return false;  // step is 1 or 2: no division
  height = below + 1;
  const uint64_t cost = spent - before;
  if (cost <= UINT32_MAX) {
    nodes_[id].walked_height = height;
    nodes_[id].walked_cost = static_cast<uint32_t>(cost);
  }
  return true;
}

// The slot of a dict key node that names none yet (slot_of's first look at it).
EntryKey Machine::find_slot(uint32_t key) {
  const Node& n = nodes_[key];
  key_slot_[key] = n.is_string() ? entry_key(n.text) : kEntryKeyCount;
  return static_cast<EntryKey>(key_slot_[key]);
}

// The one walk behind to_json and to_slots: every node under `root` is visited, spent
// from the budget and checked (cycles, depth, dict keys) in the same order either way;
// but where nothing is built, a subtree already walked whole is spent at once and
// skipped when it would pass (skip_walked).
// With `out`, the whole value is built there. With `slots`, nothing is built: the
// node of each of `root`'s keys that names a slot is filed in that slot.
bool Machine::walk(uint32_t root, std::string_view omit_key, json* out, EntrySlots* slots) {
  const uint64_t budget = walk_budget();
  uint64_t& spent = spent_;
  on_path_.resize(nodes_.size(), 0);
  std::vector<uint8_t>& on_path = on_path_;
  std::vector<WalkFrame>& path = path_;  // kept between walks: one entry's walk allocates no path
  path.clear();
  auto emit = [&](json v) {
    if (path.empty()) {
      if (out) *out = std::move(v);
      return;
    }
    WalkFrame& parent = path.back();
    if (!parent.build) return;
    if (parent.value.is_object()) {
      parent.value[parent.key] = std::move(v);
    } else {
      parent.value.push_back(std::move(v));
    }
  };
  // Starts copying (or checking) node `id` into the frame on top of the path.
  auto visit = [&](uint32_t id) {
    const Node& n = nodes_[id];
    const bool build = path.empty() ? out != nullptr : path.back().build;
    if (!build && !path.empty() && skip_walked(n, path.back(), path.size(), budget)) return true;
    const uint64_t before = spent;
    spent += cost_of(n);
    if (spent > budget)
      return fail(n.at, "the values shared through the memo expand past " + std::to_string(limits_.expand_factor) +
                            " times the file's size: refused as too large");
    if (n.kind == Kind::kScalar) {
      if (build) emit(scalar_json(n));
      return true;
    }
    if (on_path[id]) return fail(n.at, "a " + std::string(kind_name(n.kind)) + " that holds itself: refused");
    if (path.size() >= limits_.max_depth)
      return fail(n.at, "containers nested deeper than " + std::to_string(limits_.max_depth) + ": refused");
    on_path[id] = 1;
    path.push_back(
        {id, 0, build ? (n.kind == Kind::kDict ? json::object() : json::array()) : json(), {}, build, before, 0});
    return true;
  };
  if (!visit(root)) return false;
  while (!path.empty()) {
    WalkFrame& f = path.back();
    const Node& n = nodes_[f.node];
    if (!f.build && path.size() > 1)
      f.next = spend_scalars(nodes_.data(), items(n), n.kind == Kind::kDict, f.next, spent, budget);
    if (f.next >= n.count) {
      json done = std::move(f.value);
      const bool built = f.build;
      on_path[f.node] = 0;
      const uint32_t height = note_walked(f, path.size() == 1 && !omit_key.empty());
      path.pop_back();
      if (!path.empty()) path.back().below = std::max(path.back().below, height);
      if (built) emit(std::move(done));
      continue;
    }
    if (n.kind == Kind::kDict && !take_key(f, path.size() == 1 ? omit_key : std::string_view{})) {
      if (error_) return false;
      continue;  // the omitted key: its value is handed out elsewhere
    }
    if (slots && path.size() == 1 && n.kind == Kind::kDict) {
      if (const EntryKey k = slot_of(items(n)[f.next - 1]); k != kEntryKeyCount) {
        slots->present[k] = true;
        slots->node[k] = items(n)[f.next];
      }
    }
    if (!visit(items(n)[f.next++])) return false;
  }
  return true;
}

// Where node `n` (about to be visited from frame `parent`, `depth` frames deep) is a
// container whose whole subtree an earlier visit walked without error, spends that
// subtree's cost at once and says true when the walk would pass: within the budget
// and the depth bound. It holds no cycle (it was walked whole), and its dict keys
// were checked. False where it would fail inside: it is walked again, and the first
// error is found at the same byte with the same text.
bool Machine::skip_walked(const Node& n, WalkFrame& parent, size_t depth, uint64_t budget) {
  if (n.walked_height == 0 || spent_ + n.walked_cost > budget || depth + n.walked_height > limits_.max_depth)
    return false;
  spent_ += n.walked_cost;
  parent.below = std::max(parent.below, n.walked_height);
  return true;
}

// Frame `f`'s container has been walked through without error: keeps its height and
// the budget its subtree spent (unless `part`, a root walked with a key left out, or
// a cost too big to keep). Returns the height.
uint32_t Machine::note_walked(const WalkFrame& f, bool part) {
  Node& n = nodes_[f.node];
  const uint32_t height = f.below + 1;
  const uint64_t cost = spent_ - f.spent_before;
  if (!part && cost <= UINT32_MAX) {
    n.walked_height = height;
    n.walked_cost = static_cast<uint32_t>(cost);
  }
  return height;
}

// Steps frame `f` (a dict) past its next key, checking it is one a dict may have and
// keeping its text where the dict is built; false (with no error) for `omit_key`.
bool Machine::take_key(WalkFrame& f, std::string_view omit_key) {
  const uint32_t id = items(nodes_[f.node])[f.next];
  const Node& key = nodes_[id];
  ++f.next;
  const bool is_string = key.is_string();
  if (!is_string && !key_text(key))
    return fail(key.at, std::string("a dict key must be a string or a number, got a ") +
                            (key.kind == Kind::kScalar && key.type == Scalar::kBytes ? "bytes" : kind_name(key.kind)));
  if (!omit_key.empty() && is_string && key.text == omit_key) {
    ++f.next;
    return false;
  }
  if (f.build) f.key = *key_text(key);
  return true;
}

}  // namespace fleetsim::diagnose::pickle_detail
