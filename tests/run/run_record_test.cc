// The RunRecord folder of real scenarios from scenarios/: what an on-call
// engineer would see (telemetry during a hang, watchdog lines, flight-recorder
// pg_status), byte-identical reruns, and the CLI's bad-input contract.
#include <gtest/gtest.h>

#include "tests/support/command.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetsim/cost_model.h"
#include "sim/diagnose/pickle_reader.h"
#include "sim/io/scenario_loader.h"
#include "sim/run/run.h"
#include "tests/support/files.h"

namespace fs = std::filesystem;

namespace fleetsim {
namespace {

using test_support::slurp;

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("fleetsim_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

RecordedRun simulate(const std::string& scenario, const fs::path& out) {
  auto plan = load_plan(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + scenario);
  EXPECT_TRUE(plan.ok());
  PreparedRun prepared = prepare_run(*plan, make_alpha_beta_model(plan->scenario.fleet));
  RunOptions opts;
  opts.out_dir = out.string();
  auto run = execute(prepared, opts);
  EXPECT_TRUE(run.ok());
  return *run;
}

struct Row {
  double t;
  int rank, util;
  double sm, tensor;
  long long nic;
  long long step;
  long long nvlink;
};

std::vector<Row> telemetry(const fs::path& dir) {
  std::ifstream f(dir / "telemetry.csv");
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "time_s,rank,gpu_util,sm_active,tensor_active,nic_tx_bytes,step,nvlink_tx_bytes");
  std::vector<Row> rows;
  while (std::getline(f, line)) {
    Row r{};
    EXPECT_EQ(std::sscanf(line.c_str(), "%lf,%d,%d,%lf,%lf,%lld,%lld,%lld", &r.t, &r.rank, &r.util, &r.sm,
                          &r.tensor, &r.nic, &r.step, &r.nvlink), 8);
    rows.push_back(r);
  }
  return rows;
}

class Step400 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(temp_dir("step400"));
    run_ = new RecordedRun(simulate("step400_hang.yaml", *dir_));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
    delete run_;
  }
  static fs::path* dir_;
  static RecordedRun* run_;
};
fs::path* Step400::dir_ = nullptr;
RecordedRun* Step400::run_ = nullptr;

// The founding case hangs at step 400 and the watchdog fires 10 minutes after
// the stuck collective's enqueue (at the next 100 ms poll).
TEST_F(Step400, HangsAtStep400AndWatchdogFiresTenMinutesLater) {
  const nlohmann::json s = nlohmann::json::parse(slurp(*dir_ / "summary.json"));
  EXPECT_EQ(s["outcome"], "hang");
  EXPECT_EQ(s["hang"]["step"], 400);
  EXPECT_EQ(s["hang"]["first_timeout_rank"], 0);
  const double waited = s["hang"]["detected_at_s"].get<double>() - s["hang"]["stuck_since_s"].get<double>();
  EXPECT_GE(waited, 600.0);
  EXPECT_LT(waited, 600.1);
  EXPECT_EQ(s["steps_completed"], 399);
}

// From the hang to the watchdog every rank reads 100% GPU utilization with no
// tensor work and flat NIC and NVLink counters: spinning NCCL kernels look like work.
TEST_F(Step400, EveryGpuSpinsAtFullUtilizationDuringTheHang) {
  const double from = run_->result.hang.stuck_since.to_seconds() + 2.0;  // the rest drain into the hang
  const double to = run_->result.hang.detected_at.to_seconds();
  std::map<int, long long> nic_at_start, nvlink_at_start;
  int rows = 0;
  for (const Row& r : telemetry(*dir_)) {
    if (r.t < from || r.t > to) continue;
    ++rows;
    EXPECT_EQ(r.util, 100) << "rank " << r.rank << " t " << r.t;
    EXPECT_EQ(r.tensor, 0.0) << "rank " << r.rank << " t " << r.t;
    EXPECT_LT(r.sm, 0.2);
    auto [it, fresh] = nic_at_start.emplace(r.rank, r.nic);
    if (!fresh) {
      EXPECT_EQ(r.nic, it->second) << "rank " << r.rank << " NIC moved at " << r.t;
    }
    auto [nv, nv_fresh] = nvlink_at_start.emplace(r.rank, r.nvlink);
    if (!nv_fresh) {
      EXPECT_EQ(r.nvlink, nv->second) << "rank " << r.rank << " NVLink moved at " << r.t;
    }
  }
  EXPECT_EQ(nic_at_start.size(), 32u);
  EXPECT_GT(rows, 32 * 500);
}

// Before the hang data moved: each rank's tensor-parallel all-reduces (eight GPUs
// on one node) went over NVLink, 2(n-1)/n of the 64 MiB a step, and its
// data-parallel ring (one GPU a node) over the NICs only.
TEST_F(Step400, NvlinkBytesCountTheTensorParallelTraffic) {
  const double stuck = run_->result.hang.stuck_since.to_seconds();
  long long last = -1;
  for (const Row& r : telemetry(*dir_))
    if (r.rank == 5 && r.t < stuck) last = r.nvlink;
  const long long per_step = 2 * 7 * (64LL << 20) / 8;
  EXPECT_GE(last, 390 * per_step);  // about 399 steps' worth by the hang
  EXPECT_LE(last, 400 * per_step);
}

// Rank 0's world group has enqueued one collective more than every other rank. The
// dumps are PyTorch's defaults: pickles named comm_lib_trace_rank_<r>, timing off (no
// start seen, so the stuck all-reduce is still `scheduled`), stack traces on.
nlohmann::json fr_pickle(const fs::path& dir, int rank) {
  const std::string name = "comm_lib_trace_rank_" + std::to_string(rank);
  Result<nlohmann::json> v = diagnose::read_pickle(slurp(dir / "fr" / name), name);
  EXPECT_TRUE(v.ok()) << name;
  return v.ok() ? *v : nlohmann::json::object();
}

TEST_F(Step400, RankZeroRunsOneWorldCollectiveAhead) {
  for (int r = 0; r < 32; ++r) {
    const auto fr = fr_pickle(*dir_, r);
    EXPECT_EQ(fr["pg_status"]["0"]["last_enqueued_collective"], r == 0 ? 1 : -1) << "rank " << r;
    EXPECT_EQ(fr["pg_status"]["0"]["last_started_collective"], -1) << "timing off: no start is seen";
    EXPECT_EQ(fr["pg_config"]["0"]["desc"], "default_pg");
    EXPECT_FALSE(fs::exists(*dir_ / "fr" / ("rank_" + std::to_string(r) + ".json")));
  }
  const auto fr0 = fr_pickle(*dir_, 0);
  const auto& last = fr0["entries"].back();
  EXPECT_EQ(last["profiling_name"], "nccl:all_reduce");
  EXPECT_EQ(last["state"], "scheduled");
  EXPECT_TRUE(last["time_discovered_started_ns"].is_null());
  EXPECT_FALSE(last.contains("duration_ms"));
  EXPECT_EQ(last["frames"][0]["name"], "loss");
  EXPECT_EQ(last["frames"][1]["name"], "when: rank == 0 && step % 400 == 0");
  const auto& done = fr0["entries"].front();
  EXPECT_EQ(done["state"], "completed");
  EXPECT_TRUE(done["time_discovered_completed_ns"].is_number_integer());
}

// job.log carries ProcessGroupNCCL's timeout line for the stuck world all-reduce.
TEST_F(Step400, JobLogHasPyTorchWatchdogLine) {
  const std::string log = slurp(*dir_ / "job.log");
  EXPECT_NE(log.find("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, "
                     "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600"),
            std::string::npos);
  EXPECT_NE(log.find("milliseconds before timing out."), std::string::npos);
  EXPECT_NE(log.find("Observed flight recorder dump signal from another rank via TCPStore."), std::string::npos);
}

// The fixed scenario completes all 1000 steps and prints the loss twice.
TEST(RunRecord, FixedScenarioCompletes) {
  const fs::path dir = temp_dir("fixed");
  const RecordedRun run = simulate("step400_fixed.yaml", dir);
  EXPECT_EQ(run.result.outcome, Outcome::kCompleted);
  EXPECT_EQ(run.result.steps_completed, 1000);
  const std::string log = slurp(dir / "job.log");
  EXPECT_NE(log.find("[rank0]: step 400 loss "), std::string::npos);
  EXPECT_NE(log.find("[rank0]: step 800 loss "), std::string::npos);
  fs::remove_all(dir);
}

// A rank stalled on its CPU shows 0% GPU utilization while all others spin at 100%.
TEST(RunRecord, MissingRankIsTheOnlyIdleGpu) {
  const fs::path dir = temp_dir("missing");
  const RecordedRun run = simulate("missing_rank.yaml", dir);
  ASSERT_EQ(run.result.outcome, Outcome::kHang);
  const double from = run.result.hang.stuck_since.to_seconds() + 2.0, to = run.result.hang.detected_at.to_seconds();
  int checked = 0;
  for (const Row& r : telemetry(dir)) {
    if (r.t < from || r.t > to) continue;
    EXPECT_EQ(r.util, r.rank == 5 ? 0 : 100) << "rank " << r.rank << " t " << r.t;
    ++checked;
  }
  EXPECT_GT(checked, 1000);
  // The trace shows where the rank's CPU went and never came back.
  const std::string trace = slurp(dir / "trace.json");
  EXPECT_NE(trace.find("\"pid\":5,\"tid\":0,\"name\":\"data_loader (never returned)\""), std::string::npos);
  fs::remove_all(dir);
}

// The same scenario and seed give byte-identical folders.
TEST(RunRecord, SameSeedGivesByteIdenticalFolders) {
  const fs::path a = temp_dir("det_a"), b = temp_dir("det_b");
  simulate("step400_hang.yaml", a);
  simulate("step400_hang.yaml", b);
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(a))
    if (e.is_regular_file()) files.push_back(fs::relative(e.path(), a).string());
  ASSERT_GT(files.size(), 35u);  // 5 files + 32 dumps
  for (const std::string& f : files) EXPECT_EQ(slurp(a / f), slurp(b / f)) << f;
  fs::remove_all(a);
  fs::remove_all(b);
}

struct Cli {
  int code;
  std::string out;
};

Cli run_cli(const std::string& args) {
  const fleetsim::test_support::CommandResult c = fleetsim::test_support::run_command(std::string(FLEETSIM_BINARY) + " " + args);
  return {c.exit_code, c.out};
}

// Bad input: one line FILE:LINE:COL: error: ..., exit code 2, and no output folder.
TEST(RunRecordCli, BadInputExitsTwoAndWritesNothing) {
  const fs::path dir = temp_dir("bad");
  fs::create_directories(dir);
  const fs::path yaml = dir / "bad.yaml";
  std::ofstream(yaml) << "name: x\nfleet: {system: dgx-h100, nodes: 1}\njob: {steps: 3}\nstep:\n"
                         "  - compute: {name: f, time: -5ms}\n";
  const Cli c = run_cli("run " + yaml.string() + " --out " + (dir / "out").string());
  EXPECT_EQ(c.code, 2);
  EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 1) << c.out;
  EXPECT_NE(c.out.find(yaml.string() + ":5:"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find(": error: "), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out"));
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos);
  fs::remove_all(dir);
}

// A run-time input error (a send past the last pipeline stage) also writes nothing.
TEST(RunRecordCli, RuntimeInputErrorWritesNothing) {
  const fs::path dir = temp_dir("rt");
  fs::create_directories(dir);
  const fs::path yaml = dir / "pp.yaml";
  std::ofstream(yaml) << "name: x\nfleet: {system: custom, gpus_per_node: 2, nodes: 1}\nparallel: {tp: 1, pp: 2}\n"
                         "job: {steps: 2}\nstep:\n  - send: {name: act, to: next, bytes: 1MiB}\n";
  const Cli c = run_cli("run " + yaml.string() + " --out " + (dir / "out").string());
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_NE(c.out.find(":6:"), std::string::npos) << c.out;
  EXPECT_FALSE(fs::exists(dir / "out"));
  fs::remove_all(dir);
}

// `check` validates without running; `--version` and `--help` work.
TEST(RunRecordCli, CheckVersionHelp) {
  const Cli ok = run_cli("check " + std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("ok: 'step400-hang', 32 ranks"), std::string::npos) << ok.out;
  EXPECT_EQ(run_cli("--version").code, 0);
  EXPECT_EQ(run_cli("run --help").code, 0);
  EXPECT_EQ(run_cli("run").code, 2);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

// In a hang at fleet scale the summary lists the first 1024 ranks that timed out
// and their count, not all of them: the folder stays bounded (16,384 ranks here).
TEST(SummaryAtScale, TimedOutRanksAreBoundedInAHang) {
  const fs::path dir = temp_dir("hang16k");
  Result<PreparedRun> prepared = prepare_run(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml",
                                             {"fleet.nodes=2048", "parallel.dp=2048"});
  ASSERT_TRUE(prepared.ok());
  RunOptions opts;
  opts.out_dir = dir.string();
  opts.outputs = std::vector<std::string>{"summary"};
  ASSERT_TRUE(execute(*prepared, opts).ok());
  const nlohmann::json s = nlohmann::json::parse(slurp(dir / "summary.json"));
  fs::remove_all(dir);
  EXPECT_EQ(s["hang"]["timed_out_count"], 16384);
  EXPECT_EQ(s["hang"]["timed_out_ranks_first"].size(), 1024u);
  EXPECT_FALSE(s["hang"].contains("timed_out_ranks"));
}

}  // namespace
}  // namespace fleetsim
