// Tests for the CLI's healthy-model adapter: a simulator RunRecord's scenario,
// reloaded, answers diagnose's questions with the run's cost model; a scenario that
// no longer loads becomes a note; a record from elsewhere gets neither.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "fleetsim/cost_model.h"
#include "fleetsim/plan.h"
#include "sim/cli/healthy_model.h"
#include "sim/diagnose/diagnose.h"
#include "sim/run/run.h"

namespace fleetsim::cli {
namespace {

namespace fs = std::filesystem;

// Simulates a library scenario into a temporary RunRecord and reads it back.
diagnose::Record simulate(const std::string& name, std::string* file) {
  *file = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".yaml";
  Result<PreparedRun> prepared = prepare_run(*file);
  EXPECT_TRUE(prepared.ok());
  const fs::path dir = fs::temp_directory_path() / ("fleetsim_healthy_model_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(dir);
  RunOptions opts;
  opts.out_dir = dir.string();
  EXPECT_TRUE(execute(*prepared, opts).ok());
  Result<diagnose::Record> rec = diagnose::read_record(dir.string());
  fs::remove_all(dir);
  EXPECT_TRUE(rec.ok());
  return rec.ok() ? *rec : diagnose::Record{};
}

bool has_evidence_starting(const diagnose::Diagnosis& d, const std::string& start) {
  for (const diagnose::Evidence& e : d.evidence) {
    if (e.text.rfind(start, 0) == 0) return true;
  }
  return false;
}

// The remote-NUMA NIC's dp groups are slower than the scenario's own cost model expects
// of a healthy fabric: slow_link on exactly their ranks. Without the model, no model line.
TEST(ScenarioHealthyModel, JudgesTheRecordAgainstItsScenariosCostModel) {
  std::string file;
  const diagnose::Record rec = simulate("nic_numa_mismatch", &file);
  const diagnose::RecordModel m = scenario_healthy_model(rec);
  ASSERT_NE(m.model, nullptr) << m.note;
  EXPECT_EQ(m.note, "");
  EXPECT_EQ(m.model->describe(), "nccl 2.30 tuning model, " + file);
  const diagnose::Diagnosis d = diagnose::diagnose_record(rec, m.model.get());
  EXPECT_EQ(d.cause, diagnose::Cause::kSlowLink);
  EXPECT_EQ(d.culprit_ranks, (std::vector<int>{5, 13, 21, 29}));
  EXPECT_TRUE(has_evidence_starting(d, "model (nccl 2.30 tuning model, " + file + "): 1 of 8 dp group(s) slower"));
  EXPECT_FALSE(has_evidence_starting(diagnose::diagnose_record(rec), "model ("));
}

// The model answers for the program's ops on the groups the plan has, and not otherwise.
TEST(ScenarioHealthyModel, AnswersOnlyForTheProgramsGroupCollectives) {
  std::string file;
  const diagnose::Record rec = simulate("step400_hang", &file);
  const diagnose::RecordModel m = scenario_healthy_model(rec);
  ASSERT_NE(m.model, nullptr) << m.note;
  std::vector<int> tp0 = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_GT(m.model->healthy_ms({"tp_activations", "nccl:all_reduce", "tp", tp0}).value_or(0), 0);
  EXPECT_FALSE(m.model->healthy_ms({"no_such_op", "nccl:all_reduce", "tp", tp0}).has_value());
  EXPECT_FALSE(m.model->healthy_ms({"tp_activations", "nccl:all_reduce", "pp", tp0}).has_value());
  EXPECT_FALSE(m.model->healthy_ms({"tp_activations", "nccl:all_reduce", "tp", {0, 1}}).has_value());
}

// A scenario that no longer loads is a note for the evidence, not a model.
TEST(ScenarioHealthyModel, UnloadableScenarioIsANote) {
  diagnose::Record rec;
  rec.summary = diagnose::Summary{};
  rec.summary->executor = "sim";
  rec.summary->file = "no/such/scenario.yaml";
  const diagnose::RecordModel m = scenario_healthy_model(rec);
  EXPECT_EQ(m.model, nullptr);
  EXPECT_EQ(m.note, "summary.json names scenario no/such/scenario.yaml, which does not load here: bandwidth "
                    "judged against sibling groups only");
}

// Real dumps (no summary) and records not from the simulator get neither.
TEST(ScenarioHealthyModel, NothingForRecordsFromElsewhere) {
  diagnose::Record rec;
  EXPECT_EQ(scenario_healthy_model(rec).model, nullptr);
  EXPECT_EQ(scenario_healthy_model(rec).note, "");
  rec.summary = diagnose::Summary{};
  rec.summary->executor = "mpi";
  rec.summary->file = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml";
  EXPECT_EQ(scenario_healthy_model(rec).model, nullptr);
  EXPECT_EQ(scenario_healthy_model(rec).note, "");
}

}  // namespace
}  // namespace fleetsim::cli
