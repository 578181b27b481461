// fleetsim sweep: the simulated tax against the closed form (the issue's
// must-show cases at small N), one slow rank, and output that does not depend
// on the thread count.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/sweep/sweep.h"
#include "tests/support/files.h"
#include "tests/support/scenarios.h"

namespace fs = std::filesystem;

namespace fleetsim {
namespace {

std::string write_scenario(const std::string& name, const std::string& jitter) {
  return test_support::write_temp(name, ".yaml",
                                  test_support::one_node_jitter_yaml(name, 4000, 11, "100ms", jitter, "1MiB"));
}

std::vector<TaskResult> run(const SweepSpec& spec, int threads) {
  auto grid = make_grid(spec);
  EXPECT_TRUE(grid.ok()) << (grid.ok() ? "" : grid.errors()[0].to_string());
  auto r = run_tasks(*grid, threads, [](size_t) { return true; }, nullptr);
  EXPECT_TRUE(r.ok());
  return *r;
}

// Normal jitter with a 2% cv: the simulated tax is within 2% (relative) of the
// exact expected maximum at N = 8 and 64 (larger N: see docs/straggler-tax.md).
TEST(Sweep, NormalTaxMatchesExactMaximum) {
  SweepSpec spec{write_scenario("sweep_normal", "2%"), {}, {{"fleet.nodes", {"1", "8"}}}, 4};
  const auto tasks = run(spec, 2);
  for (size_t p = 0; p < 2; ++p) {
    double tax = 0;
    for (size_t k = 0; k < 4; ++k) tax += tasks[p * 4 + k].tax / 4;
    EXPECT_NEAR(tax / tasks[p * 4].exact_tax, 1.0, 0.02) << "point " << p;
    EXPECT_EQ(tasks[p * 4].lockstep, 1.0);
  }
}

// A lognormal case against its own integral.
TEST(Sweep, LognormalTaxMatchesItsIntegral) {
  SweepSpec spec{write_scenario("sweep_lognormal", "{dist: lognormal, cv: 5%}"), {}, {{"fleet.nodes", {"8"}}}, 4};
  const auto tasks = run(spec, 2);
  double tax = 0;
  for (const TaskResult& t : tasks) tax += t.tax / 4;
  EXPECT_NEAR(tax / tasks[0].exact_tax, 1.0, 0.02);
}

// One rank 30% slow raises the job's step time 30% +- 1% over the jitter-free step.
TEST(Sweep, OneSlowRankSlowsTheJob30Percent) {
  SweepSpec spec{std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/straggler_persistent.yaml", {}, {{"job.steps", {"300"}}}, 2};
  const auto tasks = run(spec, 2);
  for (const TaskResult& t : tasks) EXPECT_NEAR(t.tax, 0.30, 0.01);
  EXPECT_TRUE(std::isnan(tasks[0].exact_tax));  // no closed form with faults
}

// The printed table and CSV are byte-identical whatever the thread count.
TEST(Sweep, OutputDoesNotDependOnThreads) {
  SweepSpec spec{write_scenario("sweep_threads", "{dist: gamma, cv: 3%}"), {"job.steps=200"},
                 {{"fleet.nodes", {"1", "2", "4"}}, {"job.seed", {"1", "2"}}}, 3};
  auto grid = make_grid(spec);
  ASSERT_TRUE(grid.ok());
  const auto one = run(spec, 1), three = run(spec, 3);
  EXPECT_EQ(format_sweep(*grid, one, true), format_sweep(*grid, three, true));
  EXPECT_EQ(format_sweep(*grid, one, false), format_sweep(*grid, three, false));
}

// A bad --vary value is reported with its --set label before anything runs.
TEST(Sweep, BadValueIsReportedUpFront) {
  SweepSpec spec{write_scenario("sweep_bad", "2%"), {}, {{"fleet.nodes", {"1", "zero"}}}, 1};
  auto grid = make_grid(spec);
  ASSERT_FALSE(grid.ok());
  EXPECT_NE(grid.errors()[0].to_string().find("fleet.nodes"), std::string::npos);
}

}  // namespace
}  // namespace fleetsim
