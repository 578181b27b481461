// The pickle stack machine (pickle_reader.h): one pass over the opcodes, no
// recursion. Values live in an arena of nodes that the stack and the memo refer to
// by index, so a container put in the memo before it is filled (as PyTorch's
// pickler does) is seen filled when fetched. The tree is copied out after STOP, whole
// or a list's items one at a time (pickle_tree.cc), where cycles, depth and the
// expansion of shared values are checked.
#include "sim/diagnose/pickle_reader.h"

#include <cstdlib>
#include <cstring>

#include "sim/diagnose/pickle_machine.h"
#include "fleetsim/pickle_ops.h"

namespace fleetsim::diagnose {

namespace pickle_detail {

using nlohmann::json;

namespace {

std::string hex_byte(uint8_t b) {
  static constexpr char kHex[] = "0123456789abcdef";
  return std::string("0x") + kHex[b >> 4] + kHex[b & 15];
}

}  // namespace

std::string op_label(uint8_t code) {
  const PickleOp* op = find_pickle_op(code);
  return op ? std::string(op->name) + " (" + hex_byte(code) + ")" : hex_byte(code);
}

namespace {

// The arena's buffers, kept on each thread from one machine to the next: the dumps a
// reading thread parses after its first reuse that memory (no regrowth, no fresh
// pages). Buffers past kKeepNodes nodes are let go rather than held.
struct Buffers {
  std::vector<Node> nodes;
  std::vector<uint32_t> items, stack;
  std::vector<uint8_t> on_path, key_slot;
  std::vector<uint32_t> memo;
};
thread_local Buffers t_buffers;
constexpr size_t kKeepNodes = size_t{1} << 20;

template <class T>
void take(std::vector<T>& to, std::vector<T>& from) {
  to = std::move(from);
  to.clear();
}

}  // namespace

Machine::Machine(std::string_view bytes, const std::string& file, const PickleLimits& limits)
    : bytes_(bytes), file_(file), limits_(limits) {
  take(nodes_, t_buffers.nodes);
  take(items_, t_buffers.items);
  take(stack_, t_buffers.stack);
  take(on_path_, t_buffers.on_path);
  take(key_slot_, t_buffers.key_slot);
  take(memo_dense_, t_buffers.memo);
}

Machine::~Machine() {
  if (nodes_.capacity() > kKeepNodes || items_.capacity() > 2 * kKeepNodes ||
      memo_dense_.capacity() > 2 * kKeepNodes)
    return;
  t_buffers = {std::move(nodes_), std::move(items_), std::move(stack_), std::move(on_path_), std::move(key_slot_),
               std::move(memo_dense_)};
}

bool Machine::fail(uint64_t at, const std::string& message) {
  if (!error_) {
    Diagnostic d;
    d.loc.file = file_;
    d.message = "byte " + std::to_string(at) + ": " + message;
    error_ = std::move(d);
  }
  return false;
}

bool Machine::need(uint64_t n, const char* what) {
  if (bytes_.size() - pos_ >= n) return true;
  return fail(op_at_, std::string("the file ends inside ") + what + " (it needs " + std::to_string(n) +
                          " more bytes, the file has " + std::to_string(bytes_.size()) + "): a truncated pickle?");
}

uint64_t Machine::take_le(size_t n) {
  uint64_t v = 0;
  for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + k])) << (8 * k);
  pos_ += n;
  return v;
}

bool Machine::take_line(std::string& line, const char* what) {
  const size_t end = bytes_.find('\n', pos_);
  if (end == std::string_view::npos) return need(bytes_.size() - pos_ + 1, what);
  line.assign(bytes_.substr(pos_, end - pos_));
  pos_ = end + 1;
  return true;
}

bool Machine::push_scalar(Scalar type, bool flag, int64_t i) {
  Node n;
  n.type = type;
  n.flag = flag;
  n.num.i = i;
  return push_node(n);
}

bool Machine::push_float(double d) {
  Node n;
  n.type = Scalar::kFloat;
  n.num.d = d;
  return push_node(n);
}

bool Machine::push_bytes(uint64_t length, const char* what) {
  if (!need(length, what)) return false;
  Node n;
  n.type = Scalar::kBytes;
  n.text = bytes_.substr(pos_, length);
  pos_ += length;
  return push_node(n);
}

// A little-endian two's-complement integer of `n` bytes (LONG1, LONG4), which
// must fit in int64 or, when not negative, uint64.
bool Machine::push_long(uint64_t n, const char* what) {
  if (!need(n, what)) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(bytes_.data() + pos_);
  size_t width = n;
  const bool negative = n > 0 && (p[n - 1] & 0x80);
  while (width > 0 && p[width - 1] == (negative ? 0xff : 0x00)) --width;  // redundant sign bytes
  if (width > 8 || (negative && width == 8 && !(p[7] & 0x80)))
    return fail(op_at_, std::string(what) + " integer of " + std::to_string(n) + " bytes is wider than 64 bits");
  uint64_t u = take_le(static_cast<size_t>(std::min<uint64_t>(n, 8)));
  pos_ += n > 8 ? n - 8 : 0;
  if (negative) {
    if (n < 8) u |= ~uint64_t{0} << (8 * n);
    return push_scalar(Scalar::kInt, false, static_cast<int64_t>(u));
  }
  if (u <= static_cast<uint64_t>(INT64_MAX)) return push_scalar(Scalar::kInt, false, static_cast<int64_t>(u));
  Node big;  // past int64: kept as unsigned
  big.type = Scalar::kUint;
  big.num.u = u;
  return push_node(big);
}

bool Machine::pop(uint32_t& out, const char* what) {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) return fail(op_at_, std::string(what) + " needs a value on the stack, there is none");
  out = stack_.back();
  stack_.pop_back();
  return true;
}

bool Machine::pop_mark(size_t& begin, const char* what) {
  if (marks_.empty()) return fail(op_at_, std::string(what) + " needs a MARK before it, there is none");
  begin = marks_.back();
  marks_.pop_back();
  return true;
}

bool Machine::top_container(Kind kind, size_t below, uint32_t& out, const char* what) {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() < below + 1 + floor) [[unlikely]]
    return fail(op_at_, std::string(what) + " needs a " + kind_name(kind) + " on the stack, there is none");
  out = stack_[stack_.size() - 1 - below];
  if (nodes_[out].kind != kind) [[unlikely]]
    return fail(op_at_, std::string(what) + " needs a " + kind_name(kind) + ", found a " + kind_name(nodes_[out].kind));
  return true;
}

// Moves the stack above `begin` into container `target` (APPENDS, SETITEMS, ADDITEMS).
bool Machine::fill(uint32_t target, size_t begin, const char* what) {
  if (nodes_[target].kind == Kind::kDict && (stack_.size() - begin) % 2 != 0) [[unlikely]]
    return fail(op_at_, std::string(what) + " needs key and value pairs, found an odd number of values");
  if (!add_items(nodes_[target], stack_.data() + begin, stack_.size() - begin)) return false;
  stack_.resize(begin);
  return true;
}

// Appends `count` items to container `n`'s range of the pool. A range at the pool's
// end grows in place; another moves to the end with room to double, so a list filled
// in many batches (APPENDS of 1,000 each) is copied O(its length) items in all.
bool Machine::add_items(Node& n, const uint32_t* from, size_t count) {
  if (n.count + count > n.room) {
    const bool at_end = n.first + n.room == items_.size();
    const uint64_t room = at_end ? n.count + count : std::max<uint64_t>(n.count + count, 2 * uint64_t{n.count});
    const uint64_t first = at_end ? n.first : items_.size();
    if (first + room > UINT32_MAX)
      return fail(op_at_, "more than " + std::to_string(UINT32_MAX) + " container items: refused as too large");
    items_.resize(first + room);
    if (first != n.first) std::copy_n(items_.data() + n.first, n.count, items_.data() + first);
    n.first = static_cast<uint32_t>(first);
    n.room = static_cast<uint32_t>(room);
  }
  std::copy_n(from, count, items_.data() + n.first + n.count);
  n.count += static_cast<uint32_t>(count);
  return true;
}

}  // namespace pickle_detail

bool looks_like_pickle(std::string_view head) {
  return head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5;
}

Result<nlohmann::json> read_pickle(std::string_view bytes, const std::string& file, const PickleLimits& limits) {
  pickle_detail::Machine machine(bytes, file, limits);
  Result<uint32_t> root = machine.run();
  if (!root) return root.errors();
  return machine.to_json(*root);
}

namespace {

using ItemErrors = std::optional<std::vector<Diagnostic>>;

// Runs a pickle and, when it holds a dict whose `list_key` is a list, hands each item's
// node to `each` (which answers its errors, if any), then the dict without that key.
template <class Each>
Result<nlohmann::json> read_items(std::string_view bytes, const std::string& file, std::string_view list_key,
                                  const PickleLimits& limits, const Each& each) {
  pickle_detail::Machine machine(bytes, file, limits);
  Result<uint32_t> root = machine.run();
  if (!root) return root.errors();
  const std::optional<std::vector<uint32_t>> items = machine.list_at(*root, list_key);
  if (!items) return machine.to_json(*root);
  for (size_t i = 0; i < items->size(); ++i)
    if (ItemErrors errors = each(machine, i, (*items)[i])) return *errors;
  return machine.to_json(*root, list_key);
}

}  // namespace

Result<nlohmann::json> read_pickle_streaming(std::string_view bytes, const std::string& file,
                                             std::string_view list_key, const PickleItemSink& on_item,
                                             const PickleLimits& limits) {
  return read_items(bytes, file, list_key, limits,
                    [&](pickle_detail::Machine& machine, size_t i, uint32_t id) -> ItemErrors {
                      Result<nlohmann::json> item = machine.to_json(id);
                      if (!item) return item.errors();
                      on_item(i, std::move(*item));
                      return std::nullopt;
                    });
}

Result<nlohmann::json> read_pickle_entries(std::string_view bytes, const std::string& file,
                                           std::string_view list_key, const PickleEntrySink& on_entry,
                                           const PickleLimits& limits) {
  EntrySlots slots;
  return read_items(bytes, file, list_key, limits,
                    [&](pickle_detail::Machine& machine, size_t i, uint32_t id) -> ItemErrors {
                      Result<bool> is_dict = machine.to_slots(id, slots);
                      if (!is_dict) return is_dict.errors();
                      if (*is_dict) on_entry(i, slots);
                      return std::nullopt;
                    });
}

}  // namespace fleetsim::diagnose
