// The flight recorder's dump settings (job.flight_recorder) as a run writes them: the
// default pickle named as PyTorch names it, JSON on request, only_active and
// stack_traces, gloo's recorder that records no send/recv (without holes in the
// record ids), and a bad setting refused at its location.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/diagnose/pickle_reader.h"
#include "tests/support/command.h"
#include "tests/support/files.h"

namespace fleetsim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kBin = FLEETSIM_BINARY;
const std::string kSrc = FLEETSIM_SOURCE_DIR;

// Runs the 4-rank pipeline skip with `sets` (--set ...) into a fresh folder.
fs::path run(const std::string& name, const std::string& sets) {
  const fs::path out = fs::temp_directory_path() / ("fleetsim-fr-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(out);
  auto r = test_support::run_command(kBin + " run " + kSrc + "/scenarios/validate/pp_skip_4ranks.yaml " + sets +
                                     " --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return out;
}

json pickle_of(const fs::path& file) {
  Result<json> v = diagnose::read_pickle(test_support::slurp(file), file.string());
  EXPECT_TRUE(v.ok()) << file;
  return v.ok() ? *v : json::object();
}

TEST(FlightRecorder, DefaultsArePyTorchsPickleTimingOffWithStacks) {
  const fs::path out = run("default", "");
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(fs::exists(out / "fr" / ("comm_lib_trace_rank_" + std::to_string(r))));
  const json d = pickle_of(out / "fr" / "comm_lib_trace_rank_2");
  ASSERT_FALSE(d["entries"].empty());
  bool p2p = false;
  for (const json& e : d["entries"]) {
    EXPECT_NE(e["state"], "started") << "timing off: no start event";
    EXPECT_FALSE(e.contains("duration_ms"));
    EXPECT_TRUE(e.contains("frames"));
    p2p |= e["is_p2p"].get<bool>();
  }
  EXPECT_TRUE(p2p) << "NCCL's recorder records send/recv";
  fs::remove_all(out);
}

TEST(FlightRecorder, JsonTimingOnOnlyActiveNoStacks) {
  const fs::path out = run("json", "--set job.flight_recorder.format=json --set job.flight_recorder.timing=on "
                                   "--set job.flight_recorder.only_active=true "
                                   "--set job.flight_recorder.stack_traces=off");
  EXPECT_FALSE(fs::exists(out / "fr" / "comm_lib_trace_rank_0"));
  const json d = json::parse(test_support::slurp(out / "fr" / "rank_2.json"));
  EXPECT_EQ(d["pg_status"]["0"]["last_started_collective"].get<std::string>(), "-1");
  ASSERT_TRUE(d.contains("entries"));
  for (const json& e : d["entries"]) {
    EXPECT_EQ(e["time_discovered_completed_ns"], 0) << "only_active: completed work is left out";
    EXPECT_FALSE(e.contains("frames"));
  }
  fs::remove_all(out);
}

// Gloo (torch 2.15) records no send/recv: the dumps hold only collectives, their
// record ids run on without a gap, and the pp group never enqueues.
TEST(FlightRecorder, GlooRecordsNoPointToPointAndLeavesNoHoles) {
  const fs::path out = run("gloo", "--set job.backend=gloo");
  for (int r = 0; r < 4; ++r) {
    const json d = pickle_of(out / "fr" / ("comm_lib_trace_rank_" + std::to_string(r)));
    ASSERT_FALSE(d["entries"].empty()) << r;
    int64_t next = d["entries"][0]["record_id"].get<int64_t>();
    for (const json& e : d["entries"]) {
      EXPECT_FALSE(e["is_p2p"].get<bool>()) << r;
      EXPECT_EQ(e["record_id"].get<int64_t>(), next++) << r;
    }
    EXPECT_EQ(d["pg_status"]["3"]["last_enqueued_collective"], -1) << r;
  }
  fs::remove_all(out);
}

TEST(FlightRecorder, ABadSettingIsALocatedError) {
  auto r = test_support::run_command(kBin + " run " + kSrc + "/scenarios/validate/pp_skip_4ranks.yaml " +
                                     "--set job.flight_recorder.format=yaml --out /nonexistent/x");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("job.flight_recorder.format"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expected one of: pickle, json"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fleetsim
