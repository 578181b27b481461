// Tests for the unit parsers of sim/io/scenario_loader.h: durations, sizes,
// percentages and bandwidths, exact where the spec says exact, and errors
// that name what was expected.
#include <gtest/gtest.h>

#include "sim/io/scenario_loader.h"
#include "sim/io/units.h"

namespace fleetsim {
namespace {

std::string error_of(const Result<Duration>& r) { return r.ok() ? "" : r.errors()[0].message; }
std::string error_of(const Result<int64_t>& r) { return r.ok() ? "" : r.errors()[0].message; }

// Every duration unit converts to exact nanoseconds, decimals included.
TEST(UnitsTest, DurationUnitsAndDecimals) {
  EXPECT_EQ(*parse_duration("150ms"), Duration::millis(150));
  EXPECT_EQ(*parse_duration("10min"), Duration::minutes(10));
  EXPECT_EQ(*parse_duration("1.5s"), Duration::millis(1500));
  EXPECT_EQ(*parse_duration("250us"), Duration::micros(250));
  EXPECT_EQ(*parse_duration("1h"), Duration::seconds(3600));
  EXPECT_EQ(*parse_duration("7ns"), Duration::nanos(7));
  EXPECT_EQ(*parse_duration("0.1s"), Duration::millis(100));
  EXPECT_EQ(*parse_duration("0"), Duration{});
  EXPECT_EQ(*parse_duration("2 ms"), Duration::millis(2));
  EXPECT_EQ(*parse_duration("1.0005us"), Duration::nanos(1001));  // rounds half up to whole ns
}

// Bad durations say which units are expected, or why the number is wrong.
TEST(UnitsTest, DurationErrors) {
  EXPECT_NE(error_of(parse_duration("10 mins")).find("expected one of: ns us ms s min h"), std::string::npos);
  EXPECT_NE(error_of(parse_duration("150")).find("has no unit"), std::string::npos);
  EXPECT_NE(error_of(parse_duration("-5ms")).find("negative"), std::string::npos);
  EXPECT_NE(error_of(parse_duration("ms")).find("expected a duration"), std::string::npos);
  EXPECT_NE(error_of(parse_duration("99999999999999h")).find("too large"), std::string::npos);
}

// Sizes use decimal (KB) and binary (KiB) prefixes and must be whole bytes.
TEST(UnitsTest, SizesDecimalAndBinary) {
  EXPECT_EQ(*parse_bytes("4B"), 4);
  EXPECT_EQ(*parse_bytes("4096"), 4096);
  EXPECT_EQ(*parse_bytes("1KB"), 1000);
  EXPECT_EQ(*parse_bytes("1KiB"), 1024);
  EXPECT_EQ(*parse_bytes("64MiB"), 64LL << 20);
  EXPECT_EQ(*parse_bytes("100MB"), 100000000);
  EXPECT_EQ(*parse_bytes("1.5GiB"), 3LL << 29);
  EXPECT_EQ(*parse_bytes("2TB"), 2000000000000);
  EXPECT_EQ(*parse_bytes("1TiB"), 1LL << 40);
  EXPECT_NE(error_of(parse_bytes("1.5")).find("whole number of bytes"), std::string::npos);
  EXPECT_NE(error_of(parse_bytes("1.5B")).find("not a whole number of bytes"), std::string::npos);
  EXPECT_NE(error_of(parse_bytes("3 parsecs")).find("unknown size unit 'parsecs'"), std::string::npos);
  EXPECT_NE(error_of(parse_bytes("-1KB")).find("negative"), std::string::npos);
}

// Percentages become fractions; a missing '%' is an error.
TEST(UnitsTest, Percentages) {
  EXPECT_DOUBLE_EQ(*parse_percent("1%"), 0.01);
  EXPECT_DOUBLE_EQ(*parse_percent("0.5%"), 0.005);
  EXPECT_DOUBLE_EQ(*parse_percent("25%"), 0.25);
  EXPECT_FALSE(parse_percent("1").ok());
  EXPECT_FALSE(parse_percent("-1%").ok());
}

// Bandwidths come back in GB/s; lower-case b means bits.
TEST(UnitsTest, Bandwidths) {
  EXPECT_DOUBLE_EQ(*parse_bandwidth_GBps("450GB/s"), 450.0);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_GBps("400Gb/s"), 50.0);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_GBps("1.6Tb/s"), 200.0);
  EXPECT_FALSE(parse_bandwidth_GBps("450GB").ok());
  EXPECT_FALSE(parse_bandwidth_GBps("0GB/s").ok());
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

// Command-line lists split on commas, empty items dropped.
TEST(SplitList, CommasAndEmptyItems) {
  EXPECT_EQ(split_list("allreduce,allgather"), (std::vector<std::string>{"allreduce", "allgather"}));
  EXPECT_EQ(split_list("a,,b,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(split_list("").empty());
  EXPECT_EQ(split_list("one"), (std::vector<std::string>{"one"}));
}

// Error messages quote a user's value whole up to 200 characters, else cut
// with "..." and its length: a 3 MB value is never echoed whole.
TEST(UnitsTest, QuotedValuesAreClipped) {
  EXPECT_EQ(quote_value("10ms"), "'10ms'");
  EXPECT_EQ(clip_value(std::string(200, 'a')), std::string(200, 'a'));
  EXPECT_EQ(clip_value(std::string(201, 'a')), std::string(200, 'a') + "... (201 characters)");
  const std::string huge(3 << 20, '7');
  EXPECT_EQ(error_of(parse_duration(huge + "x")).size() < 400, true);
  auto s = load_scenario_text("name: t\nfleet: {system: custom, gpus_per_node: 2, nodes: 2}\nparallel: {tp: 2, dp: 2}\n"
                              "job: {steps: " + huge + "}\nstep:\n  - compute: {time: 1ms}\n", "t.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors()[0].message,
            "expected an integer for 'job.steps', got '" + std::string(200, '7') + "... (3145728 characters)'");
  auto k = load_scenario_text("name: t\n" + std::string(1000, 'k') + ": 1\n", "t.yaml");
  ASSERT_FALSE(k.ok());
  EXPECT_LT(k.errors()[0].message.size(), 800u) << k.errors()[0].message.substr(0, 800);
}

}  // namespace
}  // namespace fleetsim
