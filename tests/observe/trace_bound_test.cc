// trace.json at any scale: above 64 ranks, 64 ranks in full (rank 0, the last, an
// even sample) and the rest summarized per rank range in one more process; up to
// 64 ranks every rank in full and no summary.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/support/command.h"
#include "tests/support/files.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

nlohmann::json run_trace(const std::string& sets, const fs::path& out) {
  fs::remove_all(out);
  const auto r = test_support::run_command(std::string(FLEETSIM_BINARY) + " run " + FLEETSIM_SOURCE_DIR +
                                           "/scenarios/step400_hang.yaml --outputs summary,trace --out " + out.string() + " " +
                                           sets);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return nlohmann::json::parse(test_support::slurp(out / "trace.json"));
}

TEST(TraceBound, AboveSixtyFourRanksTheRestIsSummarized) {
  const fs::path out = fs::temp_directory_path() / ("fleetsim-trace-bound-" + std::to_string(::getpid()));
  const nlohmann::json t = run_trace("--set fleet.nodes=16 --set parallel.dp=16", out);  // 128 ranks
  std::set<int> full;
  int summary_pid = -1, summarized = 0;
  bool first_timeout = false;
  for (const nlohmann::json& e : t) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      const std::string name = e["args"]["name"];
      if (name.rfind("rank ", 0) == 0) full.insert(e["pid"].get<int>());
      if (name == "64 ranks summarized") summary_pid = e["pid"];
    }
    if (e["ph"] == "X" && e["pid"] == 128) {
      summarized += e["args"]["ranks"].get<int>();
      EXPECT_EQ(e["args"]["timed_out"], e["args"]["ranks"]);  // every rank of the hang times out
      EXPECT_GE(e["args"]["min_mean_max"]["last_step"][2].get<int>(), 400);  // they got to the hang
    }
    if (e["ph"] == "i" && e["pid"] == 128)
      first_timeout |= e["name"].get<std::string>().rfind("first watchdog timeout among them: rank ", 0) == 0;
  }
  EXPECT_EQ(full.size(), 64u);
  EXPECT_TRUE(full.count(0) && full.count(127));
  EXPECT_EQ(summary_pid, 128);
  EXPECT_EQ(summarized, 64);
  EXPECT_TRUE(first_timeout);
  const std::string summary = test_support::slurp(out / "summary.json");
  EXPECT_NE(summary.find("64 of 128 ranks in full"), std::string::npos);
  fs::remove_all(out);
}

TEST(TraceBound, UpToSixtyFourRanksEveryRankInFull) {
  const fs::path out = fs::temp_directory_path() / ("fleetsim-trace-full-" + std::to_string(::getpid()));
  const nlohmann::json t = run_trace("", out);  // 32 ranks
  int processes = 0;
  for (const nlohmann::json& e : t)
    if (e["ph"] == "M" && e["name"] == "process_name") {
      ++processes;
      EXPECT_EQ(e["args"]["name"].get<std::string>().rfind("rank ", 0), 0u);
    }
  EXPECT_EQ(processes, 32);
  fs::remove_all(out);
}

}  // namespace
}  // namespace fleetsim
