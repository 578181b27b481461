// The pickle opcodes, one table: each opcode's byte, its name (as Python's
// pickletools names it) and whether the pickle reader (sim/diagnose) reads it or
// refuses it, and why. The flight recorder's pickle writer (sim/observe) takes its
// bytes from here too. docs/flight-recorder-formats.md lists the same opcodes.
#pragma once

#include <cstdint>
#include <string_view>

namespace fleetsim {

enum class PickleOpUse : uint8_t {
  kRead,          // plain data: read
  kRefusedCode,   // names or builds a Python object (code would run on load)
  kRefusedOther,  // plain data in a form no PyTorch or Python 3 pickler writes by default
};

struct PickleOp {
  uint8_t code;
  std::string_view name;
  PickleOpUse use;
};

inline constexpr PickleOp kPickleOps[] = {
    {0x80, "PROTO", PickleOpUse::kRead},
    {0x95, "FRAME", PickleOpUse::kRead},
    {'.', "STOP", PickleOpUse::kRead},
    {'(', "MARK", PickleOpUse::kRead},
    {'0', "POP", PickleOpUse::kRead},
    {'1', "POP_MARK", PickleOpUse::kRead},
    {'2', "DUP", PickleOpUse::kRead},
    {'N', "NONE", PickleOpUse::kRead},
    {0x88, "NEWTRUE", PickleOpUse::kRead},
    {0x89, "NEWFALSE", PickleOpUse::kRead},
    {'I', "INT", PickleOpUse::kRead},
    {'J', "BININT", PickleOpUse::kRead},
    {'K', "BININT1", PickleOpUse::kRead},
    {'M', "BININT2", PickleOpUse::kRead},
    {'L', "LONG", PickleOpUse::kRead},
    {0x8a, "LONG1", PickleOpUse::kRead},
    {0x8b, "LONG4", PickleOpUse::kRead},
    {'F', "FLOAT", PickleOpUse::kRead},
    {'G', "BINFLOAT", PickleOpUse::kRead},
    {'X', "BINUNICODE", PickleOpUse::kRead},
    {0x8c, "SHORT_BINUNICODE", PickleOpUse::kRead},
    {0x8d, "BINUNICODE8", PickleOpUse::kRead},
    {'C', "SHORT_BINBYTES", PickleOpUse::kRead},
    {'B', "BINBYTES", PickleOpUse::kRead},
    {0x8e, "BINBYTES8", PickleOpUse::kRead},
    {0x96, "BYTEARRAY8", PickleOpUse::kRead},
    {']', "EMPTY_LIST", PickleOpUse::kRead},
    {'a', "APPEND", PickleOpUse::kRead},
    {'e', "APPENDS", PickleOpUse::kRead},
    {'l', "LIST", PickleOpUse::kRead},
    {')', "EMPTY_TUPLE", PickleOpUse::kRead},
    {'t', "TUPLE", PickleOpUse::kRead},
    {0x85, "TUPLE1", PickleOpUse::kRead},
    {0x86, "TUPLE2", PickleOpUse::kRead},
    {0x87, "TUPLE3", PickleOpUse::kRead},
    {'}', "EMPTY_DICT", PickleOpUse::kRead},
    {'d', "DICT", PickleOpUse::kRead},
    {'s', "SETITEM", PickleOpUse::kRead},
    {'u', "SETITEMS", PickleOpUse::kRead},
    {0x8f, "EMPTY_SET", PickleOpUse::kRead},
    {0x90, "ADDITEMS", PickleOpUse::kRead},
    {0x91, "FROZENSET", PickleOpUse::kRead},
    {'p', "PUT", PickleOpUse::kRead},
    {'q', "BINPUT", PickleOpUse::kRead},
    {'r', "LONG_BINPUT", PickleOpUse::kRead},
    {0x94, "MEMOIZE", PickleOpUse::kRead},
    {'g', "GET", PickleOpUse::kRead},
    {'h', "BINGET", PickleOpUse::kRead},
    {'j', "LONG_BINGET", PickleOpUse::kRead},
    {'c', "GLOBAL", PickleOpUse::kRefusedCode},
    {0x93, "STACK_GLOBAL", PickleOpUse::kRefusedCode},
    {'R', "REDUCE", PickleOpUse::kRefusedCode},
    {'b', "BUILD", PickleOpUse::kRefusedCode},
    {'i', "INST", PickleOpUse::kRefusedCode},
    {'o', "OBJ", PickleOpUse::kRefusedCode},
    {0x81, "NEWOBJ", PickleOpUse::kRefusedCode},
    {0x92, "NEWOBJ_EX", PickleOpUse::kRefusedCode},
    {'P', "PERSID", PickleOpUse::kRefusedCode},
    {'Q', "BINPERSID", PickleOpUse::kRefusedCode},
    {0x82, "EXT1", PickleOpUse::kRefusedCode},
    {0x83, "EXT2", PickleOpUse::kRefusedCode},
    {0x84, "EXT4", PickleOpUse::kRefusedCode},
    {0x97, "NEXT_BUFFER", PickleOpUse::kRefusedOther},
    {0x98, "READONLY_BUFFER", PickleOpUse::kRefusedOther},
    {'S', "STRING", PickleOpUse::kRefusedOther},
    {'T', "BINSTRING", PickleOpUse::kRefusedOther},
    {'U', "SHORT_BINSTRING", PickleOpUse::kRefusedOther},
    {'V', "UNICODE", PickleOpUse::kRefusedOther},
};

// The table's row for `code`; nullptr for a byte that is no pickle opcode.
constexpr const PickleOp* find_pickle_op(uint8_t code) {
  for (const PickleOp& op : kPickleOps)
    if (op.code == code) return &op;
  return nullptr;
}

// The byte of the opcode pickletools calls `name`; usable only where it can be
// evaluated at compile time, so a misspelt name fails the build.
consteval uint8_t pickle_op_code(std::string_view name) {
  for (const PickleOp& op : kPickleOps)
    if (op.name == name) return op.code;
  throw "no such pickle opcode";  // not a constant expression: a compile error
}

}  // namespace fleetsim
