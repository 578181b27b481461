// Diagnose on every scenario: each scenarios/*.yaml that states `expect.cause` is
// simulated into a temporary RunRecord with the cost model `fleetsim run` uses (as `fleetsim run`
// does), and `diagnose`, with the healthy model `fleetsim diagnose` gives it, must name that
// cause and, where given, that culprit; on a hang, from the flight-recorder dumps alone too.
#include <gtest/gtest.h>

#include "sim/model/cost_model_factory.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "fleetsim/cost_model.h"
#include "fleetsim/plan.h"
#include "sim/diagnose/diagnose.h"
#include "sim/io/scenario_loader.h"
#include "sim/run/run.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> scenario_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.is_regular_file() && e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class EveryScenario : public ::testing::TestWithParam<std::string> {};

// Simulates `scenario` into a fresh `tag`_<name>_<pid> folder under the temp dir and
// returns that folder ("" when the run failed, with the failure recorded).
fs::path simulate(const std::string& scenario, const std::string& tag) {
  Result<PreparedRun> prepared = prepare_run(scenario);
  EXPECT_TRUE(prepared.ok());
  if (!prepared.ok()) return {};
  const fs::path dir = fs::temp_directory_path() /
                       (tag + "_" + fs::path(scenario).stem().string() + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  RunOptions opts;
  opts.out_dir = dir.string();
  Result<RecordedRun> run = execute(*prepared, opts);
  EXPECT_TRUE(run.ok());
  return run.ok() ? dir : fs::path();
}

// diagnose names the scenario's expected cause and culprit ranks on its simulated RunRecord.
TEST_P(EveryScenario, DiagnoseNamesTheExpectedCauseAndCulprit) {
  Result<Scenario> scenario = load_scenario(GetParam(), {});
  ASSERT_TRUE(scenario.ok()) << scenario.errors().front().to_string();
  if (!scenario->expect.cause) GTEST_SKIP() << "no expect.cause";
  const fs::path dir = simulate(GetParam(), "fleetsim_diag");
  ASSERT_FALSE(dir.empty());
  Result<Diagnosis> d = diagnose_dir(dir.string());
  fs::remove_all(dir);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(std::string(to_string(d->cause)), *scenario->expect.cause) << format_human(*d);
  if (scenario->expect.culprit) {
    EXPECT_EQ(d->culprit_ranks, *scenario->expect.culprit) << format_human(*d);
  }
}

// What an on-call engineer often holds is the flight-recorder dumps alone (no summary,
// logs or telemetry): on every hang, and every crash that left its peers waiting, they
// must name the scenario's culprit ranks. (A TCPStore deadlock launches no collective,
// and a NIC failure aborts the job: the dumps alone cannot name those.)
TEST_P(EveryScenario, DumpsAloneNameTheExpectedCulprit) {
  Result<Scenario> scenario = load_scenario(GetParam(), {});
  ASSERT_TRUE(scenario.ok()) << scenario.errors().front().to_string();
  const Expect& e = scenario->expect;
  if (!e.culprit || !(e.outcome == "hang" || e.cause == "rank_crashed")) GTEST_SKIP() << "not a hang with a culprit";
  const fs::path dir = simulate(GetParam(), "fleetsim_dumps");
  ASSERT_FALSE(dir.empty());
  const fs::path dumps = dir.string() + "-dumps";
  fs::remove_all(dumps);
  fs::copy(dir / "fr", dumps);
  fs::remove_all(dir);
  Result<Diagnosis> d = diagnose_dir(dumps.string());
  fs::remove_all(dumps);
  ASSERT_TRUE(d.ok()) << d.errors().front().to_string();
  EXPECT_NE(d->verdict, Verdict::kHealthy) << format_human(*d);
  EXPECT_EQ(d->culprit_ranks, *e.culprit) << format_human(*d);
}

INSTANTIATE_TEST_SUITE_P(Scenarios, EveryScenario, ::testing::ValuesIn(scenario_files()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = fs::path(p.param).stem().string();
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace fleetsim::diagnose
