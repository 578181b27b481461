// The pickle reader's stack machine (internal to pickle_reader.cc, pickle_steps.cc
// and pickle_tree.cc): an arena of value nodes, the stack and marks as indices into
// it, and the memo. Each opcode's fixed argument bytes are checked once before its
// step, a length's bytes before they are read; every error is the first one, located
// at the offending opcode's byte offset.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleetsim/status.h"
#include "sim/diagnose/dump_sax.h"
#include "sim/diagnose/pickle_node.h"
#include "sim/diagnose/pickle_reader.h"

namespace fleetsim::diagnose::pickle_detail {

// A container on the path being walked (pickle_tree.cc).
struct WalkFrame {
  uint32_t node;
  size_t next = 0;
  nlohmann::json value;  // the copy being built, where it is
  std::string key;       // a built dict's key whose value is being copied
  bool build = false;
  uint64_t spent_before = 0;  // the budget spent before this node
  uint32_t below = 0;         // the height of the tallest item walked so far
};

// "BINUNICODE (0x58)", or "0xff" for a byte that is no opcode.
std::string op_label(uint8_t code);

class Machine {
 public:
  Machine(std::string_view bytes, const std::string& file, const PickleLimits& limits);
  ~Machine();
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;
  // Runs the opcodes to STOP: the node of the value the pickle holds.
  Result<uint32_t> run();
  // Node `id` as JSON, leaving out the entry `omit_key` if `id` is a dict (pickle_tree.cc).
  // Every call spends from one expansion budget.
  Result<nlohmann::json> to_json(uint32_t id, std::string_view omit_key = {});
  // Node `id`'s keys that name entry slots (dump_sax.h), their values' nodes filed in
  // `slots` (read in place through the machine's arena); all of it is checked as
  // to_json would, nothing built (a subtree walked whole before is spent at once and
  // skipped where it would pass). An entry is walked once by quick_walk where it can.
  // True when `id` is a dict (a value of another kind is checked, its slots left empty).
  Result<bool> to_slots(uint32_t id, EntrySlots& slots);
  // The items of the list or tuple at key `key` of dict `id`; nullopt if there is none.
  std::optional<std::vector<uint32_t>> list_at(uint32_t id, std::string_view key) const;
  // A container node's items.
  std::span<const uint32_t> items(const Node& n) const { return {items_.data() + n.first, n.count}; }

 private:
  void step(uint8_t code);       // pickle_steps.cc: the general way where step_hot declines, one switch
  void step_rare(uint8_t code);  // the rest, and the refused opcodes
  bool step_hot(uint8_t code, uint64_t at, size_t& pos);  // run()'s tight path, pos_ untouched
  bool hot_collect(Kind kind);  // step_hot's cases (pickle_steps.cc)
  bool hot_append();
  bool hot_tuple2(uint32_t& first);
  bool walk(uint32_t root, std::string_view omit_key, nlohmann::json* out, EntrySlots* slots);  // pickle_tree.cc
  bool take_key(WalkFrame& f, std::string_view omit_key);
  uint64_t walk_budget() const;  // the expansion budget's limit
  bool quick_walk(uint32_t id, size_t depth, uint64_t budget, uint32_t& height, EntrySlots* slots);
  bool skip_walked(const Node& n, WalkFrame& parent, size_t depth, uint64_t budget);
  uint32_t note_walked(const WalkFrame& f, bool part);
  // The slot a dict key node names (kEntryKeyCount for none), looked up once per node:
  // a memoized key is one node, so its every use after the first costs an index.
  // key_slot_ covers every node (to_slots sizes it before its walks).
  EntryKey slot_of(uint32_t key) {
    const uint8_t slot = key_slot_[key];
    return slot != kUnknownSlot ? static_cast<EntryKey>(slot) : find_slot(key);
  }
  [[gnu::noinline]] EntryKey find_slot(uint32_t key);
  bool step_scalar(uint8_t code, bool& handled);
  bool step_text(uint8_t code, bool& handled);
  bool step_container(uint8_t code, bool& handled);
  bool step_collect(uint8_t code, bool& handled);
  bool step_memo(uint8_t code, bool& handled);

  bool fail(uint64_t at, const std::string& message);
  bool need(uint64_t n, const char* what);
  uint64_t take_le(size_t n);
  bool take_line(std::string& line, const char* what);
  Node* emit();  // a new node made by this opcode, on the stack; nullptr past max_values
  [[gnu::cold, gnu::noinline]] void refuse_values();
  bool push_node(const Node& node);
  void push_int(int64_t v);
  bool push_scalar(Scalar type, bool flag = false, int64_t i = 0);
  bool push_float(double d);
  bool push_string(uint64_t length, const char* what);
  bool push_bytes(uint64_t length, const char* what);
  bool push_long(uint64_t n, const char* what);
  bool pop(uint32_t& out, const char* what);
  bool pop_mark(size_t& begin, const char* what);
  bool top_container(Kind kind, size_t below, uint32_t& out, const char* what);
  bool fill(uint32_t target, size_t begin, const char* what);
  bool add_items(Node& n, const uint32_t* from, size_t count);
  bool memo_put(uint64_t id);
  bool memo_put_dense(uint64_t id);                   // pickle_steps.cc: the inline common cases
  Node* top_below(size_t above, Kind kind);
  bool memo_get(uint64_t id);
  bool collect(Kind kind, const char* what);  // APPENDS, SETITEMS, ADDITEMS

  std::string_view bytes_;
  const std::string& file_;
  PickleLimits limits_;
  size_t pos_ = 0;
  uint64_t op_at_ = 0;
  std::optional<Diagnostic> error_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> items_;  // every container's items, each a range (Node::first)
  std::vector<uint32_t> stack_;
  std::vector<size_t> marks_;  // stack heights at each open MARK
  static constexpr uint32_t kNoMemo = UINT32_MAX;  // no node has this index (max_values is lower)
  std::vector<uint32_t> memo_dense_;               // node by memo id, kNoMemo where none (grows by doubling)
  std::unordered_map<uint32_t, uint32_t> memo_;    // memo ids past the dense vector's reach
  uint64_t memo_count_ = 0;                        // memo entries in both
  uint64_t spent_ = 0;            // expansion budget units spent by to_json
  std::vector<uint8_t> on_path_;  // to_json: the nodes on the path being copied
  std::vector<WalkFrame> path_;   // walk's path, kept between walks
  static constexpr uint8_t kUnknownSlot = 0xff;
  std::vector<uint8_t> key_slot_;  // slot_of's answers by node, kUnknownSlot until asked
  PickleArena arena_;  // for slots: the nodes, once the run is over
};

}  // namespace fleetsim::diagnose::pickle_detail
