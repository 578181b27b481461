// Tests of validate/real_record: merging the ranks' part files of a real run into
// a RunRecord that diagnose reads like a simulated one. No MPI needed.
#include "validate/real_record.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sim/io/scenario_loader.h"

namespace fs = std::filesystem;

namespace fleetsim::validate {
namespace {

Plan two_rank_plan() {
  auto s = load_scenario_text(R"(
name: merge
fleet: {system: dgx-h100, nodes: 1, gpus_per_node: 2}
job: {steps: 5, watchdog: 1s}
step:
  - compute: {name: f, time: 10ms}
  - allreduce: {name: g, group: world, bytes: 4MiB}
)", "merge.yaml");
  EXPECT_TRUE(s.ok());
  auto p = compile_plan(*s);
  EXPECT_TRUE(p.ok());
  return std::move(*p);
}

std::string make_dir() {
  const fs::path d = fs::temp_directory_path() / ("merge-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d / kPartsDir);
  return d.string();
}

nlohmann::json summary(const std::string& dir) {
  std::ifstream in(dir + "/summary.json");
  return nlohmann::json::parse(in);
}

// Two hung ranks: the first timeout is the earliest watchdog tick (rank 1 here,
// though rank 0's thread logged first), the hang step the lowest stuck step.
TEST(RealRecord, MergesAHang) {
  const Plan plan = two_rank_plan();
  const std::string dir = make_dir();
  std::ofstream(part_path(dir, 0)) << "S\t1\t100\nS\t2\t200\ntimeout\t1500000000\t0\t3\t1\t400000000\t3\nstuck\t3\n";
  std::ofstream(part_path(dir, 1)) << "S\t1\t110\nS\t2\t190\nS\t3\t300\n"
                                      "timeout\t1500000001\t0\t4\t1\t300000000\t4\nstuck\t4\n";
  std::ofstream(telemetry_part_path(dir, 0)) << "T\t100000000\t100\t50\t1.000\t0.000\t0\t3\n";
  LaunchInfo info;
  info.exit_code = 134;
  auto r = merge_parts(plan, dir, info);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result.outcome, Outcome::kHang);
  EXPECT_EQ(r->result.hang.first_timeout_rank, 1);
  EXPECT_EQ(r->result.hang.step, 3);
  EXPECT_EQ(r->result.steps_completed, 2);
  const auto j = summary(dir);
  EXPECT_EQ(j["executor"], "mpi");
  EXPECT_EQ(j["hang"]["first_timeout_rank"], 1);
  std::ifstream steps(dir + "/steps.csv");
  std::string header, row1;
  std::getline(steps, header);
  std::getline(steps, row1);
  EXPECT_EQ(header, "step,start_s,end_s,duration_s,slowest_rank");
  EXPECT_EQ(row1, "1,0.000000000,0.000000110,0.000000110,1");
  std::ifstream tel(dir + "/telemetry.csv");
  std::getline(tel, header);
  std::getline(tel, row1);
  EXPECT_EQ(row1, "0.100000000,0,100,1.000,0.000,0,3,50");
  EXPECT_FALSE(fs::exists(dir + "/" + kPartsDir));
  fs::remove_all(dir);
}

// A crash marker makes the outcome a crash of that rank, and job.log gets the launcher's lines.
TEST(RealRecord, MergesACrash) {
  const Plan plan = two_rank_plan();
  const std::string dir = make_dir();
  std::ofstream(part_path(dir, 0)) << "S\t1\t100\n";
  std::ofstream(part_path(dir, 1)) << "S\t1\t100\ncrash\t150\t2\n";
  LaunchInfo info;
  info.exit_code = 137;
  auto r = merge_parts(plan, dir, info);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result.outcome, Outcome::kCrash);
  EXPECT_EQ(r->result.crash.rank, 1);
  std::ifstream log(dir + "/job.log");
  std::string all((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("failed (exitcode: -9) local_rank: 1"), std::string::npos);
  fs::remove_all(dir);
}

// Every rank done and mpirun exiting 0 is a completed run.
TEST(RealRecord, MergesACompletedRun) {
  const Plan plan = two_rank_plan();
  const std::string dir = make_dir();
  for (int r = 0; r < 2; ++r) {
    std::ofstream f(part_path(dir, r));
    for (int s = 1; s <= 5; ++s) f << "S\t" << s << "\t" << s * 100 << "\n";
    f << "done\t600\n";
  }
  auto r = merge_parts(plan, dir, LaunchInfo{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result.outcome, Outcome::kCompleted);
  EXPECT_EQ(r->steps.count, 5);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fleetsim::validate
