// Tests for the drill's truthful path and fair scoring: every incident --random
// draws from is replayed along its fastest isolation path through the drill's own
// commands (piped stdin), each cited fact must appear in what was printed, and the
// model answer scores 100; golden transcripts of four such drills; the answer
// grammar, re-prompts at no cost, partial credit, pipeline stacks, pages, and the
// closing lesson that names the op that blocked.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "sim/drill/drill.h"
#include "sim/drill/drill_incident.h"
#include "tests/golden/golden_diff.h"
#include "tests/support/files.h"
#include "tests/support/scenarios.h"

namespace fleetsim::drill {
namespace {

namespace fs = std::filesystem;

const std::string kSrc = FLEETSIM_SOURCE_DIR;

std::string work_dir(const std::string& tag) {
  return (fs::temp_directory_path() / ("fleetsim_drill_path_" + tag + "_" + std::to_string(getpid()))).string();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string play(const std::string& file, const std::string& script) {
  DrillOptions opt;
  opt.scenario = file;
  opt.work_dir = work_dir(fs::path(file).stem().string());
  std::istringstream in(script);
  std::ostringstream out;
  EXPECT_TRUE(run_drill(opt, in, out).ok()) << file;
  return out.str();
}

// The fastest path's commands, then the model answer.
std::string path_script(const Incident& inc) {
  std::string script;
  for (const PathStep& s : fastest_path(inc)) script += s.command + "\n";
  return script + "answer " + model_answer(inc) + "\n";
}

std::string scenario(const std::string& name) { return kSrc + "/scenarios/" + name + ".yaml"; }

Incident incident(const std::string& file) {
  Result<Incident> inc = build_incident(file, work_dir("inc"));
  fs::remove_all(work_dir("inc"));
  EXPECT_TRUE(inc.ok()) << file;
  return std::move(*inc);
}

// Every incident in the pool is winnable at 100 along its fastest path, and every
// fact the path cites was printed by the commands the player ran, before the score.
TEST(DrillPath, EveryIncidentScoresFullAlongItsFastestPathCitingOnlyWhatWasPrinted) {
  const std::vector<std::string> pool = list_incidents(kSrc + "/scenarios");
  ASSERT_GE(pool.size(), 19u);
  for (const std::string& file : pool) {
    const Incident inc = incident(file);
    const std::vector<PathStep> path = fastest_path(inc);
    const std::string out = play(file, path_script(inc));
    const std::string played = out.substr(0, out.find("=== Score ==="));
    EXPECT_TRUE(has(out, "score: 100/100")) << file << "\n" << out;
    bool isolates = false;
    for (const PathStep& s : path) {
      isolates |= s.isolates;
      EXPECT_TRUE(has(played, "$ " + s.command + "\n")) << file << ": " << s.command;
      if (s.isolates) {
        EXPECT_FALSE(s.facts.empty()) << file << ": " << s.command << " cites nothing";
      }
      for (const std::string& f : s.facts) EXPECT_TRUE(has(played, f)) << file << ": not printed: " << f;
      // A hint names the command's form, never the rank or node that is the answer.
      EXPECT_EQ(s.hint_command.find_first_of("0123456789"), std::string::npos) << s.hint_command;
    }
    EXPECT_TRUE(isolates) << file << ": no step isolates the culprit";
  }
}

// The path and hints use the isolation order's step names, in its order.
TEST(DrillPath, StepsAreNamedAndOrderedAsTheIsolationOrder) {
  const Incident inc = incident(scenario("missing_rank"));
  const std::vector<PathStep> path = fastest_path(inc);
  for (size_t i = 1; i < path.size(); ++i) EXPECT_LT(path[i - 1].step, path[i].step);
  const std::string out = play(scenario("missing_rank"), "logs\nhint\nquit\n");
  EXPECT_TRUE(has(out, "hint: isolation step 2, Per-rank utilization: `nvidia-smi`")) << out;
  EXPECT_TRUE(has(out, "  2. Per-rank utilization")) << out;
  EXPECT_TRUE(has(out, "  4. Stacks")) << out;
}

// Golden transcripts of four scripted drills along the fastest path (tests/drill/golden;
// FLEETSIM_UPDATE_GOLDEN=1 rewrites them).
TEST(DrillPath, GoldenTranscriptsOfFourFastestPathDrills) {
  const char* update = std::getenv("FLEETSIM_UPDATE_GOLDEN");
  for (const std::string name : {"pp_skip_recv", "slow_nic", "crash_rank", "gc_pauses"}) {
    const Incident inc = incident(scenario(name));
    const std::string script = path_script(inc);
    std::string out = play(scenario(name), script);
    for (size_t at; (at = out.find(kSrc + "/")) != std::string::npos;) out.erase(at, kSrc.size() + 1);
    EXPECT_TRUE(has(out, "score: 100/100")) << out;
    const fs::path golden = fs::path(kSrc) / "tests" / "drill" / "golden" / (name + ".txt");
    const std::string text = "# fleetsim drill scenarios/" + name + ".yaml, stdin:\n# " +
                             std::regex_replace(script, std::regex("\n(?!$)"), "\n# ") + out;
    if (update && *update && std::string(update) != "0") {
      fs::create_directories(golden.parent_path());
      std::ofstream(golden, std::ios::binary) << text;
      continue;
    }
    std::ifstream in(golden, std::ios::binary);
    ASSERT_TRUE(in) << golden << " missing; run with FLEETSIM_UPDATE_GOLDEN=1";
    std::ostringstream want;
    want << in.rdbuf();
    EXPECT_EQ(want.str(), text) << fleetsim::test_support::short_diff(want.str(), text, "golden", "now");
  }
}

// Malformed answers and commands with missing or bad arguments ask again and cost nothing.
TEST(DrillScore, MalformedInputRepromptsAtNoCost) {
  const std::string out = play(scenario("crash_rank"),
                               "answer 9\nanswer\nanswer 99 rank_crashed\nanswer node 9 rank_crashed\n"
                               "answer 9 crashed\npy-spy\npy-spy dump\npy-spy dump 77\nlogs x\nnvidia-smi 4\n"
                               "nccl-tests\nnccl-tests 1 1\nbogus\nlogs\nanswer 9 rank_crashed\n");
  EXPECT_FALSE(has(out, "+0 min")) << out;
  EXPECT_TRUE(has(out, "py-spy: which rank? `py-spy dump RANK` (2 min) or `py-spy dump all` (5 min); nothing charged"))
      << out;
  EXPECT_TRUE(has(out, "py-spy: no rank 77 in this job (ranks 0-31); nothing charged")) << out;
  EXPECT_TRUE(has(out, "nvidia-smi: no node 4 in this job (nodes 0-3); nothing charged")) << out;
  EXPECT_TRUE(has(out, "no node 9 in this job (nodes 0-3); nothing charged, try again")) << out;
  EXPECT_TRUE(has(out, "`crashed` is not a cause")) << out;
  EXPECT_TRUE(has(out, "[logs: +2 min, incident clock 00:02]")) << out;
  EXPECT_TRUE(has(out, "score: 100/100")) << out;
}

// Groups of ranks and culprit-free causes can be answered; partial credit is explained.
TEST(DrillScore, AnswerGrammarCoversGroupsNoCulpritAndPartialCredit) {
  EXPECT_TRUE(has(play(scenario("slow_nic"), "fr dump\nanswer dp 19 slow_link\n"), "score: 100/100"));
  EXPECT_TRUE(has(play(scenario("thermal_throttle"), "answer node 1 straggler\n"), "who: correct (rank 8-15)"));
  EXPECT_TRUE(has(play(scenario("gc_pauses"), "answer rotating_straggler\n"), "who: correct (no rank): 50/50"));
  EXPECT_TRUE(has(play(scenario("gpudirect_off"), "answer - slow_link\n"), "cause: correct: 50/50"));
  const std::string part = play(scenario("slow_nic"), "answer 19 straggler\n");
  EXPECT_TRUE(has(part, "who: partly right: 1 of the 4 ranks to blame, and 0 not to blame: 50 x 1/4 = 13/50")) << part;
  EXPECT_TRUE(has(part, "cause: close: the right family (a slow run), not the cause: 20/50")) << part;
  EXPECT_TRUE(has(part, "score: 33/100")) << part;
}

// Pipeline stacks: rank 4 is stuck in its step-40 send; stage 1 finished and does not
// show a send it never runs; recv frames name the `else` branch, not the `if`.
TEST(DrillEvidence, PipelineStacksAreTrue) {
  const Incident inc = incident(scenario("pp_skip_recv"));
  const std::string r4 = py_spy_stack(inc, 4), r12 = py_spy_stack(inc, 12);
  EXPECT_TRUE(has(r4, "act_send (train.py:")) << r4;
  EXPECT_TRUE(has(r4, "step: 40")) << r4;
  EXPECT_FALSE(has(r12, "act_send")) << r12;
  EXPECT_FALSE(has(r12, "when pp_rank == 0")) << r12;
  for (const auto& [rank, d] : inc.record.dumps) {
    for (const auto& e : d.entries)
      if (e.op_name() == "act_recv") {
        ASSERT_EQ(e.when(), "not (pp_rank == 0)") << rank;
      }
  }
}

// A dead rank's telemetry reads 0% from its death on, and no rank's step goes back
// (a pp=4 job whose rank 19 dies at step 30).
TEST(DrillEvidence, ADeadRankReadsIdleAndStepsNeverGoBack) {
  const std::string yaml = test_support::write_temp(
      "fleetsim_drill_pp4", ".yaml",
      "name: pp4-crash\nfleet: {system: dgx-h100, nodes: 4}\nparallel: {tp: 8, pp: 4}\n"
      "job: {steps: 40, seed: 3, watchdog: 2min, telemetry_period: 1s}\nstep:\n"
      "  - when: \"pp_rank > 0\"\n    do:\n      - recv: {name: act_recv, from: prev, bytes: 64MiB}\n"
      "  - compute: {name: forward, time: 50ms, jitter: 1%}\n"
      "  - when: \"pp_rank < 3\"\n    do:\n      - send: {name: act_send, to: next, bytes: 64MiB}\n"
      "  - allreduce: {name: tp_sync, group: tp, bytes: 16MiB}\n"
      "faults:\n  - crash: {rank: 19, at_step: 30}\nexpect: {cause: rank_crashed, culprit: [19]}\n");
  const Incident inc = incident(yaml);
  fs::remove(yaml);
  const double died = inc.result.crash.at.to_seconds();
  std::map<int, int64_t> step;
  int after = 0;
  for (const auto& row : inc.record.telemetry) {
    EXPECT_GE(row.step, step[row.rank]) << "rank " << row.rank << " at " << row.time_s;
    step[row.rank] = row.step;
    if (row.rank == 19 && row.time_s > died + 1) {
      ++after;
      EXPECT_EQ(row.gpu_util, 0) << row.time_s;
    }
  }
  EXPECT_GT(after, 0);
  EXPECT_TRUE(has(render_logs(inc, -1), "rank      : 19 (local_rank: 3)"));
}

// docs/drill.md lists every incident --random draws from, and no culprit table.
TEST(DrillDocs, ListEveryIncidentWithoutAnswers) {
  std::ifstream in(kSrc + "/docs/drill.md");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const std::string incidents = doc.substr(doc.find("## Incidents"));
  for (const std::string& file : list_incidents(kSrc + "/scenarios"))
    EXPECT_TRUE(has(incidents, "`" + fs::path(file).stem().string() + "`")) << file;
  EXPECT_FALSE(has(doc, "| culprit |")) << "docs/drill.md lists culprits";
}

// Pages never read a throughput drop of 0% or less.
TEST(DrillEvidence, PagesNeverReadANonPositiveDrop) {
  for (const std::string& file : list_incidents(kSrc + "/scenarios")) {
    const std::string page = render_page(incident(file));
    EXPECT_FALSE(has(page, "down 0%") || has(page, "down -")) << page;
  }
}

// The closing explanation names the op that blocked and its length against the watchdog.
TEST(DrillLesson, NamesTheBlockingOpAgainstTheWatchdog) {
  const std::string sync = play(scenario("step400_hang"), "quit\n");
  EXPECT_TRUE(has(sync, "What blocked: rank 0 is in `log` (train.py:26, under `rank == 0 && step % 400 == 0`) at "
                        "step 400, a call that waits on its peers")) << sync;
  EXPECT_TRUE(has(sync, "until the 10-minute watchdog fires")) << sync;
  const std::string idle = play(scenario("all_idle_checkpoint"), "quit\n");
  EXPECT_TRUE(has(idle, "What blocked: rank 0's CPU entered `save_checkpoint` (train.py:")) << idle;
  EXPECT_TRUE(has(idle, "under `rank == 0`) at step 40 and never returned, against the 2-minute watchdog")) << idle;
  EXPECT_TRUE(has(idle, "`checkpoint_barrier`, a TCPStore barrier")) << idle;

  const std::string yaml = test_support::write_temp(
      "fleetsim_drill_long_save", ".yaml",
      test_support::long_save_yaml() + "expect: {cause: rank_stalled, culprit: [0]}\n");
  const std::string slow = play(yaml, "quit\n");
  fs::remove(yaml);
  EXPECT_TRUE(has(slow, "What blocked: `save_checkpoint` (train.py:")) << slow;
  EXPECT_TRUE(has(slow, "under `rank == 0 && step == 2`) takes 12 min, longer than the 10-minute watchdog")) << slow;
  EXPECT_TRUE(has(slow, "in `after_save`")) << slow;
}

}  // namespace
}  // namespace fleetsim::drill
