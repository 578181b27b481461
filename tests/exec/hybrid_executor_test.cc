// The hybrid executor against the event executor: for every scenario in
// scenarios/ (and the founding case at 4,096 ranks, and with its jitter off so
// that events tie), the folder the hybrid writes is byte-identical to the
// event executor's, but for summary.json's line naming the executor. So are
// runs that diverge now and then and come back to lockstep speed (a loss
// logged by rank 0, a checkpoint rank 0 saves, the watchdog's checks).
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

// Times the hybrid came back to lockstep speed on `file` (-1: not eligible or fell back).
int hybrid_returns(const std::string& file, const std::vector<std::string>& sets = {}) {
  Result<PreparedRun> p = prepare_run(file, sets);
  if (!p.ok() || !hybrid_eligible(p->plan).ok) return -1;
  HybridSim sim(p->plan, *p->cost, {}, nullptr);
  RunResult r;
  return sim.run(&r) ? sim.returns() : -1;
}

// A scenario file written from `yaml` for one test; removed by the destructor.
struct TempScenario {
  explicit TempScenario(const std::string& yaml)
      : path(fs::temp_directory_path() / ("fleetsim_hybrid_ret_" + std::to_string(::getpid()) + ".yaml")) {
    std::ofstream(path) << yaml;
  }
  ~TempScenario() { fs::remove(path); }
  fs::path path;
};

// `ranks` ranks (tp 8) whose steps are forward, a tp all-reduce, backward and a
// dp all-reduce, with `extra` (a YAML list at the step's level) after them.
std::string periodic_yaml(int ranks, int steps, const std::string& job, const std::string& jitter,
                          const std::string& extra) {
  return "name: periodic\nfleet: {system: dgx-h100, nodes: " + std::to_string(ranks / 8) +
         "}\nparallel: {tp: 8, dp: " + std::to_string(ranks / 8) + "}\njob: {steps: " + std::to_string(steps) +
         ", seed: 3, telemetry_period: 1s" + job + "}\nstep:\n" +
         "  - compute: {name: forward, time: 150ms, jitter: " + jitter + "}\n" +
         "  - allreduce: {name: tp_activations, group: tp, bytes: 64MiB}\n" +
         "  - compute: {name: backward, time: 300ms, jitter: " + jitter + "}\n" +
         "  - allreduce: {name: grads, group: dp, bytes: 1.5GiB}\n" + extra;
}

// Every 100 steps every rank all-reduces the loss and rank 0 prints it (a sync).
const std::string kLossLog =
    "  - when: \"step % 100 == 0\"\n    do:\n"
    "      - allreduce: {name: loss, group: world, bytes: 4B}\n"
    "      - when: \"rank == 0\"\n        do:\n          - log: \"step {step} loss {loss}\"\n";
// Every 50 steps rank 0 drains its GPU and saves a checkpoint on its CPU.
const std::string kCheckpoint =
    "  - when: \"step % 50 == 0 && rank == 0\"\n    do:\n"
    "      - sync\n      - cpu: {name: save_checkpoint, time: 2s, jitter: 5%}\n";

TEST(HybridExecutor, EveryScenarioWritesWhatTheEventExecutorWrites) {
  int hybrid_ran = 0, scenarios = 0, returned = 0;
  for (const auto& e : fs::directory_iterator(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios")) {
    if (e.path().extension() != ".yaml") continue;
    ++scenarios;
    // The 16k-rank scenario: fewer steps keep the event executor's run short.
    const bool big = e.path().filename() == "straggler_tax_16k.yaml";
    const std::string ran = expect_same_folder(e.path().string(), big ? std::vector<std::string>{"job.steps=30"}
                                                                     : std::vector<std::string>{});
    hybrid_ran += ran == "hybrid";
    const int back = ran == "hybrid" ? hybrid_returns(e.path().string(), big ? std::vector<std::string>{"job.steps=30"}
                                                                            : std::vector<std::string>{})
                                     : 0;
    returned += back > 0;
    std::printf("%-32s %s (returns %d)\n", e.path().filename().c_str(), ran.c_str(), back);
  }
  EXPECT_GE(scenarios, 20);
  EXPECT_GE(hybrid_ran, 7);  // the rest have no uniform first step, or faults only events model
  EXPECT_GE(returned, 1);    // step400_fixed: back after its steps 400 and 800
}

TEST(HybridExecutor, ReturnsAfterEachLoggedLoss) {
  // 4,096 ranks, 450 steps: four divergent steps, the hybrid back after each.
  TempScenario f(periodic_yaml(4096, 450, ", watchdog: 10min", "1%", kLossLog));
  EXPECT_EQ(expect_same_folder(f.path.string()), "hybrid");
  EXPECT_EQ(hybrid_returns(f.path.string()), 4);
}

TEST(HybridExecutor, ReturnsAfterEachCheckpoint) {
  // Rank 0's CPU is 2 s behind after each save; the others wait in its collectives.
  TempScenario f(periodic_yaml(2048, 260, ", watchdog: 10min", "1%", kCheckpoint));
  EXPECT_EQ(expect_same_folder(f.path.string()), "hybrid");
  EXPECT_EQ(hybrid_returns(f.path.string()), 5);
}

TEST(HybridExecutor, ReturnsWithoutJitter) {
  // Every kernel of a step ends at one instant: the return's agenda is all ties.
  TempScenario f(periodic_yaml(256, 230, ", watchdog: 10min", "0%", kLossLog + kCheckpoint));
  EXPECT_EQ(expect_same_folder(f.path.string()), "hybrid");
  EXPECT_EQ(hybrid_returns(f.path.string()), 4);  // after steps 50, 100, 150 and 200
}

TEST(HybridExecutor, ReturnsUntilAFault) {
  // Back after steps 50 and 100; rank 3 crashes at step 130: from there on no step is uniform.
  TempScenario f(periodic_yaml(512, 160, ", watchdog: 10min", "1%", kCheckpoint) +
                 "faults:\n  - crash: {rank: 3, at_step: 130}\n");
  EXPECT_EQ(expect_same_folder(f.path.string()), "hybrid");
  EXPECT_EQ(hybrid_returns(f.path.string()), 2);
}

TEST(HybridExecutor, ReturnsAfterWatchdogChecks) {
  // A 20 s timeout: its checks, every 20 s or so of a 100 s run, are handed to
  // the event executor and the hybrid comes back after each.
  TempScenario f(periodic_yaml(512, 200, ", watchdog: 20s", "1%", kLossLog));
  EXPECT_EQ(expect_same_folder(f.path.string()), "hybrid");
  EXPECT_EQ(hybrid_returns(f.path.string()), 6);  // five checks and step 100 (step 200 is the last)
}

TEST(HybridExecutor, FoundingCaseAtFourThousandRanks) {
  const std::string file = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml";
  EXPECT_EQ(expect_same_folder(file, {"fleet.nodes=512", "parallel.dp=512", "job.steps=420"}), "hybrid");
}

TEST(HybridExecutor, SharedStartLongerThanTheQueue) {
  // Step 400's four shared ops before rank 0's extra all-reduce; with a launch
  // queue of 1 or 2 (a capacity of 2 or 3 items) the stretch runs only a
  // capacity of them, so that none ends before the handover.
  const std::string file = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml";
  for (const int queue : {1, 2}) {
    const std::vector<std::string> sets = {"fleet.nodes=128", "parallel.dp=128", "job.steps=410",
                                           "job.launch_queue=" + std::to_string(queue)};
    EXPECT_EQ(expect_same_folder(file, sets), "hybrid") << queue;
    Result<PreparedRun> p = prepare_run(file, sets);
    ASSERT_TRUE(p.ok());
    HybridSim sim(p->plan, *p->cost, {}, nullptr);
    RunResult r;
    ASSERT_TRUE(sim.run(&r));
    EXPECT_EQ(sim.shared_items(), queue + 1);
    EXPECT_EQ(r.hang.step, 400);
  }
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
  EXPECT_EQ(sim.shared_items(), 4);     // but every rank runs its four ops first
  EXPECT_EQ(r.outcome, Outcome::kHang);
  EXPECT_EQ(r.hang.step, 400);
  EXPECT_EQ(r.steps_completed, 399);
}

}  // namespace
}  // namespace fleetsim
