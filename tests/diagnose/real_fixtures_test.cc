// The real PyTorch flight-recorder fixtures (tests/fixtures/real/, made by
// make_real_dumps.py from gloo jobs with injected faults) are all there as their
// ground truth (expected.json) lists them: one pickle and one JSON dump per rank that
// dumped, none for a rank that died, and culprits among the job's ranks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(FLEETSIM_SOURCE_DIR) / "tests/fixtures/real";

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

nlohmann::json expected() { return nlohmann::json::parse(slurp(kRoot / "expected.json")); }

TEST(RealFixtures, ListsEveryIncidentOfTheScript) {
  const nlohmann::json e = expected();
  EXPECT_EQ(e.at("torch_version").get<std::string>().rfind("2.15.0", 0), 0u);
  std::set<std::string> names;
  for (const auto& [name, incident] : e.at("incidents").items()) names.insert(name);
  for (const char* name : {"extra_collective", "extra_collective_tail", "missing_rank", "missing_rank_only_active",
                           "missing_rank_timing_on", "size_mismatch", "size_mismatch_larger", "p2p_skip",
                           "stuck_before_issue", "stuck_at_start", "many_groups"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
}

TEST(RealFixtures, EachDumpedRankHasItsPickleAndJson) {
  const nlohmann::json e = expected();
  ASSERT_FALSE(e.at("incidents").empty());
  for (const auto& [name, incident] : e.at("incidents").items()) {
    const fs::path folder = kRoot / name;
    const std::string prefix = incident.at("prefix").get<std::string>();
    int dumped = 0;
    for (const auto& [rank, info] : incident.at("ranks").items()) {
      const fs::path pickle = folder / (prefix + rank);
      const fs::path json = folder / "json" / ("rank_" + rank + ".json");
      if (!info.at("dumped").get<bool>()) {
        EXPECT_FALSE(fs::exists(pickle)) << pickle;
        EXPECT_FALSE(fs::exists(json)) << json;
        continue;
      }
      ++dumped;
      const std::string bytes = slurp(pickle);
      ASSERT_GE(bytes.size(), 3u) << pickle;
      EXPECT_EQ(bytes.substr(0, 2), std::string("\x80\x02", 2)) << pickle << ": not a protocol-2 pickle";
      EXPECT_EQ(bytes.back(), '.') << pickle << ": no STOP opcode";
      const nlohmann::json dump = nlohmann::json::parse(slurp(json));
      EXPECT_EQ(dump.at("version"), "2.10") << json;
    }
    int pickles = 0;
    for (const auto& file : fs::directory_iterator(folder)) {
      if (file.path().filename().string().rfind(prefix, 0) == 0) ++pickles;
    }
    EXPECT_EQ(pickles, dumped) << folder;
  }
}

TEST(RealFixtures, CulpritsAreInjectedRanksOfTheJob) {
  const nlohmann::json e = expected();
  ASSERT_FALSE(e.at("incidents").empty());
  for (const auto& [name, incident] : e.at("incidents").items()) {
    const int world = incident.at("world_size").get<int>();
    std::set<int> culprits;
    for (const auto& r : incident.at("culprit_ranks")) culprits.insert(r.get<int>());
    ASSERT_FALSE(culprits.empty()) << name;
    for (int r : culprits) EXPECT_LT(r, world) << name;
    ASSERT_FALSE(incident.at("injected").empty()) << name;
    for (const auto& i : incident.at("injected")) EXPECT_TRUE(culprits.count(i.at("rank").get<int>())) << name;
  }
}

}  // namespace
}  // namespace fleetsim
