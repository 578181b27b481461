// Tests for the streamed JSON writer (sim/observe/json_writer.h): it must write
// byte for byte what nlohmann's dump(1, ' ', false, replace) writes for the same
// tree, since the flight recorder's JSON dumps were that dump before it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/observe/json_writer.h"

namespace fleetsim {
namespace {

using Json = nlohmann::ordered_json;

std::string reference(const Json& v) { return v.dump(1, ' ', false, Json::error_handler_t::replace); }

// Writes v through the writer, member by member, in the tree's own order.
void walk(const Json& v, JsonWriter& w) {
  switch (v.type()) {
    case Json::value_t::object:
      w.open_object();
      for (const auto& [k, x] : v.items()) {
        w.key(k);
        walk(x, w);
      }
      return w.close_object();
    case Json::value_t::array:
      w.open_array();
      for (const Json& x : v) walk(x, w);
      return w.close_array();
    case Json::value_t::string: return w.string(v.get_ref<const std::string&>());
    case Json::value_t::boolean: return w.boolean(v.get<bool>());
    case Json::value_t::number_float: return w.real(v.get<double>());
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return w.integer(v.get<int64_t>());
    default: return w.null();
  }
}

std::string written(const Json& v) {
  JsonWriter w;
  walk(v, w);
  return w.finish();
}

// Strings drawn from pieces that each take a different path: plain ASCII, the
// characters JSON escapes, DEL, UTF-8 of every length, and bytes that are not UTF-8.
std::string random_string(std::mt19937_64& rng) {
  static const char* const kPieces[] = {"a",  "step 400", " ",  "\"",   "\\",       "\n", "\t", "\x01", "\x1f", "\x7f",
                                        "/",  "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\xc3", "\xe2\x82",
                                        "{}", "nccl:all_reduce", ""};
  std::string s;
  const int n = static_cast<int>(rng() % 6);
  for (int i = 0; i < n; ++i) s += kPieces[rng() % std::size(kPieces)];
  return s;
}

double random_double(std::mt19937_64& rng) {
  static const double kSpecial[] = {0.0, -0.0, 1.0, 0.1, 1e-5, 1e16, 1e17, -2.5, 123456.789, 1e300, 5e-324,
                                    std::numeric_limits<double>::max(), std::nan(""),
                                    std::numeric_limits<double>::infinity()};
  if (rng() % 2) return kSpecial[rng() % std::size(kSpecial)];
  return std::ldexp(static_cast<double>(rng() % 1'000'000'007) - 5e8, static_cast<int>(rng() % 80) - 40);
}

Json random_value(std::mt19937_64& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 3 ? 5 : 7));
  switch (kind) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: {
      static const int64_t kInts[] = {0, -1, 255, 65536, std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max()};
      return rng() % 2 ? kInts[rng() % std::size(kInts)] : static_cast<int64_t>(rng());
    }
    case 3: return random_double(rng);
    case 4: return random_string(rng);
    case 5: {
      Json a = Json::array();
      for (int n = static_cast<int>(rng() % 4); n > 0; --n) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      Json o = Json::object();
      for (int n = static_cast<int>(rng() % 4); n > 0; --n) o[random_string(rng)] = random_value(rng, depth + 1);
      return o;
    }
  }
}

TEST(JsonWriter, WritesWhatNlohmannDumpsForRandomTrees) {
  std::mt19937_64 rng(20261202);
  for (int i = 0; i < 3000; ++i) {
    Json v = random_value(rng, 0);
    ASSERT_EQ(written(v), reference(v)) << "tree " << i;
  }
}

TEST(JsonWriter, LaysOutNestingAndEmptyContainersAsTheDump) {
  const Json v = Json::parse(R"({"a": [], "b": {}, "c": [[1], {"d": null}], "e": "x"})");
  EXPECT_EQ(written(v), "{\n \"a\": [],\n \"b\": {},\n \"c\": [\n  [\n   1\n  ],\n  {\n   \"d\": null\n  }\n ],\n"
                        " \"e\": \"x\"\n}");
  EXPECT_EQ(written(v), reference(v));
}

TEST(JsonWriter, EscapesAndReplacesAsTheDump) {
  const Json v = Json::array({"tab\there", "quote\"back\\", "bad \xff byte", "caf\xc3\xa9", "\x7f"});
  EXPECT_EQ(written(v), "[\n \"tab\\there\",\n \"quote\\\"back\\\\\",\n \"bad \xef\xbf\xbd byte\",\n"
                        " \"caf\xc3\xa9\",\n \"\x7f\"\n]");
  EXPECT_EQ(written(v), reference(v));
}

TEST(JsonWriter, NumbersAsTheDump) {
  const Json v = Json::array({0.5, 100.0, 1e-5, 1e16, -0.0, std::nan(""), std::numeric_limits<int64_t>::min()});
  EXPECT_EQ(written(v), "[\n 0.5,\n 100.0,\n 1e-05,\n 1e+16,\n -0.0,\n null,\n -9223372036854775808\n]");
  EXPECT_EQ(written(v), reference(v));
}

}  // namespace
}  // namespace fleetsim
