// A simulated RunRecord carries its cost model's expectation (model.json), and
// diagnose judges slow links against it without reloading the scenario.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/diagnose/diagnose.h"
#include "sim/run/run.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;

fs::path run_dir(const std::string& name) {
  return fs::temp_directory_path() / ("fleetsim_recorded_model_" + name + "_" + std::to_string(getpid()));
}

// Simulates a library scenario into a temporary RunRecord (left in place; the
// caller removes it) and reads it back.
Record simulate(const std::string& name, std::string* file) {
  *file = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".yaml";
  Result<PreparedRun> prepared = prepare_run(*file);
  EXPECT_TRUE(prepared.ok());
  const fs::path dir = run_dir(name);
  fs::remove_all(dir);
  RunOptions opts;
  opts.out_dir = dir.string();
  EXPECT_TRUE(execute(*prepared, opts).ok());
  Result<Record> rec = read_record(dir.string());
  EXPECT_TRUE(rec.ok());
  return rec.ok() ? *rec : Record{};
}

bool has_evidence_starting(const Diagnosis& d, const std::string& start) {
  for (const Evidence& e : d.evidence)
    if (e.text.rfind(start, 0) == 0) return true;
  return false;
}

// The remote-NUMA NIC's dp groups are slower than the run's own cost model
// expects of a healthy fabric: slow_link on exactly their ranks, with the
// model named in the evidence. Without the model, no model line.
TEST(RecordedModel, JudgesTheRecordAgainstItsOwnModelJson) {
  std::string file;
  const Record rec = simulate("nic_numa_mismatch", &file);
  fs::remove_all(run_dir("nic_numa_mismatch"));
  ASSERT_TRUE(rec.model.has_value());
  const std::unique_ptr<HealthyModel> m = recorded_model(rec);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->describe(), "nccl 2.30 tuning model, " + file);
  const Diagnosis d = diagnose_record(rec, m.get());
  EXPECT_EQ(d.cause, Cause::kSlowLink);
  EXPECT_EQ(d.culprit_ranks, (std::vector<int>{5, 13, 21, 29}));
  EXPECT_TRUE(has_evidence_starting(d, "model (nccl 2.30 tuning model, " + file + "): 1 of 8 dp group(s) slower"));
  EXPECT_FALSE(has_evidence_starting(diagnose_record(rec), "model ("));
}

// The model answers for the program's ops on the groups (and shapes) the run
// had, and not otherwise.
TEST(RecordedModel, AnswersOnlyForTheProgramsGroupCollectives) {
  std::string file;
  const Record rec = simulate("step400_hang", &file);
  fs::remove_all(run_dir("step400_hang"));
  const std::unique_ptr<HealthyModel> m = recorded_model(rec);
  ASSERT_NE(m, nullptr);
  std::vector<int> tp0 = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_GT(m->healthy_ms({"tp_activations", "nccl:all_reduce", "tp", tp0}).value_or(0), 0);
  EXPECT_FALSE(m->healthy_ms({"no_such_op", "nccl:all_reduce", "tp", tp0}).has_value());
  EXPECT_FALSE(m->healthy_ms({"tp_activations", "nccl:all_reduce", "pp", tp0}).has_value());
  EXPECT_FALSE(m->healthy_ms({"tp_activations", "nccl:all_reduce", "tp", {0, 1}}).has_value());
}

// The scenario file is not read again: a record whose scenario has since
// vanished is diagnosed the same way.
TEST(RecordedModel, TheScenarioFileIsNotNeeded) {
  const fs::path copy = fs::temp_directory_path() / ("fleetsim_vanishing_" + std::to_string(getpid()) + ".yaml");
  fs::copy_file(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/nic_numa_mismatch.yaml", copy,
                fs::copy_options::overwrite_existing);
  Result<PreparedRun> prepared = prepare_run(copy.string());
  ASSERT_TRUE(prepared.ok());
  const fs::path dir = run_dir("vanishing");
  fs::remove_all(dir);
  RunOptions opts;
  opts.out_dir = dir.string();
  ASSERT_TRUE(execute(*prepared, opts).ok());
  fs::remove(copy);
  Result<Diagnosis> d = diagnose_dir(dir.string());
  fs::remove_all(dir);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cause, Cause::kSlowLink);
  EXPECT_EQ(d->culprit_ranks, (std::vector<int>{5, 13, 21, 29}));
}

// Real dumps (no model.json) get no model; a malformed model.json is bad input.
TEST(RecordedModel, NoneForRealDumpsAndAMalformedOneIsAnError) {
  EXPECT_EQ(recorded_model(Record{}), nullptr);
  const fs::path dir = run_dir("malformed");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "model.json") << R"({"cost_model": "x", "scenario_file": "y", "gpus_per_node": 0,
                                            "collectives": []})";
  Result<Record> rec = read_record(dir.string());
  fs::remove_all(dir);
  ASSERT_FALSE(rec.ok());
  EXPECT_NE(rec.errors().front().to_string().find("model.json: error: expected 'cost_model' and 'scenario_file' "
                                                  "strings and 'gpus_per_node' >= 1"),
            std::string::npos)
      << rec.errors().front().to_string();
}

}  // namespace
}  // namespace fleetsim::diagnose
