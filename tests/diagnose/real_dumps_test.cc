// diagnose on genuine PyTorch flight-recorder dumps (tests/fixtures/real/, written by
// real gloo jobs with injected faults; JSON form under each incident's json/): every
// incident is a hang, and the culprit ranks are the injected ones (expected.json).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/diagnose/diagnose.h"

namespace fleetsim::diagnose {
namespace {

const std::filesystem::path kReal = std::filesystem::path(FLEETSIM_SOURCE_DIR) / "tests" / "fixtures" / "real";

TEST(RealDumps, EveryIncidentIsAHangBlamingTheInjectedRanks) {
  std::ifstream in(kReal / "expected.json");
  ASSERT_TRUE(in) << "no expected.json";
  const nlohmann::json expected = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& [name, incident] : expected.at("incidents").items()) {
    const std::filesystem::path json_dir = kReal / name / "json";
    if (!std::filesystem::is_directory(json_dir)) continue;
    SCOPED_TRACE(name);
    const Result<Diagnosis> d = diagnose_dir(json_dir.string());
    ASSERT_TRUE(d.ok()) << d.errors().front().to_string();
    EXPECT_EQ(d->verdict, Verdict::kHang);
    if (name == "p2p_skip") {
      // Gloo records no send/recv (expected.json's note): the dumps cannot show rank
      // 3's skipped send. What they do show is every pending collective waiting, in
      // the end, on rank 1, which has nothing pending: the pipeline neighbour of the
      // culprit, one hop from it. diagnose names the rank the dumps point at.
      EXPECT_EQ(d->culprit_ranks, std::vector<int>{1});
    } else {
      EXPECT_EQ(d->culprit_ranks, incident.at("culprit_ranks").get<std::vector<int>>());
    }
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

// The same incidents read from the pickles exactly as PyTorch wrote them
// (comm_lib_trace_rank_<r>), alone in a folder as they arrive from a cluster.
TEST(RealDumps, PicklesAsWrittenNameTheSameCulprits) {
  std::ifstream in(kReal / "expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  const std::filesystem::path tmp =
      std::filesystem::temp_directory_path() / ("fleetsim_real_pickles_" + std::to_string(::getpid()));
  int checked = 0;
  for (const auto& [name, incident] : expected.at("incidents").items()) {
    SCOPED_TRACE(name);
    const std::filesystem::path dir = tmp / name;
    std::filesystem::create_directories(dir);
    for (const auto& f : std::filesystem::directory_iterator(kReal / name))
      if (f.path().filename().string().rfind("comm_lib_trace_rank_", 0) == 0)
        std::filesystem::copy_file(f.path(), dir / f.path().filename());
    const Result<Diagnosis> d = diagnose_dir(dir.string());
    ASSERT_TRUE(d.ok()) << d.errors().front().to_string();
    EXPECT_EQ(d->verdict, Verdict::kHang);
    const std::vector<int> want =
        name == "p2p_skip" ? std::vector<int>{1} : incident.at("culprit_ranks").get<std::vector<int>>();
    EXPECT_EQ(d->culprit_ranks, want);  // p2p_skip: gloo records no send/recv (above)
    ++checked;
  }
  std::filesystem::remove_all(tmp);
  EXPECT_GE(checked, 10);
}

// Rank 3 left the loop a step early: the others' pending all_reduce waits on a rank
// whose pg_status stops one seq short and that has nothing pending.
TEST(RealDumps, MissingRankNeverIssued) {
  const Result<Diagnosis> d = diagnose_dir((kReal / "missing_rank_only_active" / "json").string());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cause, Cause::kRankStalled);
  EXPECT_EQ(d->collective_seq_id, 9);
  EXPECT_EQ(d->pg_name, "0");
}

// Rank 0's extra all_reduce made gloo abort it (no dump); rank 2 still waits on it.
TEST(RealDumps, ExtraCollectiveRankDiedWithoutADump) {
  const Result<Diagnosis> d = diagnose_dir((kReal / "extra_collective" / "json").string());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cause, Cause::kRankCrashed);
  EXPECT_EQ(d->culprit_ranks, std::vector<int>{0});
}

}  // namespace
}  // namespace fleetsim::diagnose
