// The pickle reader's rare opcodes (pickle_steps.cc takes the ones a dump is made of):
// scalars, protocol 0/1 text forms and framing, containers, collecting opcodes and the
// memo, each group tried in turn by step_rare, and the refusals of opcodes that would
// build Python objects. Every error is located at the opcode's byte (op_at_).
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "fleetsim/pickle_ops.h"
#include "sim/diagnose/pickle_machine.h"

namespace fleetsim::diagnose::pickle_detail {

namespace {

std::optional<int64_t> parse_decimal(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace

bool Machine::step_scalar(uint8_t code, bool& handled) {
  handled = true;
  switch (code) {
    case 'N': return push_scalar(Scalar::kNull);
    case 0x88: return push_scalar(Scalar::kBool, true);
    case 0x89: return push_scalar(Scalar::kBool, false);
    case 'K': return need(1, "BININT1") && push_scalar(Scalar::kInt, false, static_cast<int64_t>(take_le(1)));
    case 'M': return need(2, "BININT2") && push_scalar(Scalar::kInt, false, static_cast<int64_t>(take_le(2)));
    case 'J':
      return need(4, "BININT") && push_scalar(Scalar::kInt, false, static_cast<int32_t>(take_le(4)));
    case 0x8a: return need(1, "LONG1") && push_long(take_le(1), "LONG1");
    case 0x8b: {
      if (!need(4, "LONG4")) return false;
      const auto n = static_cast<int32_t>(take_le(4));
      if (n < 0) return fail(op_at_, "LONG4 length " + std::to_string(n) + " is negative");
      return push_long(static_cast<uint64_t>(n), "LONG4");
    }
    case 'G': {
      if (!need(8, "BINFLOAT")) return false;
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<unsigned char>(bytes_[pos_ + k]);
      pos_ += 8;
      double d = 0;
      std::memcpy(&d, &bits, sizeof d);
      return push_float(d);
    }
    case 'X': return need(4, "BINUNICODE") && push_string(take_le(4), "BINUNICODE");
    case 0x8c: return need(1, "SHORT_BINUNICODE") && push_string(take_le(1), "SHORT_BINUNICODE");
    case 0x8d: return need(8, "BINUNICODE8") && push_string(take_le(8), "BINUNICODE8");
    case 'C': return need(1, "SHORT_BINBYTES") && push_bytes(take_le(1), "SHORT_BINBYTES");
    case 'B': return need(4, "BINBYTES") && push_bytes(take_le(4), "BINBYTES");
    case 0x8e: return need(8, "BINBYTES8") && push_bytes(take_le(8), "BINBYTES8");
    case 0x96: return need(8, "BYTEARRAY8") && push_bytes(take_le(8), "BYTEARRAY8");
    default: handled = false; return true;
  }
}

// Protocol 0 and 1 text forms (a decimal line ending in '\n'), PROTO and FRAME.
bool Machine::step_text(uint8_t code, bool& handled) {
  handled = true;
  std::string line;
  switch (code) {
    case 'I': {
      if (!take_line(line, "INT")) return false;
      if (line == "00" || line == "01") return push_scalar(Scalar::kBool, line == "01");
      const std::optional<int64_t> v = parse_decimal(line);
      return v ? push_scalar(Scalar::kInt, false, *v) : fail(op_at_, "INT expects a decimal integer line");
    }
    case 'L': {
      if (!take_line(line, "LONG")) return false;
      if (!line.empty() && line.back() == 'L') line.pop_back();
      const std::optional<int64_t> v = parse_decimal(line);
      if (!v) return fail(op_at_, "LONG expects a decimal integer line within 64 bits");
      return push_scalar(Scalar::kInt, false, *v);
    }
    case 'F': {
      if (!take_line(line, "FLOAT")) return false;
      char* end = nullptr;
      const double d = std::strtod(line.c_str(), &end);
      if (line.empty() || end != line.c_str() + line.size()) return fail(op_at_, "FLOAT expects a number line");
      return push_float(d);
    }
    case 'p':
    case 'g': {
      if (!take_line(line, code == 'p' ? "PUT" : "GET")) return false;
      const std::optional<int64_t> id = parse_decimal(line);
      if (!id || *id < 0) return fail(op_at_, std::string(code == 'p' ? "PUT" : "GET") + " expects a memo id line");
      return code == 'p' ? memo_put(static_cast<uint64_t>(*id)) : memo_get(static_cast<uint64_t>(*id));
    }
    case 0x80: {
      if (!need(1, "PROTO")) return false;
      const uint64_t version = take_le(1);
      if (version > 5) return fail(op_at_, "pickle protocol " + std::to_string(version) + " is newer than 5");
      return true;
    }
    case 0x95: {
      if (!need(8, "FRAME")) return false;
      return need(take_le(8), "the FRAME");  // a frame only groups the opcodes that follow
    }
    default: handled = false; return true;
  }
}

bool Machine::step_container(uint8_t code, bool& handled) {
  handled = true;
  Node n;
  switch (code) {
    case ']': n.kind = Kind::kList; return push_node(n);
    case '}': n.kind = Kind::kDict; return push_node(n);
    case ')': n.kind = Kind::kTuple; return push_node(n);
    case 0x8f: n.kind = Kind::kSet; return push_node(n);
    case 0x85:
    case 0x86:
    case 0x87: {
      const size_t count = code - 0x84u;
      n.kind = Kind::kTuple;
      uint32_t popped[3] = {};
      for (size_t k = count; k > 0; --k)
        if (!pop(popped[k - 1], code == 0x85 ? "TUPLE1" : code == 0x86 ? "TUPLE2" : "TUPLE3")) return false;
      return add_items(n, popped, count) && push_node(n);
    }
    case '(':
      if (marks_.size() >= limits_.max_depth)
        return fail(op_at_, "more than " + std::to_string(limits_.max_depth) +
                                " open MARKs (containers nested too deep): refused");
      marks_.push_back(stack_.size());
      return true;
    case '0': {
      uint32_t dropped = 0;
      size_t begin = 0;
      if (stack_.size() > (marks_.empty() ? 0 : marks_.back())) return pop(dropped, "POP");
      return pop_mark(begin, "POP");
    }
    case '1': {
      size_t begin = 0;
      if (!pop_mark(begin, "POP_MARK")) return false;
      stack_.resize(begin);
      return true;
    }
    case '2': {
      uint32_t top = 0;
      if (!pop(top, "DUP")) return false;
      stack_.push_back(top);
      stack_.push_back(top);
      return true;
    }
    default: handled = false; return true;
  }
}

// Opcodes that gather values into a container: into the one below (APPEND(S),
// SETITEM(S), ADDITEMS) or into a new one from the values above a MARK.
bool Machine::step_collect(uint8_t code, bool& handled) {
  handled = true;
  size_t begin = 0;
  uint32_t target = 0, item = 0, key = 0;
  switch (code) {
    case 'a':
      if (!pop(item, "APPEND") || !top_container(Kind::kList, 0, target, "APPEND")) return false;
      return add_items(nodes_[target], &item, 1);
    case 's':
      if (!pop(item, "SETITEM") || !pop(key, "SETITEM") || !top_container(Kind::kDict, 0, target, "SETITEM"))
        return false;
      {
        const uint32_t pair[2] = {key, item};
        return add_items(nodes_[target], pair, 2);
      }
    case 'e':
      return pop_mark(begin, "APPENDS") && top_container(Kind::kList, stack_.size() - begin, target, "APPENDS") &&
             fill(target, begin, "APPENDS");
    case 'u':
      return pop_mark(begin, "SETITEMS") && top_container(Kind::kDict, stack_.size() - begin, target, "SETITEMS") &&
             fill(target, begin, "SETITEMS");
    case 0x90:
      return pop_mark(begin, "ADDITEMS") && top_container(Kind::kSet, stack_.size() - begin, target, "ADDITEMS") &&
             fill(target, begin, "ADDITEMS");
    case 'l':
    case 't':
    case 'd':
    case 0x91: {
      const char* what = code == 'l' ? "LIST" : code == 't' ? "TUPLE" : code == 'd' ? "DICT" : "FROZENSET";
      if (!pop_mark(begin, what)) return false;
      Node n;
      n.kind = code == 'l' ? Kind::kList : code == 't' ? Kind::kTuple : code == 'd' ? Kind::kDict : Kind::kFrozenSet;
      if (n.kind == Kind::kDict && (stack_.size() - begin) % 2 != 0)
        return fail(op_at_, "DICT needs key and value pairs, found an odd number of values");
      if (!add_items(n, stack_.data() + begin, stack_.size() - begin)) return false;
      stack_.resize(begin);
      return push_node(n);
    }
    default: handled = false; return true;
  }
}

bool Machine::step_memo(uint8_t code, bool& handled) {
  handled = true;
  switch (code) {
    case 'q': return need(1, "BINPUT") && memo_put(take_le(1));
    case 'r': return need(4, "LONG_BINPUT") && memo_put(take_le(4));
    case 0x94: return memo_put(memo_count_);
    case 'h': return need(1, "BINGET") && memo_get(take_le(1));
    case 'j': return need(4, "LONG_BINGET") && memo_get(take_le(4));
    default: handled = false; return true;
  }
}

// The opcodes step() does not take: found in the chain of step_* groups, or refused.
void Machine::step_rare(uint8_t code) {
  const PickleOp* op = find_pickle_op(code);
  if (!op) {
    fail(op_at_, op_label(code) + " is not a pickle opcode: not a pickle, or a damaged one");
    return;
  }
  if (op->use == PickleOpUse::kRefusedCode) {
    fail(op_at_, "opcode " + op_label(code) +
                     " is refused: it names or builds a Python object, which would run code when loaded; "
                     "a flight-recorder dump holds only dicts, lists, strings and numbers");
    return;
  }
  if (op->use == PickleOpUse::kRefusedOther) {
    fail(op_at_, "opcode " + op_label(code) +
                     " is not read: PyTorch and Python 3 write plain data without it (re-pickle at protocol 2 to 5)");
    return;
  }
  bool handled = false;
  if (!step_scalar(code, handled) || handled) return;
  if (!step_text(code, handled) || handled) return;
  if (!step_container(code, handled) || handled) return;
  if (!step_collect(code, handled) || handled) return;
  if (!step_memo(code, handled) || handled) return;
  fail(op_at_, "opcode " + op_label(code) + " has no reader");  // the table and the steps disagree
}

}  // namespace fleetsim::diagnose::pickle_detail
