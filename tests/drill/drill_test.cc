// Tests for fleetsim drill: a scripted session from the page to the score over a
// real simulated incident, wrong answers, EOF as giving up, --random determinism,
// and evidence that reads like the real tools (nvidia-smi, py-spy).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include <unistd.h>

#include "tests/support/command.h"
#include "sim/drill/drill.h"
#include "sim/drill/drill_incident.h"

namespace fleetsim::drill {
namespace {

namespace fs = std::filesystem;

std::string scenario(const std::string& name) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".yaml";
}

std::string work_dir(const std::string& tag) {
  return (fs::temp_directory_path() / ("fleetsim_drill_test_" + tag + "_" + std::to_string(getpid()))).string();
}

std::string run_script(const std::string& name, const std::string& script) {
  DrillOptions opt;
  opt.scenario = scenario(name);
  opt.work_dir = work_dir(name);
  std::istringstream in(script);
  std::ostringstream out;
  Result<int> rc = run_drill(opt, in, out);
  EXPECT_TRUE(rc.ok());
  return out.str();
}

// The CLI with piped stdin: returns stdout and stderr.
std::string run_cli(const std::string& args, const std::string& script) {
  return fleetsim::test_support::run_command("printf '" + script + "' | " + std::string(FLEETSIM_BINARY) + " " + args).out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A scripted session on the step-400 hang runs from the page through evidence to a correct, timed score.
TEST(Drill, ScriptedSessionFromPageToScore) {
  const std::string out = run_script("step400_hang", "logs\nnvidia-smi\npy-spy dump all\nanswer 0 extra_collective\n");
  EXPECT_TRUE(has(out, "PagerDuty [P1] job pretrain-32g-")) << out;
  EXPECT_TRUE(has(out, "Watchdog caught collective operation timeout")) << out;
  EXPECT_TRUE(has(out, "[py-spy dump all: +5 min, incident clock 00:08]")) << out;
  EXPECT_TRUE(has(out, "who: correct (rank 0): 50/50\ncause: correct: 50/50")) << out;
  EXPECT_TRUE(has(out, "time: 8 min on the incident clock, the fastest isolation path 7 min: -1\n")) << out;
  EXPECT_TRUE(has(out, "score: 99/100")) << out;
  EXPECT_TRUE(has(out, "4. Stacks")) << out;
  EXPECT_TRUE(has(out, "<- isolates it")) << out;
}

// A wrong rank or cause is scored as wrong and the real root cause is shown.
TEST(Drill, WrongAnswerIsScoredWrong) {
  const std::string out = run_script("missing_rank", "nvidia-smi\nanswer 4 extra_collective\n");
  EXPECT_TRUE(has(out, "who: wrong: 0 of the 1 ranks to blame, and 1 not to blame: 50 x 0/2 = 0/50")) << out;
  EXPECT_TRUE(has(out, "cause: wrong: 0/50")) << out;
  EXPECT_TRUE(has(out, "score: 0/100")) << out;
  EXPECT_TRUE(has(out, "root cause: rank 5, rank_stalled")) << out;
}

// EOF on stdin ends the drill cleanly as "gave up".
TEST(Drill, EofGivesUp) {
  const std::string out = run_script("crash_rank", "logs\n");
  EXPECT_TRUE(has(out, "result: gave up after 2 min")) << out;
  EXPECT_TRUE(has(out, "root cause: rank 9, rank_crashed")) << out;
}

// nvidia-smi shows 100% on spinning ranks and 0% on the stalled one.
TEST(DrillEvidence, NvidiaSmiShowsSpinningAndIdleRanks) {
  Result<Incident> inc = build_incident(scenario("missing_rank"), work_dir("smi"));
  ASSERT_TRUE(inc.ok());
  const std::string node0 = render_nvidia_smi(*inc, 0);
  fs::remove_all(work_dir("smi"));
  std::istringstream lines(node0);
  std::vector<std::string> util_lines;
  for (std::string l; std::getline(lines, l);) {
    if (has(l, "MiB /")) util_lines.push_back(l);
  }
  ASSERT_EQ(util_lines.size(), 8u) << node0;
  EXPECT_TRUE(has(util_lines[5], "  0%")) << util_lines[5];  // rank 5, stalled in its data loader
  EXPECT_TRUE(has(util_lines[4], "100%")) << util_lines[4];  // rank 4 spins in NCCL
}

// py-spy of rank 0 in step400 shows the `when` line and the collective's torch frame.
TEST(DrillEvidence, PySpyShowsWhenLineAndAllReduce) {
  Result<Incident> inc = build_incident(scenario("step400_hang"), work_dir("pyspy"));
  ASSERT_TRUE(inc.ok());
  const std::string rank0 = render_py_spy(*inc, 0);
  const std::string rank1 = render_py_spy(*inc, 1);
  fs::remove_all(work_dir("pyspy"));
  EXPECT_TRUE(has(rank0, "when rank == 0 && step % 400 == 0 (train.py:")) << rank0;
  EXPECT_TRUE(has(rank0, "step: 400")) << rank0;
  EXPECT_TRUE(has(rank0, "loss: <Tensor from dist.all_reduce(group=world), not ready>")) << rank0;
  EXPECT_FALSE(has(rank1, "when rank == 0")) << rank1;
  EXPECT_TRUE(has(rank1, "all_reduce (torch/distributed/distributed_c10d.py")) << rank1;
}

// ncclras reports different op counts on the skip incident's dp communicator, and a stuck gap on the second query.
TEST(DrillEvidence, NcclrasShowsOpCountGap) {
  Result<Incident> inc = build_incident(scenario("stalled_cpu"), work_dir("ras"));
  ASSERT_TRUE(inc.ok());
  const std::string first = render_ncclras(*inc, 1);
  const std::string second = render_ncclras(*inc, 2);
  fs::remove_all(work_dir("ras"));
  EXPECT_TRUE(has(first, "Communicator ranks have different collective operation counts")) << first;
  EXPECT_TRUE(has(first, ": rank 13")) << first;
  EXPECT_TRUE(has(second, "the gap does not move")) << second;
}

// nccl-tests on a node pair crossing the remote-NUMA NIC reads slow; a healthy pair and a single node
// (NVLink only) read healthy; bisect reruns both halves and only the one with the bad node is slow.
TEST(DrillEvidence, NcclTestsOnNodePairsFindTheSlowNetwork) {
  Result<Incident> inc = build_incident(scenario("nic_numa_mismatch"), work_dir("nccltests"));
  ASSERT_TRUE(inc.ok());
  const std::string single = render_nccl_tests(*inc, 1);
  const std::string healthy = render_nccl_tests(*inc, 0, 1);
  const std::string slow = render_nccl_tests(*inc, 2, 3);
  const std::string bisect = render_bisect(*inc);
  fs::remove_all(work_dir("nccltests"));
  EXPECT_TRUE(has(single, "this test crosses no NIC")) << single;
  EXPECT_TRUE(has(healthy, "mpirun -np 16 -H node0:8,node1:8 all_reduce_perf")) << healthy;
  EXPECT_TRUE(has(healthy, "the network between these nodes is healthy")) << healthy;
  EXPECT_TRUE(has(slow, "of the") && has(slow, "on node2 or node3 is slow")) << slow;
  EXPECT_TRUE(has(bisect, "reran as two half jobs")) << bisect;
  std::istringstream lines(bisect);
  std::string first_half, second_half;
  for (std::string l; std::getline(lines, l);) {
    if (has(l, "nodes 0-1:")) first_half = l;
    if (has(l, "nodes 2-3:")) second_half = l;
  }
  EXPECT_FALSE(has(first_half, "reproduces")) << bisect;
  EXPECT_TRUE(has(second_half, "reproduces")) << bisect;
  EXPECT_TRUE(has(bisect, "one half reproduces: the cause is hardware in that half")) << bisect;
}

// Bisect reruns the halves as jobs of their own: the step-400 bug follows the program
// (rank 0 exists in both halves, so both hang at step 400); a stalled rank 5 only
// exists in the first half.
TEST(DrillEvidence, BisectRerunsBothHalves) {
  Result<Incident> bug = build_incident(scenario("step400_hang"), work_dir("bisect_bug"));
  ASSERT_TRUE(bug.ok());
  const std::string both = render_bisect(*bug);
  fs::remove_all(work_dir("bisect_bug"));
  EXPECT_TRUE(has(both, "nodes 0-1: hangs at step 400  <- reproduces")) << both;
  EXPECT_TRUE(has(both, "nodes 2-3: hangs at step 400  <- reproduces")) << both;
  EXPECT_TRUE(has(both, "both halves reproduce")) << both;

  Result<Incident> stall = build_incident(scenario("missing_rank"), work_dir("bisect_stall"));
  ASSERT_TRUE(stall.ok());
  const std::string one = render_bisect(*stall);
  fs::remove_all(work_dir("bisect_stall"));
  EXPECT_TRUE(has(one, "nodes 0-1: hangs at step 250  <- reproduces")) << one;
  EXPECT_TRUE(has(one, "nodes 2-3: completes\n")) << one;
}

// The library holds at least eight incidents, and --random with the same seed picks the same one.
TEST(DrillCli, RandomIsDeterministicAndDrawsFromEightIncidents) {
  const std::vector<std::string> incidents = list_incidents(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios");
  EXPECT_GE(incidents.size(), 8u);
  EXPECT_EQ(pick_incident(incidents, 7), pick_incident(incidents, 7));
  const std::string args = "drill --random --seed 3 --scenarios " + std::string(FLEETSIM_SOURCE_DIR) + "/scenarios";
  const std::string a = run_cli(args, "steps\\nanswer 0 straggler\\n");
  const std::string b = run_cli(args, "steps\\nanswer 0 straggler\\n");
  EXPECT_EQ(a, b);
  EXPECT_TRUE(has(a, "$ steps")) << a;
  EXPECT_TRUE(has(a, "=== Score ===")) << a;
}

}  // namespace
}  // namespace fleetsim::drill
