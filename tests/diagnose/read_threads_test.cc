// diagnose parses a folder's dumps on several threads: the record, the report and the
// error on bad input must be the same whatever the thread count (the results are
// filed in path order, the first bad file in that order is the one named).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "sim/diagnose/diagnose.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;

const fs::path kReal = fs::path(FLEETSIM_SOURCE_DIR) / "tests/fixtures/real";

std::string report_with(const fs::path& dir, int threads) {
  const Result<Record> rec = read_record(dir.string(), threads);
  if (!rec.ok()) return "error: " + rec.errors().front().to_string();
  std::string files;
  for (const std::string& f : rec->files) files += f + "\n";
  return files + format_human(diagnose_record(*rec));
}

// A fresh folder for one test, named by the process.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("fleetsim-read-threads-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ReadThreads, RealDumpsGiveTheSameReportOnOneOrManyThreads) {
  for (const char* incident : {"many_groups", "missing_rank", "p2p_skip", "stuck_at_start"}) {
    // The pickles alone (the incident folder also holds the JSON form one level down).
    const fs::path pickles = scratch("pickles");
    for (const fs::directory_entry& e : fs::directory_iterator(kReal / incident))
      if (e.is_regular_file() && e.path().filename().string().rfind("comm_lib_trace_rank_", 0) == 0)
        fs::copy_file(e.path(), pickles / e.path().filename());
    for (const fs::path& dir : {pickles, kReal / incident / "json"}) {
      const std::string one = report_with(dir, 1);
      EXPECT_EQ(one.rfind("error", 0), std::string::npos) << dir << ": " << one;
      for (int threads : {2, 3, 16}) EXPECT_EQ(report_with(dir, threads), one) << dir << " on " << threads << " threads";
    }
    fs::remove_all(pickles);
  }
}

TEST(ReadThreads, TheFirstBadDumpInPathOrderIsNamedOnAnyThreadCount) {
  const fs::path dir = scratch("bad");
  for (const fs::directory_entry& e : fs::directory_iterator(kReal / "many_groups" / "json"))
    fs::copy_file(e.path(), dir / e.path().filename());
  // Path order: rank_0, rank_1, rank_10 .. rank_15, rank_2, ...: rank_12 comes before rank_3.
  std::ofstream(dir / "rank_3.json") << "{\"entries\": [1,";
  std::ofstream(dir / "rank_12.json") << "{\"rank\": \"twelve\"}";
  const std::string one = report_with(dir, 1);
  EXPECT_NE(one.find("rank_12.json"), std::string::npos) << one;
  for (int threads : {2, 5, 16}) EXPECT_EQ(report_with(dir, threads), one) << threads << " threads";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fleetsim::diagnose
