// The pickle reader's opcode pass (pickle_reader.h, pickle_ops.h): run() checks each
// opcode's fixed argument bytes once and, its position in a local, reads the opcodes a
// dump is made of in step_hot where they pass; step() takes them the general way where
// a check fails (and a few others Python's pickler writes) in one switch, and step_rare
// (pickle_rare.cc) the rest (scalars, text forms, framing, containers, the memo).
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "fleetsim/pickle_ops.h"
#include "sim/diagnose/pickle_machine.h"

namespace fleetsim::diagnose::pickle_detail {

namespace {

// Well-formed UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF); ASCII
// runs are passed over 8 bytes at a time.
bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    while (s.size() - i >= 8) {
      uint64_t word = 0;
      std::memcpy(&word, s.data() + i, 8);
      if (word & 0x8080808080808080u) break;
      i += 8;
    }
    if (i == s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) { ++i; continue; }
    if (c >= 0xc2 && c <= 0xdf) { n = 1; cp = c & 0x1f; }
    else if (c >= 0xe0 && c <= 0xef) { n = 2; cp = c & 0x0f; }
    else if (c >= 0xf0 && c <= 0xf4) { n = 3; cp = c & 0x07; }
    else return false;
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return false;
    i += n + 1;
  }
  return true;
}

// The fixed argument bytes each opcode reads first (an integer, a length, a memo id):
// run() checks they are there once, before the opcode's general step (step_hot checks
// its own cases' bytes, constants there).
constexpr std::array<uint8_t, 256> kArgBytes = [] {
  std::array<uint8_t, 256> t{};
  const auto set = [&t](std::initializer_list<unsigned> codes, uint8_t bytes) {
    for (unsigned c : codes) t[c] = bytes;
  };
  set({'K', 'C', 'q', 'h', 0x8a, 0x8c, 0x80}, 1);  // BININT1 SHORT_BINBYTES BINPUT BINGET LONG1 ...
  set({'M'}, 2);                                    // BININT2
  set({'J', 'X', 'B', 'r', 'j', 0x8b}, 4);          // BININT BINUNICODE BINBYTES LONG_BINPUT ...
  set({'G', 0x8d, 0x8e, 0x96, 0x95}, 8);            // BINFLOAT BINUNICODE8 BINBYTES8 BYTEARRAY8 FRAME
  return t;
}();

// find_pickle_op as a table by byte.
constexpr std::array<const PickleOp*, 256> kOpByCode = [] {
  std::array<const PickleOp*, 256> table{};
  for (const PickleOp& op : kPickleOps)
    if (!table[op.code]) table[op.code] = &op;
  return table;
}();

// `N` bytes at `p` as a little-endian unsigned integer.
template <size_t N>
uint64_t load_le(const char* p) {
  uint64_t v = 0;
  for (size_t k = 0; k < N; ++k) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[k])) << (8 * k);
  return v;
}

}  // namespace

// The error past max_values, kept out of emit() so that emit() is inlined.
void Machine::refuse_values() {
  fail(op_at_, "more than " + std::to_string(limits_.max_values) + " values: refused as too large");
}

[[gnu::always_inline]] inline Node* Machine::emit() {
  if (nodes_.size() >= limits_.max_values) [[unlikely]] {
    refuse_values();
    return nullptr;
  }
  const auto id = static_cast<uint32_t>(nodes_.size());
  Node& n = nodes_.emplace_back();
  n.at = op_at_;
  stack_.push_back(id);
  return &n;
}

bool Machine::push_node(const Node& node) {
  Node* n = emit();
  if (!n) return false;
  const uint64_t at = n->at;
  *n = node;
  n->at = at;
  return true;
}

void Machine::push_int(int64_t v) {
  if (Node* n = emit()) {
    n->type = Scalar::kInt;
    n->num.i = v;
  }
}

bool Machine::push_string(uint64_t length, const char* what) {
  if (!need(length, what)) return false;
  std::string_view s = bytes_.substr(pos_, length);
  pos_ += length;
  if (!valid_utf8(s)) return fail(op_at_, std::string(what) + " string is not valid UTF-8");
  Node* n = emit();
  if (!n) return false;
  n->type = Scalar::kString;
  n->text = s;
  return true;
}

// APPENDS, SETITEMS, ADDITEMS: the values above the last MARK into the container below it.
bool Machine::collect(Kind kind, const char* what) {
  size_t begin = 0;
  uint32_t target = 0;
  return pop_mark(begin, what) && top_container(kind, stack_.size() - begin, target, what) &&
         fill(target, begin, what);
}

// Memo ids as picklers write them count up from 0: those within reach of the
// entries made so far go to a vector, indexed (grown by doubling); the rest (sparse
// ids) to a hash map. An id is in one of the two at most.
bool Machine::memo_put(uint64_t id) {
  if (stack_.empty()) return fail(op_at_, "a memo put needs a value on the stack, there is none");
  if (id < memo_dense_.size() && memo_.empty()) {  // the common case: no sparse ids
    uint32_t& slot = memo_dense_[id];
    const bool fresh = slot == kNoMemo;
    slot = stack_.back();
    memo_count_ += fresh ? 1 : 0;
    if (fresh && memo_count_ > limits_.max_memo) [[unlikely]]
      return fail(op_at_, "more than " + std::to_string(limits_.max_memo) + " memo entries: refused as too large");
    return true;
  }
  if (id > UINT32_MAX) return fail(op_at_, "memo id " + std::to_string(id) + " is past 2^32-1");
  bool fresh = false;
  if (id < memo_dense_.size() || id <= 2 * memo_count_ + 1024) {
    if (id >= memo_dense_.size()) memo_dense_.resize(std::max<uint64_t>(id + 1, 2 * memo_dense_.size()), kNoMemo);
    fresh = memo_dense_[id] == kNoMemo && (memo_.empty() || memo_.erase(static_cast<uint32_t>(id)) == 0);
    memo_dense_[id] = stack_.back();
  } else {
    fresh = memo_.insert_or_assign(static_cast<uint32_t>(id), stack_.back()).second;
  }
  memo_count_ += fresh ? 1 : 0;
  if (fresh && memo_count_ > limits_.max_memo)
    return fail(op_at_, "more than " + std::to_string(limits_.max_memo) + " memo entries: refused as too large");
  return true;
}

bool Machine::memo_get(uint64_t id) {
  uint32_t node = id < memo_dense_.size() ? memo_dense_[id] : kNoMemo;
  if (node == kNoMemo && id <= UINT32_MAX && !memo_.empty()) [[unlikely]] {
    auto it = memo_.find(static_cast<uint32_t>(id));
    if (it != memo_.end()) node = it->second;
  }
  if (node == kNoMemo) [[unlikely]]
    return fail(op_at_, "memo id " + std::to_string(id) + " was never put");
  stack_.push_back(node);
  return true;
}

// memo_put's common case: an id within the dense vector, no sparse ids, room under
// max_memo. False (nothing done) otherwise: memo_put then takes it, and any error.
[[gnu::always_inline]] inline bool Machine::memo_put_dense(uint64_t id) {
  if (id >= memo_dense_.size() || !memo_.empty() || stack_.empty() || memo_count_ >= limits_.max_memo)
    [[unlikely]] return false;
  uint32_t& slot = memo_dense_[id];
  memo_count_ += slot == kNoMemo ? 1 : 0;
  slot = stack_.back();
  return true;
}

// The container `above` values below the stack's top, if it is of `kind` and above the
// last MARK; nullptr otherwise (the opcode's own step then finds the error, if any).
[[gnu::always_inline]] inline Node* Machine::top_below(size_t above, Kind kind) {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() < above + 1 + floor) return nullptr;
  Node& n = nodes_[stack_[stack_.size() - 1 - above]];
  return n.kind == kind ? &n : nullptr;
}

// The general way for the opcodes step_hot takes, and a few other common ones, each its
// own case; run() has checked its fixed argument bytes are there (kArgBytes). A call
// from run()'s loop, kept out of it: run() stays small enough that its own pushes inline.
void Machine::step(uint8_t code) {
  const char* at = bytes_.data() + pos_;
  Node* n = nullptr;
  bool handled = false;
  switch (code) {
    case '}': if ((n = emit())) n->kind = Kind::kDict; return;
    case ']': if ((n = emit())) n->kind = Kind::kList; return;
    case ')': if ((n = emit())) n->kind = Kind::kTuple; return;
    case 'N': emit(); return;
    case 0x88:
    case 0x89:
      if ((n = emit())) { n->type = Scalar::kBool; n->flag = code == 0x88; }
      return;
    case 'K': pos_ += 1; push_int(static_cast<int64_t>(load_le<1>(at))); return;
    case 'M': pos_ += 2; push_int(static_cast<int64_t>(load_le<2>(at))); return;
    case 'J': pos_ += 4; push_int(static_cast<int32_t>(load_le<4>(at))); return;
    case 'X': pos_ += 4; push_string(load_le<4>(at), "BINUNICODE"); return;
    case 0x8c: pos_ += 1; push_string(load_le<1>(at), "SHORT_BINUNICODE"); return;
    // The opcodes step_hot takes reach step() only where its common case did not apply
    // (a check would fail): the general way, with its errors.
    case 'q': pos_ += 1; memo_put(load_le<1>(at)); return;
    case 'r': pos_ += 4; memo_put(load_le<4>(at)); return;
    case 0x94:
      if (!memo_put_dense(memo_count_)) memo_put(memo_count_);
      return;
    case 'h': pos_ += 1; memo_get(static_cast<uint8_t>(*at)); return;
    case 'j': pos_ += 4; memo_get(load_le<4>(at)); return;
    case '(':
      if (marks_.size() >= limits_.max_depth) [[unlikely]] {
        fail(op_at_, "more than " + std::to_string(limits_.max_depth) +
                         " open MARKs (containers nested too deep): refused");
        return;
      }
      marks_.push_back(stack_.size());
      return;
    case 'u': collect(Kind::kDict, "SETITEMS"); return;
    case 'e': collect(Kind::kList, "APPENDS"); return;
    case 0x90: collect(Kind::kSet, "ADDITEMS"); return;
    case 0x8a: pos_ += 1; push_long(load_le<1>(at), "LONG1"); return;
    case 0x85:
    case 0x86:
    case 0x87:
    case 0x8f: step_container(code, handled); return;
    case 'G': step_scalar(code, handled); return;
    case 'a': step_collect(code, handled); return;
    case 's':
      if (Node* target = top_below(2, Kind::kDict); target && target->count + 2 <= target->room) {
        uint32_t* to = items_.data() + target->first + target->count;  // SETITEM with room
        to[0] = stack_[stack_.size() - 2];
        to[1] = stack_.back();
        target->count += 2;
        stack_.resize(stack_.size() - 2);
        return;
      }
      step_collect(code, handled);
      return;
    default: step_rare(code); return;
  }
}

// APPENDS and SETITEMS where they pass: a MARK, the container of `kind` just below it
// (above the MARK before), whole pairs for a dict, the item pool within its bound
// however the range grows. False (nothing done) otherwise: collect() finds the error.
[[gnu::always_inline]] inline bool Machine::hot_collect(Kind kind) {
  const size_t marks = marks_.size();
  if (marks == 0) [[unlikely]] return false;
  const size_t begin = marks_[marks - 1];
  const size_t floor = marks > 1 ? marks_[marks - 2] : 0;
  const size_t count = stack_.size() - begin;
  if (begin <= floor || (kind == Kind::kDict && count % 2 != 0)) [[unlikely]] return false;
  Node& target = nodes_[stack_[begin - 1]];
  if (target.kind != kind) [[unlikely]] return false;
  if (target.count + count <= target.room) {
    std::copy_n(stack_.data() + begin, count, items_.data() + target.first + target.count);
    target.count += static_cast<uint32_t>(count);
  } else {
    // add_items grows the pool by at most count + 2 * target.count: within the bound, it cannot fail
    if (items_.size() + count + 2 * uint64_t{target.count} > UINT32_MAX) [[unlikely]] return false;
    add_items(target, stack_.data() + begin, count);
  }
  marks_.pop_back();
  stack_.resize(begin);
  return true;
}

// APPEND where it passes: into the list below the top with room, or one that can grow in
// place (empty, or its range at the pool's end). False (nothing done) otherwise.
[[gnu::always_inline]] inline bool Machine::hot_append() {
  Node* target = top_below(1, Kind::kList);
  if (!target) [[unlikely]] return false;
  if (target->count < target->room) {
    items_[target->first + target->count++] = stack_.back();
  } else if ((target->count == 0 || target->first + target->room == items_.size()) && items_.size() < UINT32_MAX) {
    if (target->count == 0) target->first = static_cast<uint32_t>(items_.size());  // as add_items grows it
    items_.push_back(stack_.back());
    ++target->count;
    ++target->room;
  } else {
    return false;
  }
  stack_.pop_back();
  return true;
}

// TUPLE2 where it passes (two values above the last MARK, room for a node and two
// items): its items into the pool at `first`, off the stack; step_hot makes the tuple.
[[gnu::always_inline]] inline bool Machine::hot_tuple2(uint32_t& first) {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() < floor + 2 || nodes_.size() >= limits_.max_values || items_.size() + 2 > UINT32_MAX)
    [[unlikely]] return false;
  first = static_cast<uint32_t>(items_.size());
  items_.insert(items_.end(), stack_.end() - 2, stack_.end());
  stack_.resize(stack_.size() - 2);
  return true;
}

// LONG1 of 1 to 8 bytes, not negative, its bytes there (push_long's common case), as
// `num`; `p` is at its length byte, `length` set to the bytes it reads.
[[gnu::always_inline]] static inline bool hot_long1(const char* p, size_t left, int64_t& num, size_t& length) {
  const uint64_t width = load_le<1>(p);
  if (width < 1 || width > 8 || left - 1 < width || (static_cast<uint8_t>(p[width]) & 0x80)) [[unlikely]]
    return false;
  uint64_t v = 0;
  for (size_t k = 0; k < width; ++k) v |= uint64_t{static_cast<uint8_t>(p[1 + k])} << (8 * k);
  num = static_cast<int64_t>(v);
  length = 1 + width;
  return true;
}

// The opcodes a dump is made of where they pass, with the position in a local: the
// memo, MARK, APPEND(S) and SETITEMS, and those that make a node (empty lists and
// dicts, the integers, None and the booleans, BINUNICODE, TUPLE2), each node made at
// one place below. True when done; false leaves the machine as it was, and run() then
// checks the fixed argument bytes (kArgBytes) and step() reads the opcode (and reports
// any error) the general way. `pos` is past the opcode byte; each case checks its own
// argument bytes are there before it reads them.
[[gnu::always_inline]] inline bool Machine::step_hot(uint8_t code, uint64_t at, size_t& pos) {
  const char* p = bytes_.data() + pos;
  const size_t left = bytes_.size() - pos;  // each case checks its fixed argument bytes are there
  Kind kind = Kind::kScalar;  // the node made, its fields in registers until it is made
  Scalar type = Scalar::kNull;
  bool flag = false;
  int64_t num = 0;
  std::string_view text;
  uint32_t first = 0, count = 0;
  size_t length = 0;  // the argument bytes read
  switch (code) {
    case 'h': {
      if (left < 1) [[unlikely]] return false;
      const auto id = static_cast<uint8_t>(*p);
      if (id >= memo_dense_.size() || memo_dense_[id] == kNoMemo) [[unlikely]] return false;
      stack_.push_back(memo_dense_[id]);
      pos += 1;
      return true;
    }
    case 'r':
    case 'q':
      if (left < (code == 'r' ? 4u : 1u) || !memo_put_dense(code == 'r' ? load_le<4>(p) : load_le<1>(p))) [[unlikely]]
        return false;
      pos += code == 'r' ? 4 : 1;
      return true;
    case 0x94: return memo_put_dense(memo_count_);  // MEMOIZE
    case '(':
      if (marks_.size() >= limits_.max_depth) [[unlikely]] return false;
      marks_.push_back(stack_.size());
      return true;
    case 'a': return hot_append();
    case 'e': return hot_collect(Kind::kList);
    case 'u': return hot_collect(Kind::kDict);
    case ']': kind = Kind::kList; break;
    case '}': kind = Kind::kDict; break;
    case 'N': break;
    case 0x88:
    case 0x89: type = Scalar::kBool; flag = code == 0x88; break;
    case 'K': if (left < 1) [[unlikely]] return false;
      type = Scalar::kInt; num = static_cast<int64_t>(load_le<1>(p)); length = 1; break;
    case 'M': if (left < 2) [[unlikely]] return false;
      type = Scalar::kInt; num = static_cast<int64_t>(load_le<2>(p)); length = 2; break;
    case 'J': if (left < 4) [[unlikely]] return false;
      type = Scalar::kInt; num = static_cast<int32_t>(load_le<4>(p)); length = 4; break;
    case 0x8a:
      if (left < 1 || !hot_long1(p, left, num, length)) [[unlikely]] return false;
      type = Scalar::kInt;
      break;
    case 0x86:
      if (!hot_tuple2(first)) [[unlikely]] return false;
      kind = Kind::kTuple;
      count = 2;
      break;
    case 'X':
    case 0x8c: {  // BINUNICODE, SHORT_BINUNICODE (as Python's pickler writes strings)
      const size_t width = code == 'X' ? 4 : 1;
      if (left < width) [[unlikely]] return false;
      const uint64_t n = code == 'X' ? load_le<4>(p) : load_le<1>(p);
      if (left - width < n) [[unlikely]] return false;
      text = bytes_.substr(pos + width, n);
      if (!valid_utf8(text)) [[unlikely]] return false;
      type = Scalar::kString;
      length = width + n;
      break;
    }
    default: return false;
  }
  if (nodes_.size() >= limits_.max_values) [[unlikely]] return false;  // TUPLE2 checked it before its changes
  stack_.push_back(static_cast<uint32_t>(nodes_.size()));
  Node& n = nodes_.emplace_back();  // its fields written one by one, from registers
  n.kind = kind;
  n.type = type;
  n.flag = flag;
  n.at = at;
  n.num.i = num;
  n.text = text;
  n.first = first;
  n.count = n.room = count;
  pos += length;
  return true;
}

// The opcode loop, the position in a local: pos_ and op_at_ are written only for
// step(), the general way, whose errors are the only ones checked after it.
Result<uint32_t> Machine::run() {
  const size_t size = bytes_.size();
  const char* const data = bytes_.data();
  size_t pos = pos_;
  for (;;) {
    if (pos >= size) [[unlikely]] {
      pos_ = pos;
      return *(fail(pos, "the file ends before STOP: a truncated pickle?"), error_);
    }
    const uint64_t at = pos;
    const auto code = static_cast<uint8_t>(data[pos++]);
    if (step_hot(code, at, pos)) [[likely]] continue;
    if (const size_t arg = kArgBytes[code]; size - pos < arg) [[unlikely]] {
      pos_ = pos;
      op_at_ = at;
      need(arg, std::string(kOpByCode[code]->name).c_str());
      return *error_;
    }
    if (code == '.') [[unlikely]] {
      if (stack_.empty()) return *(fail(at, "STOP with nothing on the stack"), error_);
      return stack_.back();
    }
    pos_ = pos;
    op_at_ = at;
    step(code);
    if (error_) [[unlikely]] return *error_;
    pos = pos_;
  }
}

}  // namespace fleetsim::diagnose::pickle_detail
