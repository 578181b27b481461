// Bounded input: a scenario or data file that is a FIFO, a device or a folder,
// or larger than its cap, and a YAML alias bomb each give one located error
// (exit 2 from the CLI), never an abort or a wait; loading many ops stays linear.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fleetsim/file_read.h"
#include "sim/io/scenario_loader.h"
#include "sim/io/yaml_tree.h"
#include "tests/support/command.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;
using test_support::run_command;

fs::path temp_dir(const std::string& tag) {
  const fs::path d = fs::temp_directory_path() / ("fleetsim_limits_" + tag + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Nine lists of nine aliases to the one before: 9^9 nodes once expanded.
std::string alias_bomb() {
  std::string y = "name: bomb\nfleet: {nodes: 1, gpus_per_node: 2}\nstep: [sync]\na0: &a0 [x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i < 9; ++i) {
    y += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) y += (k ? ",*a" : "*a") + std::to_string(i - 1);
    y += "]\n";
  }
  return y;
}

TEST(InputLimits, AliasBombIsALocatedError) {
  auto s = load_scenario_text(alias_bomb(), "bomb.yaml");
  ASSERT_FALSE(s.ok());
  ASSERT_EQ(s.errors().size(), 1u);
  EXPECT_EQ(s.errors()[0].loc.file, "bomb.yaml");
  EXPECT_GT(s.errors()[0].loc.line, 0);
  EXPECT_NE(s.errors()[0].message.find("more than 2000000 nodes"), std::string::npos) << s.errors()[0].message;
}

TEST(InputLimits, AliasesWithinTheCapStillLoad) {
  auto s = load_scenario_text("name: a\nfleet: {nodes: 1, gpus_per_node: 2}\n"
                              "step:\n  - compute: &c {time: 1ms}\n  - compute: *c\n", "a.yaml");
  ASSERT_TRUE(s.ok()) << s.errors()[0].to_string();
  EXPECT_EQ(s->step.size(), 2u);
}

TEST(InputLimits, ScenarioMustBeARegularFile) {
  const fs::path d = temp_dir("kinds");
  const fs::path fifo = d / "f.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto s = load_scenario(fifo.string());  // must not wait for a writer
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors()[0].message, "scenario file '" + fifo.string() + "' is a FIFO; expected a regular file");
  s = load_scenario("/dev/zero");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors()[0].to_string(), "/dev/zero: error: scenario file '/dev/zero' is a device; expected a regular file");
  s = load_scenario(d.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.errors()[0].message.find("is a folder"), std::string::npos);
  fs::remove_all(d);
}

TEST(InputLimits, ScenarioOverItsCapIsRefusedBeforeReading) {
  const fs::path d = temp_dir("size");
  const fs::path big = d / "big.yaml";
  { std::ofstream(big) << "# pad\n"; }
  fs::resize_file(big, static_cast<uintmax_t>(kScenarioFileMax) + 1);
  auto s = load_scenario(big.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.errors()[0].message.find("larger than the 16 MiB limit"), std::string::npos) << s.errors()[0].message;
  fs::remove_all(d);
}

TEST(InputLimits, ReadFileCappedCatchesAFileThatGrows) {
  // /proc files report size 0 to stat and then yield more: as a file that grows.
  auto r = read_file_capped("/proc/self/maps", 8, "test file");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors()[0].message.find("grew while read"), std::string::npos) << r.errors()[0].message;
}

// Asked for spare room, the buffer holds each file's bytes with at least that much
// allocated past them, whether it grew for the file or already had the room.
TEST(InputLimits, ReadFileCappedIntoLeavesTheSpareRoomAskedFor) {
  const fs::path d = temp_dir("spare");
  const std::string big(200000, 'y');
  { std::ofstream(d / "big") << big; }
  { std::ofstream(d / "small") << "abc"; }
  std::string buf;
  for (const auto& [name, want] : std::vector<std::pair<std::string, std::string>>{
           {"small", "abc"}, {"big", big}, {"small", "abc"}, {"big", big}}) {
    EXPECT_FALSE(read_file_capped_into((d / name).string(), kMiB, "test file", buf, 64).has_value()) << name;
    EXPECT_EQ(buf, want) << name;
    EXPECT_GE(buf.capacity(), buf.size() + 64) << name;
  }
  fs::remove_all(d);
}

// One buffer read into again and again holds each file's bytes exactly, longer or
// shorter than the one before; an error leaves it empty, with the same message.
TEST(InputLimits, ReadFileCappedIntoReusesItsBuffer) {
  const fs::path d = temp_dir("into");
  const std::string big(200000, 'x');
  { std::ofstream(d / "big") << big; }
  { std::ofstream(d / "small") << "abc"; }
  { std::ofstream(d / "empty"); }
  std::string buf;
  for (const auto& [name, want] : std::vector<std::pair<std::string, std::string>>{
           {"big", big}, {"small", "abc"}, {"empty", ""}, {"big", big}, {"small", "abc"}}) {
    EXPECT_FALSE(read_file_capped_into((d / name).string(), kMiB, "test file", buf).has_value()) << name;
    EXPECT_EQ(buf, want) << name;
  }
  std::optional<Diagnostic> err = read_file_capped_into((d / "big").string(), 1000, "test file", buf);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->message, read_file_capped((d / "big").string(), 1000, "test file").errors()[0].message);
  EXPECT_NE(err->message.find("larger than the 1000 B limit (200000 bytes)"), std::string::npos) << err->message;
  EXPECT_TRUE(buf.empty());
  err = read_file_capped_into("/proc/self/maps", 8, "test file", buf);
  ASSERT_TRUE(err.has_value());
  EXPECT_NE(err->message.find("grew while read"), std::string::npos) << err->message;
  EXPECT_TRUE(buf.empty());
  err = read_file_capped_into(d.string(), kMiB, "test file", buf);
  ASSERT_TRUE(err.has_value());
  EXPECT_NE(err->message.find("is a folder; expected a regular file"), std::string::npos) << err->message;
  fs::remove_all(d);
}

TEST(InputLimits, EmpiricalJitterFileMustBeARegularFileWithinItsCap) {
  const fs::path d = temp_dir("csv");
  auto scenario = [&](const std::string& file) {
    std::ofstream(d / "s.yaml") << "name: j\nfleet: {nodes: 1, gpus_per_node: 2}\nstep:\n"
                                   "  - compute: {time: 1ms, jitter: {dist: empirical, file: " + file + "}}\n";
    return load_scenario((d / "s.yaml").string());
  };
  auto s = scenario("/dev/zero");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors()[0].loc.line, 4);
  EXPECT_EQ(s.errors()[0].message, "jitter CSV '/dev/zero' is a device; expected a regular file");
  { std::ofstream(d / "big.csv") << "1\n"; }
  fs::resize_file(d / "big.csv", static_cast<uintmax_t>(kJitterCsvMax) + 1);
  s = scenario("big.csv");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.errors()[0].message.find("larger than the 64 MiB limit"), std::string::npos) << s.errors()[0].message;
  fs::remove_all(d);
}

// The CLI: one error line, exit 2, and no output folder left behind.
TEST(InputLimits, CliRefusesDevicesFifosAndBombs) {
  const fs::path d = temp_dir("cli");
  const std::string bin = FLEETSIM_BINARY;
  auto c = run_command(bin + " run /dev/zero --out " + (d / "out").string());
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(c.out, "/dev/zero: error: scenario file '/dev/zero' is a device; expected a regular file\n");
  ASSERT_EQ(::mkfifo((d / "f").c_str(), 0600), 0);
  c = run_command(bin + " check " + (d / "f").string());
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.out.find("is a FIFO; expected a regular file"), std::string::npos) << c.out;
  std::ofstream(d / "bomb.yaml") << alias_bomb();
  c = run_command(bin + " run " + (d / "bomb.yaml").string() + " --out " + (d / "out").string());
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.out.find("bomb.yaml:4:"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("YAML expands to more than"), std::string::npos) << c.out;
  fs::remove(d / "f");
  fs::remove(d / "bomb.yaml");
  EXPECT_TRUE(fs::is_empty(d)) << "the refused runs left files behind";
  fs::remove_all(d);
}

// 80,000 distinct op names: loading completes (it was quadratic in the names).
TEST(InputLimits, ManyDistinctOpNamesLoad) {
  constexpr int kOps = 80'000;
  std::string y = "name: many\nfleet: {nodes: 1, gpus_per_node: 2}\nstep:\n";
  for (int i = 0; i < kOps; ++i) y += "  - compute: {name: op" + std::to_string(i) + ", time: 1us}\n";
  y += "  - log: 'last {op79999}'\n";
  auto s = load_scenario_text(y, "many.yaml");
  ASSERT_TRUE(s.ok()) << s.errors()[0].to_string();
  EXPECT_EQ(s->step.size(), static_cast<size_t>(kOps) + 1);
}

}  // namespace
}  // namespace fleetsim
