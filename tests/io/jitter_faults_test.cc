// Reading jitter laws and the compute-time faults (intermittent, pause,
// throttle): what each key yields, and a located diagnostic for each bad value.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sim/io/jitter_reader.h"
#include "sim/io/scenario_loader.h"

namespace fleetsim {
namespace {

std::string scenario(const std::string& jitter, const std::string& faults = "") {
  return "name: t\nfleet: {system: custom, gpus_per_node: 4, nodes: 2}\njob: {steps: 100}\nstep:\n"
         "  - compute: {name: c, time: 10ms, jitter: " + jitter + "}\n  - allreduce: {name: g, bytes: 1MiB}\n" +
         (faults.empty() ? "" : "faults:\n" + faults);
}

// Each jitter spelling yields its law and cv.
TEST(JitterReader, ReadsEachLaw) {
  auto s = load_scenario_text(scenario("2%"), "t.yaml");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->step[0].jitter.dist, JitterDist::kNormal);
  EXPECT_DOUBLE_EQ(s->step[0].jitter.cv, 0.02);
  s = load_scenario_text(scenario("{dist: gamma, cv: 3%}"), "t.yaml");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->step[0].jitter.dist, JitterDist::kGamma);
  EXPECT_DOUBLE_EQ(s->step[0].jitter.cv, 0.03);
}

// An empirical CSV (path relative to the scenario) is sorted and normalized to mean 1.
TEST(JitterReader, ReadsEmpiricalCsvRelativeToScenario) {
  const auto dir = std::filesystem::temp_directory_path() / ("fleetsim_emp_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "times.csv") << "step_time_ms\n110\n90\n100\n";
  std::ofstream(dir / "s.yaml") << scenario("{dist: empirical, file: times.csv}");
  auto s = load_scenario((dir / "s.yaml").string());
  ASSERT_TRUE(s.ok()) << s.errors()[0].to_string();
  const Jitter& j = s->step[0].jitter;
  ASSERT_EQ(j.samples.size(), 3u);
  EXPECT_DOUBLE_EQ(j.samples[0], 0.9);
  EXPECT_DOUBLE_EQ(j.samples[2], 1.1);
  std::filesystem::remove_all(dir);
}

// Bad values are FILE:LINE:COL errors saying what was expected.
TEST(JitterReader, BadValuesAreLocated) {
  const std::pair<std::string, std::string> rows[] = {
      {scenario("{dist: weibull, cv: 2%}"), "error: unknown distribution 'weibull'"},
      {scenario("{dist: gamma}"), "missing required key 'cv'"},
      {scenario("{dist: empirical, file: nope.csv}"), "cannot read"},
      {scenario("{dist: empirical, file: x.csv, cv: 2%}"), "does not apply to an empirical"},
      {scenario("{dist: normal, cv: 2%, file: x.csv}"), "needs 'dist: empirical'"},
      {scenario("2", ""), "expected a percentage"},
      {scenario("1%", "  - intermittent: {probability: 120%, slowdown: 2}\n"), "at most 100%"},
      {scenario("1%", "  - intermittent: {probability: 1%, slowdown: {mean: 2, dist: gamma, cv: 5%}}\n"),
       "unknown distribution 'gamma'"},
      {scenario("1%", "  - intermittent: {probability: 1%}\n"), "missing required key 'slowdown'"},
      {scenario("1%", "  - pause: {every: 0, time: 1s}\n"), "pause.every"},
      {scenario("1%", "  - pause: {every: 5, time: 1s, phase: random}\n"), "unknown pause phase 'random'"},
      {scenario("1%", "  - throttle: {schedule: [{from_step: 5, factor: 1.1}, {from_step: 3, factor: 1.2}]}\n"),
       "ascending from_step"},
      {scenario("1%", "  - throttle: {schedule: [{from_step: 5, factor: 0}]}\n"), "must be > 0"},
      {scenario("1%", "  - throttle: {ranks: [99], schedule: [{from_step: 5, factor: 1.1}]}\n"), "rank 99 does not exist"},
  };
  for (const auto& [yaml, want] : rows) {
    auto s = load_scenario_text(yaml, "t.yaml");
    ASSERT_FALSE(s.ok()) << yaml;
    EXPECT_NE(s.errors()[0].to_string().find(want), std::string::npos) << s.errors()[0].to_string();
  }
}

// The compute-time faults read into kStraggler with their mode; `ranks` defaults to all.
TEST(JitterReader, ComputeTimeFaultsReadTheirFields) {
  auto s = load_scenario_text(scenario("1%", "  - pause: {every: 50, time: 2s, what: checkpoint}\n"
                                             "  - throttle: {ranks: [1], schedule: [{from_step: 10, factor: 1.2}]}\n"),
                              "t.yaml");
  ASSERT_TRUE(s.ok()) << s.errors()[0].to_string();
  const Fault& p = s->faults[0];
  EXPECT_EQ(p.mode, SlowMode::kPause);
  EXPECT_TRUE(p.all_ranks);
  EXPECT_EQ(p.every, 50);
  EXPECT_EQ(p.pause.ns, 2'000'000'000);
  EXPECT_EQ(p.where, "checkpoint");
  EXPECT_EQ(s->faults[1].schedule.size(), 1u);
  EXPECT_FALSE(s->faults[1].all_ranks);
}

}  // namespace
}  // namespace fleetsim
