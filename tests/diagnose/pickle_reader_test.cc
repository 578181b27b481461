// Tests for the pickle reader (sim/diagnose/pickle_reader.h): every opcode it reads,
// built byte by byte; every opcode it refuses; hostile files (code, lengths past the
// file, deep nesting, cycles, memo bombs), each one located error; and the files
// Python's pickle writes at protocols 2 to 5 (tests/fixtures/pickle/, make_pickles.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleetsim/pickle_ops.h"
#include "sim/diagnose/pickle_reader.h"
#include "tests/diagnose/pickle_bytes.h"
#include "tests/support/files.h"

namespace fleetsim::diagnose {
namespace {

using nlohmann::json;
using namespace std::string_literals;

using test_support::slurp;
using namespace pickle_bytes;

std::string fixture(const std::string& name) {
  return test_support::fixture_path("pickle/" + name);
}

// The value a pickle holds, as compact JSON text; the error's text when it fails.
std::string read(const std::string& bytes, const PickleLimits& limits = {}) {
  Result<json> v = read_pickle(bytes, "p.pkl", limits);
  return v ? v->dump() : "ERROR " + v.errors().front().to_string();
}

TEST(PickleReader, Scalars) {
  EXPECT_EQ(read(pk("N")), "null");
  EXPECT_EQ(read(pk("\x88")), "true");
  EXPECT_EQ(read(pk("\x89")), "false");
  EXPECT_EQ(read(pk("K\xff")), "255");
  EXPECT_EQ(read(pk("M\xff\xff")), "65535");
  EXPECT_EQ(read(pk("J\xff\xff\xff\xff")), "-1");
  EXPECT_EQ(read(pk("J\x00\x00\x00\x80"s)), "-2147483648");
  // LONG1: 8 bytes little-endian (time_created_ns), none (0), negative, and 2^64-1 in 9.
  EXPECT_EQ(read(pk("\x8a\x08"s + u64(1796049299384559457ULL))), "1796049299384559457");
  EXPECT_EQ(read(pk("\x8a\x00"s)), "0");
  EXPECT_EQ(read(pk("\x8a\x01\xfb"s)), "-5");
  EXPECT_EQ(read(pk("\x8a\x09"s + u64(UINT64_MAX) + "\x00"s)), "18446744073709551615");
  EXPECT_EQ(read(pk("\x8a\x08"s + u64(uint64_t{1} << 63))), "-9223372036854775808");
  EXPECT_EQ(read(pk("\x8b"s + u32(2) + "\x00\x01"s)), "256");
  EXPECT_EQ(read(pk("G\x3f\xd0\x00\x00\x00\x00\x00\x00"s)), "0.25");  // big-endian 0.25
  EXPECT_EQ(read(pk("X"s + u32(2) + "ab")), "\"ab\"");
  EXPECT_EQ(read(pk("\x8c\x03"s + "abc")), "\"abc\"");
  EXPECT_EQ(read(pk("\x8d"s + u64(1) + "z")), "\"z\"");
  EXPECT_EQ(read(pk("X"s + u32(6) + "gr\xc3\xbc\xc3\x9f")), "\"gr\xc3\xbc\xc3\x9f\"");
  EXPECT_EQ(read(pk("C\x02\x00\x01"s)), "{\"bytes\":[0,1],\"subtype\":null}");
  EXPECT_EQ(read(pk("B"s + u32(1) + "\x07")), "{\"bytes\":[7],\"subtype\":null}");
  EXPECT_EQ(read(pk("\x8e"s + u64(1) + "\x07")), "{\"bytes\":[7],\"subtype\":null}");
  EXPECT_EQ(read(pk("\x96"s + u64(1) + "\x07")), "{\"bytes\":[7],\"subtype\":null}");
}

TEST(PickleReader, TextFormsOfProtocolsZeroAndOne) {
  EXPECT_EQ(read(pk("I42\n")), "42");
  EXPECT_EQ(read(pk("I01\n")), "true");
  EXPECT_EQ(read(pk("I00\n")), "false");
  EXPECT_EQ(read(pk("L-7L\n")), "-7");
  EXPECT_EQ(read(pk("F1.5\n")), "1.5");
  EXPECT_EQ(read(pk("K\x05p3\n0g3\n"s)), "5");  // PUT, POP, GET
}

TEST(PickleReader, Containers) {
  EXPECT_EQ(read(pk("](e")), "[]");                          // EMPTY_LIST MARK APPENDS, even when empty
  EXPECT_EQ(read(pk("}(u")), "{}");                          // EMPTY_DICT MARK SETITEMS, even when empty
  EXPECT_EQ(read(pk("](K\x01K\x02" "e")), "[1,2]");
  EXPECT_EQ(read(pk("]K\x01" "a")), "[1]");                  // APPEND
  EXPECT_EQ(read(pk("(K\x01K\x02l")), "[1,2]");              // MARK ... LIST
  EXPECT_EQ(read(pk(")")), "[]");                            // EMPTY_TUPLE
  EXPECT_EQ(read(pk("K\x01\x85")), "[1]");                   // TUPLE1
  EXPECT_EQ(read(pk("K\x01K\x02\x86")), "[1,2]");            // TUPLE2
  EXPECT_EQ(read(pk("K\x01K\x02K\x03\x87")), "[1,2,3]");     // TUPLE3
  EXPECT_EQ(read(pk("(K\x01K\x02K\x03K\x04t")), "[1,2,3,4]");  // MARK ... TUPLE
  EXPECT_EQ(read(pk("}" + str("a", 0) + "K\x01s")), "{\"a\":1}");  // SETITEM
  EXPECT_EQ(read(pk("}(" + str("a", 0) + "K\x01" + str("b", 1) + "N" + "u")), "{\"a\":1,\"b\":null}");
  EXPECT_EQ(read(pk("(" + str("a", 0) + "K\x01" + "d")), "{\"a\":1}");  // MARK ... DICT
  EXPECT_EQ(read(pk("}(K\x07K\x01\x88K\x02Nh\x00u"s + "")), "ERROR p.pkl: error: byte 12: memo id 0 was never put");
  EXPECT_EQ(read(pk("}(K\x07K\x01\x88K\x02NK\x03u")), "{\"7\":1,\"None\":3,\"True\":2}");  // non-string keys as text
  EXPECT_EQ(read(pk("\x8f(K\x02K\x01\x90")), "[2,1]");       // EMPTY_SET MARK ADDITEMS
  EXPECT_EQ(read(pk("(K\x02K\x01\x91")), "[2,1]");           // MARK ... FROZENSET
  EXPECT_EQ(read(pk("K\x01K\x02" "0\x85")), "[1]");          // POP
  EXPECT_EQ(read(pk("K\x01(K\x02K\x03" "1\x85")), "[1]");    // POP_MARK
  EXPECT_EQ(read(pk("K\x01" "2\x86")), "[1,1]");             // DUP
}

// Containers filled a batch at a time while others are made and filled between the
// batches (as a pickler writes a list of more than 1,000 items, or a dict that holds
// itself through the memo): each keeps its own items, in order.
TEST(PickleReader, ContainersFilledInBatchesAmongOthers) {
  // outer list: APPENDS [1, [7, 8]], then APPEND 2, then a dict filled twice around an inner list.
  EXPECT_EQ(read(pk("]q\x00(K\x01](K\x07K\x08"s + "ee" + "K\x02" + "a")), "[1,[7,8],2]");
  EXPECT_EQ(read(pk("}q\x00("s + str("a", 1) + "K\x01u" + str("l", 2) + "](K\x05"s + "es" + "h\x00"s + str("b", 3) +
                    "K\x02s")),
            "{\"a\":1,\"b\":2,\"l\":[5]}");
  // A list of 2,500 items in three APPENDS batches, a new list filled between each.
  std::string body = "]q\x00"s;
  std::string expect = "[";
  for (int batch = 0; batch < 3; ++batch) {
    body += "(";
    for (int k = 0; k < (batch < 2 ? 1000 : 500); ++k) {
      const int v = batch * 1000 + k;
      body += "M"s + static_cast<char>(v & 0xff) + static_cast<char>(v >> 8);
      expect += (v ? "," : "") + std::to_string(v);
    }
    body += "e](K\x01K\x02"s + "e0h\x00"s;  // another list filled, dropped, the big one fetched again
  }
  EXPECT_EQ(read(pk(body)), expect + "]");
}

// A thread's reads reuse one arena's memory: a read that stopped half way (a cycle
// found while nodes were marked on the walk's path) leaves nothing the next read sees.
TEST(PickleReader, AReadAfterAFailedOneStartsClean) {
  const std::string nested = pk("](](K\x01" "ee");  // node 0 holds node 1, as the cycle's walk left them
  EXPECT_EQ(read(nested), "[[1]]");
  EXPECT_EQ(read(pk("]q\x00](h\x00"s + "ea")), "ERROR p.pkl: error: byte 2: a list that holds itself: refused");
  EXPECT_EQ(read(nested), "[[1]]");
  EXPECT_EQ(read(pk("}(" + str("a", 0) + "K\x01u")), "{\"a\":1}");
}

// A container put in the memo before it is filled (PyTorch's pickler does this) is
// seen filled when fetched; strings and containers repeat through every memo form.
TEST(PickleReader, MemoSharesValuesByReference) {
  const std::string frame = "}q\x05(" + str("name", 6) + str("loss", 7) + "u";
  EXPECT_EQ(read(pk("](" + frame + "h\x05" "e")), "[{\"name\":\"loss\"},{\"name\":\"loss\"}]");
  EXPECT_EQ(read(pk("](" + str("a", 0) + "h\x00"s + "e")), "[\"a\",\"a\"]");
  EXPECT_EQ(read(pk("](K\x09r"s + u32(300) + "j" + u32(300) + "e")), "[9,9]");  // LONG_BINPUT, LONG_BINGET
  EXPECT_EQ(read("\x80\x04\x95"s + u64(10) + "](\x8c\x01" "a\x94h\x00"s + "e."), "[\"a\",\"a\"]");  // FRAME, MEMOIZE
  EXPECT_EQ(read("\x80\x05K\x01."s), "1");
}

TEST(PickleReader, EveryOpcodeOfTheTableIsReadOrRefused) {
  for (const PickleOp& op : kPickleOps) {
    if (op.use == PickleOpUse::kRead) continue;
    const std::string out = read(pk("N"s + static_cast<char>(op.code)));
    EXPECT_NE(out.find("p.pkl: error: byte 3: opcode " + std::string(op.name) + " (0x"), std::string::npos) << out;
    EXPECT_NE(out.find(op.use == PickleOpUse::kRefusedCode ? "is refused" : "is not read"), std::string::npos) << out;
  }
}

TEST(PickleReader, HostileFilesAreOneLocatedError) {
  // GLOBAL: the opening of a pickle that runs code on load.
  const std::string global = fixture("hostile/global/nccl_trace_rank_0");
  Result<json> g = read_pickle(slurp(global), global);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.errors().front().to_string(),
            global + ": error: byte 2: opcode GLOBAL (0x63) is refused: it names or builds a Python object, which "
                     "would run code when loaded; a flight-recorder dump holds only dicts, lists, strings and numbers");
  // Lengths of 4 GB and 2^63 in a file of a few bytes: refused before any allocation.
  EXPECT_EQ(read(slurp(fixture("hostile/huge_length/nccl_trace_rank_0"))),
            "ERROR p.pkl: error: byte 6: the file ends inside BINUNICODE (it needs 4294967295 more bytes, the file has "
            "18): a truncated pickle?");
  EXPECT_NE(read(pk("\x8d"s + u64(uint64_t{1} << 63))).find("byte 2: the file ends inside BINUNICODE8"), std::string::npos);
  EXPECT_NE(read(pk("\x8b"s + u32(0x7fffffff))).find("byte 2: the file ends inside LONG4"), std::string::npos);
  EXPECT_NE(read(pk("\x95"s + u64(UINT64_MAX))).find("byte 2: the file ends inside the FRAME"), std::string::npos);
  // 100,000 nested lists, as MARKs, as APPENDs and as TUPLE1s: the depth bound, located.
  std::string marks, appends = "]", tuples = "N";
  for (int i = 0; i < 100000; ++i) marks += "](";
  for (int i = 0; i < 100000; ++i) appends += "]";
  for (int i = 0; i < 100000; ++i) appends += "a";
  for (int i = 0; i < 100000; ++i) tuples += "\x85";
  EXPECT_EQ(read(pk(marks)), "ERROR p.pkl: error: byte 203: more than 100 open MARKs (containers nested too deep): refused");
  EXPECT_EQ(read(pk(appends)), "ERROR p.pkl: error: byte 102: containers nested deeper than 100: refused");
  EXPECT_EQ(read(pk(tuples)), "ERROR p.pkl: error: byte 99902: containers nested deeper than 100: refused");
}

TEST(PickleReader, CyclesAndMemoBombsAreRefused) {
  EXPECT_EQ(read(pk("]q\x00h\x00"s + "a")), "ERROR p.pkl: error: byte 2: a list that holds itself: refused");
  // Each level a list holding the one below twice: 2^60 values from 600 bytes.
  std::string bomb = "]q\x00"s;
  for (int level = 1; level <= 60; ++level)
    bomb += "](h"s + static_cast<char>(level - 1) + "h" + static_cast<char>(level - 1) + "eq" + static_cast<char>(level);
  const std::string out = read(pk(bomb));
  EXPECT_NE(out.find("the values shared through the memo expand past 64 times the file's size: refused"),
            std::string::npos) << out;
}

TEST(PickleReader, MalformedInputIsLocated) {
  EXPECT_EQ(read("\x80\x02](K\x01"s), "ERROR p.pkl: error: byte 6: the file ends before STOP: a truncated pickle?");
  EXPECT_EQ(read(pk("X"s + u32(5) + "ab")), "ERROR p.pkl: error: byte 2: the file ends inside BINUNICODE (it needs 5 "
                                                  "more bytes, the file has 10): a truncated pickle?");
  EXPECT_EQ(read(pk("X"s + u32(2) + "\xc3\x28")), "ERROR p.pkl: error: byte 2: BINUNICODE string is not valid UTF-8");
  EXPECT_EQ(read(pk("\xff")), "ERROR p.pkl: error: byte 2: 0xff is not a pickle opcode: not a pickle, or a damaged one");
  EXPECT_EQ(read("\x80\x06N."s), "ERROR p.pkl: error: byte 0: pickle protocol 6 is newer than 5");
  EXPECT_EQ(read(pk("\x8a\x09"s + u64(0) + "\x01")), "ERROR p.pkl: error: byte 2: LONG1 integer of 9 bytes is wider than 64 bits");
  EXPECT_EQ(read(pk("}K\x01" "a")), "ERROR p.pkl: error: byte 5: APPEND needs a list, found a dict");
  EXPECT_EQ(read(pk("a")), "ERROR p.pkl: error: byte 2: APPEND needs a value on the stack, there is none");
  EXPECT_EQ(read(pk("e")), "ERROR p.pkl: error: byte 2: APPENDS needs a MARK before it, there is none");
  EXPECT_EQ(read(pk("}(K\x01u")), "ERROR p.pkl: error: byte 6: SETITEMS needs key and value pairs, found an odd number of values");
  EXPECT_EQ(read(pk("}(K\x01\x85K\x02u")), "ERROR p.pkl: error: byte 6: a dict key must be a string or a number, got a tuple");
  EXPECT_EQ(read("\x80\x02."s), "ERROR p.pkl: error: byte 2: STOP with nothing on the stack");
}

TEST(PickleReader, BoundsOnValuesAndMemo) {
  PickleLimits small;
  small.max_values = 3;
  EXPECT_EQ(read(pk("](NNNe"), small), "ERROR p.pkl: error: byte 6: more than 3 values: refused as too large");
  small = PickleLimits{};
  small.max_memo = 2;
  EXPECT_EQ(read(pk("Nq\x00q\x01q\x00q\x02"s), small), "ERROR p.pkl: error: byte 9: more than 2 memo entries: refused as too large");
}

// The opcodes a dump is made of pass on where they can (APPEND, SETITEM, APPENDS,
// SETITEMS, TUPLE2, LONG1, the memo puts); at each of their checks the error is the
// one the general step gives, at the opcode's byte.
TEST(PickleReader, CommonOpcodesKeepEveryCheck) {
  // A list whose items moved (another list filled after it) is appended to in its new room.
  EXPECT_EQ(read(pk("](K\x01K\x02" "e](Ne" "a" "K\x03" "a" "K\x04" "a")), "[1,2,[null],3,4]");
  EXPECT_EQ(read(pk("}" + str("a", 0) + "K\x01s" + str("b", 1) + "K\x02s" + "(h\x00"s + "K\x03u")), "{\"a\":3,\"b\":2}");
  EXPECT_EQ(read(pk("](K\x01" "a")), "ERROR p.pkl: error: byte 6: APPEND needs a list on the stack, there is none");
  EXPECT_EQ(read(pk("]K\x01K\x02s")), "ERROR p.pkl: error: byte 7: SETITEM needs a dict, found a list");
  EXPECT_EQ(read(pk("}(K\x01s")), "ERROR p.pkl: error: byte 6: SETITEM needs a value on the stack, there is none");
  EXPECT_EQ(read(pk("}((K\x01K\x02u")), "ERROR p.pkl: error: byte 9: SETITEMS needs a dict on the stack, there is none");
  EXPECT_EQ(read(pk(")(Ne")), "ERROR p.pkl: error: byte 5: APPENDS needs a list, found a tuple");
  EXPECT_EQ(read(pk("K\x01(K\x02\x86")), "ERROR p.pkl: error: byte 7: TUPLE2 needs a value on the stack, there is none");
  EXPECT_EQ(read(pk("\x8a\x02\xff\xff")), "-1");  // LONG1, negative
  EXPECT_EQ(read(pk("\x8a\x03\x01\x00\x80"s)), "-8388607");
  EXPECT_EQ(read(pk("\x8a\x02\x01\x02")), "513");
  EXPECT_EQ(read("\x80\x02\x8a\x02\x01"s), "ERROR p.pkl: error: byte 2: the file ends inside LONG1 (it needs 2 more "
                                                "bytes, the file has 5): a truncated pickle?");
  PickleLimits small;
  small.max_values = 2;
  EXPECT_EQ(read(pk("K\x01K\x02\x86"), small), "ERROR p.pkl: error: byte 6: more than 2 values: refused as too large");
  small = PickleLimits{};
  small.max_memo = 1;
  EXPECT_EQ(read(pk("N\x94N\x94"), small), "ERROR p.pkl: error: byte 5: more than 1 memo entries: refused as too large");
  EXPECT_EQ(read(pk("N\x94" "0\x94"), small), "ERROR p.pkl: error: byte 5: a memo put needs a value on the stack, there is none");
}

// The opcodes run() reads in its tight path (BINGET, BINPUT, LONG_BINPUT, EMPTY_LIST,
// EMPTY_DICT, MARK, APPEND, BINUNICODE) at each check that would fail: the first error,
// at the opcode's byte, with the general way's text; and their nodes' offsets.
TEST(PickleReader, TightPathOpcodesKeepEveryCheck) {
  const std::string e = "ERROR p.pkl: error: byte ";
  EXPECT_EQ(read(pk("]Nq\x00"s + "ah\x00"s + "a")), "[null,null]");
  EXPECT_EQ(read(pk("Nh\x01")), e + "3: memo id 1 was never put");
  EXPECT_EQ(read(pk("Nq\x00"s + "0h\x00h\x07"s)), e + "8: memo id 7 was never put");
  EXPECT_EQ(read(pk("r"s + u32(0))), e + "2: a memo put needs a value on the stack, there is none");
  EXPECT_EQ(read(pk("Nq\x00"s + "0q\x00"s)), e + "6: a memo put needs a value on the stack, there is none");
  EXPECT_EQ(read(pk("Nr" + u32(1) + "0r" + u32(1))), e + "9: a memo put needs a value on the stack, there is none");
  EXPECT_EQ(read(pk("X"s + u32(2) + "\xc3\x28")), e + "2: BINUNICODE string is not valid UTF-8");
  EXPECT_EQ(read("\x80\x02X"s + u32(9) + "ab"), e + "2: the file ends inside BINUNICODE (it needs 9 more bytes, "
                                                     "the file has 9): a truncated pickle?");
  EXPECT_EQ(read(pk("}Na")), e + "4: APPEND needs a list, found a dict");
  EXPECT_EQ(read(pk("a")), e + "2: APPEND needs a value on the stack, there is none");
  PickleLimits small;
  small.max_values = 2;
  EXPECT_EQ(read(pk("]}]"), small), e + "4: more than 2 values: refused as too large");
  EXPECT_EQ(read(pk("]}}"), small), e + "4: more than 2 values: refused as too large");
  EXPECT_EQ(read(pk("]}X"s + u32(1) + "a"), small), e + "4: more than 2 values: refused as too large");
  small = PickleLimits{};
  small.max_memo = 2;
  EXPECT_EQ(read(pk("Nq\x00Nq\x01Nq\x01Nr"s + u32(2)), small), e + "12: more than 2 memo entries: refused as too large");
  small = PickleLimits{};
  small.max_depth = 2;
  EXPECT_EQ(read(pk("]((("), small), e + "5: more than 2 open MARKs (containers nested too deep): refused");
  // Each node keeps its opcode's byte, which the walk's errors name.
  EXPECT_EQ(read(pk("N]q\x00h\x00"s + "a")), e + "3: a list that holds itself: refused");
  EXPECT_EQ(read(pk("N0}]Ns")), e + "5: a dict key must be a string or a number, got a list");
}

// The node-making opcodes run() reads in its tight path (the integers, LONG1, None,
// the booleans, TUPLE2) and APPENDS and SETITEMS there: past max_values each stops at
// its own byte, a tuple keeps its byte, and lists filled among others keep their items.
TEST(PickleReader, TightPathNodesKeepTheirBoundsAndBytes) {
  const std::string e = "ERROR p.pkl: error: byte ";
  PickleLimits small;
  small.max_values = 1;
  for (const std::string& op : {"K\x05"s, "M\x05\x00"s, "J\x05\x00\x00\x00"s, "\x8a\x01\x05"s, "N"s, "\x88"s, "\x89"s})
    EXPECT_EQ(read(pk("N" + op), small), e + "3: more than 1 values: refused as too large") << op;
  EXPECT_EQ(read(pk("K\x01M\x02\x01J\xff\xff\xff\xff\x8a\x01\x7f\x88\x89N\xff")),
            e + "18: 0xff is not a pickle opcode: not a pickle, or a damaged one");
  EXPECT_EQ(read(pk("](K\x01M\x02\x01J\xff\xff\xff\xff\x8a\x01\x7f\x88\x89Ne")), "[1,258,-1,127,true,false,null]");
  EXPECT_EQ(read(pk("}(K\x01K\x02\x86K\x03u")), e + "8: a dict key must be a string or a number, got a tuple");
  EXPECT_EQ(read(pk("](K\x01" "e](K\x02" "e0(K\x03K\x04" "e(K\x05" "e")), "[1,3,4,5]");
  EXPECT_EQ(read(pk("}(" + str("a", 0) + "K\x01u}(h\x00K\x02u0("s + str("b", 1) + "K\x03u")), "{\"a\":1,\"b\":3}");
  // SHORT_BINUNICODE and MEMOIZE, as Python's pickler writes strings
  EXPECT_EQ(read(pk("](\x8c\x03h\xc3\xa9\x94\x8c\x00h\x00"s + "e")), "[\"h\u00e9\",\"\",\"h\u00e9\"]");
  EXPECT_EQ(read(pk("N\x8c\x02\xc3\x28")), e + "3: SHORT_BINUNICODE string is not valid UTF-8");
  EXPECT_EQ(read("\x80\x02\x8c\x05" "ab"s), e + "2: the file ends inside SHORT_BINUNICODE (it needs 5 more bytes, "
                                              "the file has 6): a truncated pickle?");
  EXPECT_EQ(read(pk("N\x8c\x01" "a"), small), e + "3: more than 1 values: refused as too large");
}

// Every opcode with a fixed argument (an integer, a length, a memo id), cut inside it:
// the error names the opcode, the bytes it needs and the file's size, at its byte.
TEST(PickleReader, EveryFixedArgumentCutShortIsLocated) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"K", "BININT1 (it needs 1"},          {"M\x01", "BININT2 (it needs 2"},
      {"J\x01\x02\x03", "BININT (it needs 4"}, {"\x8a", "LONG1 (it needs 1"},
      {"\x8b\x01", "LONG4 (it needs 4"},     {"G\x01\x02", "BINFLOAT (it needs 8"},
      {"X", "BINUNICODE (it needs 4"},        {"\x8c", "SHORT_BINUNICODE (it needs 1"},
      {"\x8d", "BINUNICODE8 (it needs 8"},    {"C", "SHORT_BINBYTES (it needs 1"},
      {"B", "BINBYTES (it needs 4"},          {"\x8e", "BINBYTES8 (it needs 8"},
      {"\x96", "BYTEARRAY8 (it needs 8"},     {"\x80", "PROTO (it needs 1"},
      {"\x95\x01", "FRAME (it needs 8"},      {"Nq", "BINPUT (it needs 1"},
      {"Nr\x01", "LONG_BINPUT (it needs 4"},  {"h", "BINGET (it needs 1"},
      {"j", "LONG_BINGET (it needs 4"},
  };
  for (const auto& [body, says] : cases) {
    const std::string bytes = "\x80\x02"s + body;  // no STOP: the file ends inside the argument
    const size_t op_at = bytes[2] == 'N' ? 3 : 2;
    EXPECT_EQ(read(bytes), "ERROR p.pkl: error: byte " + std::to_string(op_at) + ": the file ends inside " + says +
                               " more bytes, the file has " + std::to_string(bytes.size()) + "): a truncated pickle?")
        << says;
  }
}

// Memo ids far ahead of those put so far live apart from the dense ones until the dense
// ones reach them: a value put there is still found, and putting it again is no new entry.
TEST(PickleReader, SparseMemoIdsMeetTheDenseOnes) {
  std::string body = "](K\x07r" + u32(5000);
  for (uint32_t i = 0; i < 2000; ++i) body += "Nr" + u32(i) + "0";
  body += "Nr" + u32(5001) + "0" + "j" + u32(5000) + "K\x08r" + u32(5000) + "j" + u32(5000) + "e";
  PickleLimits limits;
  limits.max_memo = 2002;
  EXPECT_EQ(read(pk(body), limits), "[7,7,8,8]");
  limits.max_memo = 2001;
  EXPECT_NE(read(pk(body), limits).find("more than 2001 memo entries"), std::string::npos);
}

// The items of a dict's list handed out one at a time, the dict returned without it.
TEST(PickleReader, StreamingHandsOutAListsItemsOneByOne) {
  const std::string dump = pk("}(" + str("version", 0) + str("2.10", 1) + str("entries", 2) + "](K\x01}(h\x01K\x02ue" + "u");
  std::vector<std::string> items;
  auto sink = [&](size_t i, json&& v) { items.push_back(std::to_string(i) + "=" + v.dump()); };
  Result<json> rest = read_pickle_streaming(dump, "p.pkl", "entries", sink);
  ASSERT_TRUE(rest.ok()) << rest.errors().front().to_string();
  EXPECT_EQ(rest->dump(), "{\"version\":\"2.10\"}");
  EXPECT_EQ(items, (std::vector<std::string>{"0=1", "1={\"2.10\":2}"}));
  EXPECT_EQ(read(dump), "{\"entries\":[1,{\"2.10\":2}],\"version\":\"2.10\"}");
  // No such list (or no dict): the whole value comes back and nothing is handed out.
  items.clear();
  Result<json> whole = read_pickle_streaming(pk("](K\x01" "e"), "p.pkl", "entries", sink);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->dump(), "[1]");
  EXPECT_TRUE(items.empty());
  // An item past the bounds is the same located error.
  Result<json> cyclic = read_pickle_streaming(pk("}(" + str("entries", 0) + "]q\x01h\x01" "a" + "u"), "p.pkl",
                                              "entries", sink);
  ASSERT_FALSE(cyclic.ok());
  EXPECT_EQ(cyclic.errors().front().to_string(), "p.pkl: error: byte 18: a list that holds itself: refused");
}

// Python's pickle at protocols 2 to 5 (make_pickles.py wrote the file and, from the
// same value, the JSON it must read as).
TEST(PickleReader, PythonPicklesOfEveryProtocol) {
  for (int proto = 2; proto <= 5; ++proto) {
    const std::string file = fixture("protocol_" + std::to_string(proto) + ".pkl");
    Result<json> got = read_pickle(slurp(file), file);
    ASSERT_TRUE(got.ok()) << got.errors().front().to_string();
    const json want = json::parse(slurp(fixture("protocol_" + std::to_string(proto) + ".json")));
    EXPECT_EQ(got->dump(), want.dump()) << "protocol " << proto;
    EXPECT_TRUE(looks_like_pickle(slurp(file)));
  }
  EXPECT_FALSE(looks_like_pickle("{\"version\": \"2.10\"}"));
  EXPECT_FALSE(looks_like_pickle("\x80"));
}

// The docs' opcode table (docs/flight-recorder-formats.md) is kPickleOps, row for row.
TEST(PickleReader, OpcodeTableInTheDocsMatchesTheCode) {
  std::istringstream doc(slurp(std::string(FLEETSIM_SOURCE_DIR) + "/docs/flight-recorder-formats.md"));
  std::vector<std::string> rows;
  bool marked = false;
  for (std::string line; std::getline(doc, line);) {
    if (line == "<!-- vocabulary: pickle-opcodes -->") marked = true;
    else if (marked && line.rfind("| `", 0) == 0) rows.push_back(line);
    else if (marked && !rows.empty() && line.empty()) break;
  }
  ASSERT_EQ(rows.size(), std::size(kPickleOps));
  for (size_t i = 0; i < rows.size(); ++i) {
    const PickleOp& op = kPickleOps[i];
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", op.code);
    const char* use = op.use == PickleOpUse::kRead ? "read" : op.use == PickleOpUse::kRefusedCode ? "refused: code"
                                                                                                  : "refused: other";
    EXPECT_EQ(rows[i], "| `" + std::string(op.name) + "` | `" + hex + "` | " + use + " |");
  }
}

}  // namespace
}  // namespace fleetsim::diagnose
