// diagnose reads only evidence it can trust: a value of the wrong JSON type, a
// negative sequence number, a rank outside the job, two dumps for one rank or
// dumps of two jobs in one folder are located errors, never a verdict over
// silently dropped or misread files. Small dumps are written here by hand.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;

// A dump of `rank` in a job of `world` ranks; `entry_fields` go into its one entry.
std::string dump(int rank, int world, const std::string& entry_fields = "\"collective_seq_id\": 1") {
  std::string ranks;
  for (int r = 0; r < world; ++r) ranks += (r ? ", " : "") + std::to_string(r);
  return "{\n \"rank\": " + std::to_string(rank) + ",\n \"pg_config\": {\"0\": {\"name\": \"0\", \"desc\": "
         "\"default_pg\", \"ranks\": \"[" + ranks + "]\"}},\n \"entries\": [\n  {\"record_id\": 1, \"pg_id\": 0,\n   " +
         entry_fields + ",\n   \"profiling_name\": \"nccl:all_reduce\", \"state\": \"completed\"}\n ]\n}\n";
}

class StrictEvidence : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fleetsim_strict_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  // The error read_record reports, as FILE:LINE:COL: MESSAGE with the folder cut off.
  std::string error() {
    Result<Record> rec = read_record(dir_.string());
    if (rec.ok()) return "(read " + std::to_string(rec->dumps.size()) + " dumps)";
    std::string s = rec.errors().front().to_string();
    const std::string prefix = dir_.string() + "/";
    if (s.rfind(prefix, 0) == 0) s = s.substr(prefix.size());
    return s;
  }
  fs::path dir_;
};

TEST_F(StrictEvidence, AWellFormedJobReads) {
  for (int r = 0; r < 2; ++r) write("rank_" + std::to_string(r) + ".json", dump(r, 2));
  EXPECT_EQ(error(), "(read 2 dumps)");
  // Numbers written as strings of digits (as some PyTorch versions do) are numbers.
  write("rank_1.json", dump(1, 2, "\"collective_seq_id\": \"1\""));
  EXPECT_EQ(error(), "(read 2 dumps)");
}

TEST_F(StrictEvidence, AStringWhereAnIntegerBelongsIsLocated) {
  write("rank_0.json", dump(0, 2));
  write("rank_1.json", dump(1, 2, "\"collective_seq_id\": \"one\""));
  EXPECT_EQ(error(), "rank_1.json:6:25: error: entries[0].collective_seq_id: expected an integer, got \"one\"");
  write("rank_1.json", dump(1, 2, "\"time_created_ns\": [1]"));
  EXPECT_EQ(error(), "rank_1.json:6:23: error: entries[0].time_created_ns: expected an integer, got [1]");
}

TEST_F(StrictEvidence, ANegativeSequenceNumberIsLocated) {
  write("rank_0.json", dump(0, 2, "\"collective_seq_id\": -3"));
  EXPECT_EQ(error(), "rank_0.json:6:25: error: entries[0].collective_seq_id: a sequence number must be >= 0, got -3");
}

TEST_F(StrictEvidence, ARankOutsideTheJobIsAnError) {
  write("rank_0.json", dump(0, 2));
  write("rank_7.json", dump(7, 2));
  EXPECT_EQ(error(), "rank_7.json: error: rank 7 is outside the job's world of 2 ranks (0 .. 1)");
  write("rank_7.json", dump(-1, 2));
  EXPECT_EQ(error(), "rank_7.json:2:10: error: rank: a rank must be an integer in 0 .. 2^31-1, got -1");
}

TEST_F(StrictEvidence, TwoFilesForOneRankAreAnError) {
  write("rank_0.json", dump(0, 2));
  write("rank_1.json", dump(0, 2));  // the file name says 1, the dump says 0
  EXPECT_EQ(error(), "rank_1.json: error: a second dump for rank 0 (also " + (dir_ / "rank_0.json").string() +
                         "): dumps of two jobs in one folder? diagnose reads one job's dumps, one per rank");
}

TEST_F(StrictEvidence, DumpsOfTwoJobsAreAnError) {
  // Two 2-rank jobs' dumps side by side under different names: nothing is dropped silently.
  for (int r = 0; r < 2; ++r) write("jobA_rank_" + std::to_string(r) + ".json", dump(r, 2));
  for (int r = 0; r < 2; ++r) write("jobB_rank_" + std::to_string(r) + ".json", dump(r, 2));
  EXPECT_NE(error().find("a second dump for rank 0"), std::string::npos) << error();
  // Two jobs of different sizes.
  fs::remove(dir_ / "jobB_rank_0.json");
  fs::remove(dir_ / "jobB_rank_1.json");
  write("rank_2.json", dump(2, 4));
  EXPECT_EQ(error(), "rank_2.json: error: world size 4 (from its pg_config), but " + (dir_ / "jobA_rank_0.json").string() +
                         " has 2: dumps of two jobs in one folder?");
}

}  // namespace
}  // namespace fleetsim::diagnose
