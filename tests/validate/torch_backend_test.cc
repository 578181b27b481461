// The torch backend's conversions, on real artifacts: PyTorch 2.15's gloo
// flight-recorder dumps of the 4-rank founding case (tests/fixtures/torch_gloo/,
// written by `validate --backend torch`) become the RunRecord's fr/ files, and
// the script's event lines name plan ops; no torch needed.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/diagnose/record.h"
#include "sim/run/run.h"
#include "validate/real_record.h"
#include "validate/torch_backend.h"

namespace fs = std::filesystem;

namespace {

const std::string kSrc = FLEETSIM_SOURCE_DIR;

fleetsim::Plan founding_plan() {
  auto plan = fleetsim::load_plan(kSrc + "/scenarios/validate/step40_hang_4ranks.yaml");
  EXPECT_TRUE(plan.ok());
  return *plan;
}

fs::path temp(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("fleetsim-torch-backend-" + std::to_string(::getpid())) / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

nlohmann::json read(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

TEST(TorchBackend, GroupNamesFollowCreationOrder) {
  const fleetsim::Plan plan = founding_plan();  // tp 2 x dp 2: tp "1" [0,1], "2" [2,3]; dp "3" [0,2], "4" [1,3]
  using fleetsim::GroupKind;
  EXPECT_EQ(fleetsim::validate::torch_group_name(plan, GroupKind::kWorld, 3), "0");
  EXPECT_EQ(fleetsim::validate::torch_group_name(plan, GroupKind::kTp, 1), "1");
  EXPECT_EQ(fleetsim::validate::torch_group_name(plan, GroupKind::kTp, 2), "2");
  EXPECT_EQ(fleetsim::validate::torch_group_name(plan, GroupKind::kDp, 2), "3");
  EXPECT_EQ(fleetsim::validate::torch_group_name(plan, GroupKind::kDp, 3), "4");
}

// Gloo's dumps carry one unnamed pg_config entry and leave every entry
// "scheduled"; the converted ones name the groups as the entries do and mark
// completed what pg_status says completed, and nothing else changes.
TEST(TorchBackend, GlooDumpsBecomeDumpsDiagnoseReads) {
  const fleetsim::Plan plan = founding_plan();
  const fs::path src = fs::path(kSrc) / "tests/fixtures/torch_gloo/step40_hang";
  const nlohmann::json raw = read(src / "nccl_trace_rank_0.json");
  ASSERT_EQ(raw["pg_config"].size(), 1u);  // what gloo wrote
  const fs::path out = temp("fr");
  auto ranks = fleetsim::validate::convert_torch_dumps(plan, src.string(), out.string());
  ASSERT_TRUE(ranks.ok());
  EXPECT_EQ(*ranks, (std::vector<int>{0, 1, 2, 3}));
  const nlohmann::json r2 = read(out / "rank_2.json");
  EXPECT_EQ(r2["pg_config"]["2"]["ranks"], "[2, 3]");
  EXPECT_EQ(r2["pg_config"]["3"]["ranks"], "[0, 2]");
  EXPECT_EQ(r2["pg_config"]["0"]["desc"], "default_pg");
  const nlohmann::json r0 = read(out / "rank_0.json");
  EXPECT_EQ(r0["pg_status"]["0"]["last_enqueued_collective"], "1");
  EXPECT_EQ(r0["pg_status"]["0"]["last_completed_collective"], "-1");
  const nlohmann::json& last = r0["entries"].back();  // rank 0's extra world all-reduce, pending
  EXPECT_EQ(last["profiling_name"], "gloo:all_reduce");
  EXPECT_EQ(last["process_group"][0], "0");
  EXPECT_EQ(last["state"], "scheduled");
  EXPECT_EQ(r0["entries"][0]["state"], "completed");
  EXPECT_EQ(r0["entries"].size(), raw["entries"].size());
  // diagnose reads the folder as one job of 4 ranks, its groups agreeing across dumps.
  auto rec = fleetsim::diagnose::read_record(out.string());
  ASSERT_TRUE(rec.ok()) << rec.errors().front().to_string();
  EXPECT_EQ(rec->dumps.size(), 4u);
  EXPECT_EQ(rec->dumps.at(3).groups.at("4").ranks, (std::vector<int>{1, 3}));
  fs::remove_all(out.parent_path());
}

TEST(TorchBackend, EventLinesNamePlanOps) {
  const fleetsim::Plan plan = founding_plan();
  const fs::path real = temp("real");
  fs::create_directories(real / fleetsim::validate::kPartsDir);
  std::ofstream(fleetsim::validate::part_path(real.string(), 0)) << "S\t39\t100\n"
                                                                 << "timeout\t900\tworld\t1\tloss\t300\t40\n";
  fleetsim::validate::translate_events(plan, real.string());
  std::ifstream in(fleetsim::validate::part_path(real.string(), 0));
  std::string s1, s2;
  std::getline(in, s1);
  std::getline(in, s2);
  EXPECT_EQ(s1, "S\t39\t100");
  uint32_t loss = 0;
  for (uint32_t i = 0; i < plan.ops.size(); ++i)
    if (plan.sources[plan.ops[i].source].name == "loss") loss = i;
  EXPECT_EQ(s2, "timeout\t900\t0\t1\t" + std::to_string(loss) + "\t300\t40");
  fs::remove_all(real.parent_path());
}

}  // namespace
