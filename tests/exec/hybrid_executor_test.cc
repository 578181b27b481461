// The hybrid executor against the event executor: for every scenario in
// scenarios/ (and the founding case at 4,096 ranks, and with its jitter off so
// that events tie), the folder the hybrid writes is byte-identical to the
// event executor's, but for summary.json's line naming the executor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sim/exec/hybrid_executor.h"
#include "sim/run/run.h"
#include "tests/support/files.h"

namespace fs = std::filesystem;

namespace fleetsim {
namespace {

using test_support::slurp;

const std::vector<std::string> kOutputs = {"summary", "steps", "model"};

// summary.json without the lines that name the executor (and why it ran).
std::string without_executor(const std::string& json) {
  std::istringstream in(json);
  std::string line, out;
  while (std::getline(in, line))
    if (line.find("\"sim_executor") == std::string::npos) out += line + "\n";
  return out;
}

// Runs `file` with `executor` into a fresh folder; returns the executor that ran.
std::string run_with(const std::string& file, const std::vector<std::string>& sets, const std::string& executor,
                     const fs::path& out) {
  Result<PreparedRun> prepared = prepare_run(file, sets);
  EXPECT_TRUE(prepared.ok()) << file;
  if (!prepared.ok()) return "";
  RunOptions opts;
  opts.out_dir = out.string();
  opts.outputs = kOutputs;
  opts.executor = executor;
  opts.force = true;
  Result<RecordedRun> run = execute(*prepared, opts);
  EXPECT_TRUE(run.ok()) << file;
  return run.ok() ? run->executor : "";
}

// Compares the two folders file by file; returns the executor the hybrid attempt ended with.
std::string expect_same_folder(const std::string& file, const std::vector<std::string>& sets = {}) {
  const fs::path base = fs::temp_directory_path() / ("fleetsim_hybrid_" + std::to_string(::getpid()));
  const fs::path ev = base / "event", hy = base / "hybrid";
  EXPECT_EQ(run_with(file, sets, "event", ev), "event");
  const std::string ran = run_with(file, sets, "hybrid", hy);
  std::set<std::string> names;
  for (const fs::path& d : {ev, hy})
    for (const auto& e : fs::directory_iterator(d)) names.insert(e.path().filename().string());
  for (const std::string& name : names) {
    std::string a = slurp(ev / name), b = slurp(hy / name);
    if (name == "summary.json") {
      a = without_executor(a);
      b = without_executor(b);
    }
    EXPECT_TRUE(fs::exists(ev / name) && fs::exists(hy / name)) << file << ": " << name;
    EXPECT_EQ(a, b) << file << ": " << name << " differs";
  }
  fs::remove_all(base);
  return ran;
}

TEST(HybridExecutor, EveryScenarioWritesWhatTheEventExecutorWrites) {
  int hybrid_ran = 0, scenarios = 0;
  for (const auto& e : fs::directory_iterator(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    ++scenarios;
    // The 16k-rank scenario: fewer steps keep the event executor's run short.
    const bool big = e.path().filename() == "straggler_tax_16k.yaml";
    const std::string ran = expect_same_folder(e.path().string(), big ? std::vector<std::string>{"job.steps=30"}
                                                                     : std::vector<std::string>{});
    hybrid_ran += ran == "hybrid";
    std::printf("%-32s %s\n", e.path().filename().c_str(), ran.c_str());
  }
  EXPECT_GE(scenarios, 20);
  EXPECT_GE(hybrid_ran, 7);  // the rest have no uniform first step, or faults only events model
}

TEST(HybridExecutor, FoundingCaseAtFourThousandRanks) {
  const std::string file = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml";
  EXPECT_EQ(expect_same_folder(file, {"fleet.nodes=512", "parallel.dp=512", "job.steps=420"}), "hybrid");
}

TEST(HybridExecutor, TiesWithoutJitter) {
  // Every rank's kernels end at the same instants: the handover's agenda is all ties.
  std::string yaml = slurp(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml");
  for (size_t at; (at = yaml.find("jitter: 1%")) != std::string::npos;) yaml.replace(at, 10, "jitter: 0%");
  const fs::path file = fs::temp_directory_path() / ("fleetsim_hybrid_ties_" + std::to_string(::getpid()) + ".yaml");
  { std::ofstream(file) << yaml; }
  EXPECT_EQ(expect_same_folder(file.string()), "hybrid");
  fs::remove(file);
}

TEST(HybridExecutor, FoundingCaseHandsOverBeforeStep400) {
  Result<PreparedRun> p = prepare_run(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml");
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(hybrid_eligible(p->plan).ok);
  HybridSim sim(p->plan, *p->cost, {}, nullptr);
  RunResult r;
  ASSERT_TRUE(sim.run(&r));
  EXPECT_EQ(sim.uniform_steps(), 399);  // step 400's `when` differs on rank 0
  EXPECT_EQ(r.outcome, Outcome::kHang);
  EXPECT_EQ(r.hang.step, 400);
  EXPECT_EQ(r.steps_completed, 399);
}

}  // namespace
}  // namespace fleetsim
