// Tests for the pickle writer (sim/observe/pickle_writer.h): a genuine PyTorch 2.15
// dump rebuilt byte for byte, each value form read back through the project's pickle
// reader (sim/diagnose/pickle_reader.h), and the opcodes PyTorch's pickler picks.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "fleetsim/pickle_ops.h"
#include "sim/diagnose/pickle_reader.h"
#include "sim/observe/pickle_writer.h"
#include "tests/support/files.h"

namespace fleetsim {
namespace {

using nlohmann::json;
using namespace std::string_literals;

json read_back(const std::string& bytes) {
  Result<json> v = diagnose::read_pickle(bytes, "w.pkl");
  EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.errors().front().to_string());
  return v.ok() ? *v : json();
}

// One value alone: PROTO 2, the value, STOP.
template <typename F>
std::string one(F&& write) {
  PickleWriter p;
  write(p);
  return p.finish();
}

// rank 2 of the stuck_at_start incident never issued a collective: its dump, as
// torch 2.15 wrote it under gloo, is the smallest complete dump there is.
TEST(PickleWriter, RebuildsAGenuineEmptyDumpByteForByte) {
  const std::string real = test_support::slurp(std::string(FLEETSIM_SOURCE_DIR) +
                                               "/tests/fixtures/real/stuck_at_start/comm_lib_trace_rank_2");
  ASSERT_FALSE(real.empty());
  PickleWriter p;
  p.open_dict();
  p.string("version");
  p.string("2.10");
  p.string("pg_config");
  p.open_dict();
  p.string("");
  p.open_dict();
  for (const char* k : {"name", "desc"}) p.string(k), p.string("");
  p.string("ranks");
  p.string("[0, 1, 2, 3]");
  p.close_dict();
  p.close_dict();
  p.string("comm_lib_version");
  p.string("");
  p.string("pg_status");
  p.open_dict();
  p.close_dict();
  p.string("entries");
  p.open_list();
  p.close_list();
  p.close_dict();
  p.memoize();
  EXPECT_EQ(p.finish(), real);
}

TEST(PickleWriter, IntegersTakeTheSmallestOpcodeAndReadBack) {
  struct Case {
    int64_t v;
    uint8_t op;
  };
  const Case cases[] = {{0, pickle_op_code("BININT1")},          {255, pickle_op_code("BININT1")},
                        {256, pickle_op_code("BININT2")},        {65535, pickle_op_code("BININT2")},
                        {65536, pickle_op_code("BININT")},       {-1, pickle_op_code("BININT")},
                        {INT32_MIN, pickle_op_code("BININT")},   {int64_t{1} << 31, pickle_op_code("LONG1")},
                        {1796053595231118472, pickle_op_code("LONG1")}, {INT64_MIN, pickle_op_code("LONG1")}};
  for (const Case& c : cases) {
    const std::string b = one([&](PickleWriter& p) { p.integer(c.v); });
    EXPECT_EQ(static_cast<uint8_t>(b[2]), c.op) << c.v;
    if (c.op == pickle_op_code("LONG1")) {
      EXPECT_EQ(b[3], 8) << "LONG1 always carries 8 bytes";
    }
    EXPECT_EQ(read_back(b), json(c.v)) << c.v;
  }
}

TEST(PickleWriter, FloatsAreBigEndianBinFloat) {
  const std::string b = one([](PickleWriter& p) { p.real(1.5); });
  EXPECT_EQ(b, "\x80\x02G\x3f\xf8\x00\x00\x00\x00\x00\x00."s);
  EXPECT_EQ(read_back(one([](PickleWriter& p) { p.real(-1234.0625); })), json(-1234.0625));
}

TEST(PickleWriter, ScalarsAndContainersReadBack) {
  const std::string b = one([](PickleWriter& p) {
    p.open_dict();
    p.string("t");
    p.boolean(true);
    p.string("f");
    p.boolean(false);
    p.string("n");
    p.none();
    p.string("empty");
    p.open_dict();
    p.close_dict();
    p.string("list");
    p.open_list();
    p.open_list();
    p.integer(3);
    p.integer(4);
    p.close_list();
    p.close_list();
    p.close_dict();
  });
  EXPECT_EQ(b.substr(2, 2), "}("s) << "EMPTY_DICT MARK";
  EXPECT_NE(b.find("}(u"), std::string::npos) << "an empty dict is still EMPTY_DICT MARK SETITEMS";
  EXPECT_EQ(read_back(b), json::parse(R"({"t": true, "f": false, "n": null, "empty": {}, "list": [[3, 4]]})"));
}

TEST(PickleWriter, TuplesOfEverySize) {
  for (size_t n = 0; n <= 5; ++n) {
    const std::string b = one([&](PickleWriter& p) {
      p.open_tuple(n);
      for (size_t i = 0; i < n; ++i) p.integer(static_cast<int64_t>(i));
      p.close_tuple();
    });
    const char* ops[] = {")", "\x85", "\x86", "\x87"};
    EXPECT_EQ(b.substr(b.size() - 2, 1), n <= 3 ? std::string(ops[n]) : "t") << n;
    if (n > 3) {
      EXPECT_EQ(b[2], '(') << "MARK opens a long tuple";
    }
    json want = json::array();
    for (size_t i = 0; i < n; ++i) want.push_back(i);
    EXPECT_EQ(read_back(b), want) << n;
  }
}

// Every string is memoized once; a repeat is a BINGET, and past slot 255 the long forms.
TEST(PickleWriter, StringsAreMemoizedAndRepeatsFetched) {
  const std::string b = one([](PickleWriter& p) {
    p.open_list();
    for (int i = 0; i < 300; ++i) p.string("s" + std::to_string(i));
    p.string("s0");
    p.string("s299");
    p.close_list();
  });
  EXPECT_NE(b.find("h\x00"s), std::string::npos) << "BINGET 0 for the repeated s0";
  EXPECT_NE(b.find("j"s + "\x2b\x01\x00\x00"s), std::string::npos) << "LONG_BINGET 299";
  EXPECT_NE(b.find("r"s + "\x2b\x01\x00\x00"s), std::string::npos) << "LONG_BINPUT 299";
  const json v = read_back(b);
  ASSERT_EQ(v.size(), 302u);
  EXPECT_EQ(v[300], "s0");
  EXPECT_EQ(v[301], "s299");
}

// A container put in the memo comes back filled where it is fetched again.
TEST(PickleWriter, MemoizedContainersComeBackByReference) {
  const std::string b = one([](PickleWriter& p) {
    p.open_list();
    p.open_dict();
    p.string("name");
    p.string("loss");
    p.close_dict();
    const uint32_t slot = p.memoize();
    p.get(slot);
    p.close_list();
  });
  EXPECT_EQ(read_back(b), json::parse(R"([{"name": "loss"}, {"name": "loss"}])"));
}

}  // namespace
}  // namespace fleetsim
