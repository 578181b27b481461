// The lockstep executor: which plans it takes, and that on those it produces
// byte-identical steps.csv and the same straggler evidence as the event
// executor (FleetSim), including under every compute-time fault and jitter law.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fleetsim/cost_model.h"
#include "sim/io/scenario_loader.h"
#include "sim/exec/lockstep_executor.h"
#include "sim/observe/straggler_stats.h"
#include "sim/run/run.h"
#include "tests/support/files.h"

namespace fs = std::filesystem;

namespace fleetsim {
namespace {

using test_support::slurp;

Plan plan_of(const std::string& yaml) {
  auto s = load_scenario_text(yaml, "lockstep.yaml");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.errors().front().to_string());
  auto p = compile_plan(*s);
  EXPECT_TRUE(p.ok());
  return *p;
}

// 16 ranks on 2 nodes (tp 4, dp 4): tp and dp collectives, a step-dependent
// world all-reduce, gamma and lognormal jitter, and all four compute-time faults.
const char* kEligible = R"(name: lockstep-eq
fleet: {system: custom, gpus_per_node: 8, nodes: 2}
parallel: {tp: 4, dp: 4}
job: {steps: 40, seed: 7}
step:
  - compute: {name: fwd, time: 20ms, jitter: 3%}
  - allreduce: {name: act, group: tp, bytes: 8MiB}
  - compute: {name: bwd, time: 30ms, jitter: {dist: gamma, cv: 4%}}
  - compute: {name: opt, time: 5ms, jitter: {dist: lognormal, cv: 10%}}
  - allreduce: {name: grads, group: dp, bytes: 64MiB}
  - when: "step % 5 == 0"
    do:
      - allreduce: {name: loss, group: world, bytes: 4B}
      - sync
faults:
  - straggler: {ranks: [5], slowdown: 1.3, from_step: 10}
  - intermittent: {probability: 5%, slowdown: {mean: 1.5, dist: lognormal, cv: 20%}}
  - pause: {every: 7, time: 15ms, what: gc, phase: staggered}
  - throttle: {ranks: [9, 10], schedule: [{from_step: 20, factor: 1.2}, {from_step: 30, factor: 1.05}]}
)";

struct Recorded {
  std::string steps_csv;
  nlohmann::json summary;
  std::string executor;
};

Recorded record(const Plan& plan, bool lockstep, const std::string& tag) {
  const fs::path dir = fs::temp_directory_path() / ("fleetsim_lockstep_" + tag + "_" + std::to_string(::getpid()));
  PreparedRun prepared = prepare_run(plan, make_alpha_beta_model(plan.scenario.fleet));
  RunOptions opts;
  opts.out_dir = dir.string();
  opts.outputs = std::vector<std::string>{"summary", "steps"};
  opts.executor = lockstep ? "lockstep" : "event";
  auto run = execute(prepared, opts);
  EXPECT_TRUE(run.ok());
  Recorded r{slurp(dir / "steps.csv"), nlohmann::json::parse(slurp(dir / "summary.json")), run->executor};
  fs::remove_all(dir);
  return r;
}

// An eligible plan gives byte-identical steps.csv and identical straggler
// evidence (tax, slowest counts, per-rank waits and compute) under both executors.
TEST(LockstepSim, MatchesEventExecutorToTheNanosecond) {
  const Plan plan = plan_of(kEligible);
  ASSERT_TRUE(lockstep_eligible(plan).ok) << lockstep_eligible(plan).why;
  const Recorded ev = record(plan, false, "ev"), ls = record(plan, true, "ls");
  EXPECT_EQ(ev.executor, "event");
  EXPECT_EQ(ls.executor, "lockstep");
  EXPECT_EQ(ev.steps_csv, ls.steps_csv);
  for (const char* key : {"outcome", "steps_completed", "sim_end_s", "step_time_s", "straggler_tax", "straggler"})
    EXPECT_EQ(ev.summary[key], ls.summary[key]) << key;
  EXPECT_GT(ev.summary["straggler_tax"].get<double>(), 0.0);
}

// Jitter-free runs agree too, and their tax is exactly zero.
TEST(LockstepSim, JitterFreeRunHasZeroTax) {
  const Plan plan = jitter_free(plan_of(kEligible));
  const Recorded ev = record(plan, false, "ev0"), ls = record(plan, true, "ls0");
  EXPECT_EQ(ev.steps_csv, ls.steps_csv);
  EXPECT_DOUBLE_EQ(ls.summary["straggler_tax"].get<double>(), 0.0);
}

// Under job.backend gloo each call blocks its CPU until its op completes; on an
// eligible plan that moves only enqueue times (the next op starts when the
// collective ends either way), so lockstep still matches the event executor.
TEST(LockstepSim, MatchesEventExecutorUnderGloo) {
  std::string yaml = kEligible;
  yaml.replace(yaml.find("seed: 7}"), 8, "seed: 7, backend: gloo}");
  const Plan plan = plan_of(yaml);
  ASSERT_EQ(plan.scenario.job.backend, CommBackend::kGloo);
  ASSERT_TRUE(lockstep_eligible(plan).ok) << lockstep_eligible(plan).why;
  const Recorded ev = record(plan, false, "evg"), ls = record(plan, true, "lsg");
  EXPECT_EQ(ev.steps_csv, ls.steps_csv);
  EXPECT_EQ(ev.steps_csv, record(plan_of(kEligible), false, "evn").steps_csv);
}

// Ops and faults that can make ranks interact between collectives, or whose
// `when` differs by rank, send the plan to the event executor, with the reason.
TEST(LockstepSim, IneligiblePlansSayWhy) {
  const std::string head = "name: t\nfleet: {system: custom, gpus_per_node: 2, nodes: 2}\njob: {steps: 3}\nstep:\n";
  const std::pair<std::string, std::string> cases[] = {
      {"  - compute: {time: 1ms}\n  - log: \"hi\"\n", "log"},
      {"  - cpu: {name: loader, time: 1ms}\n  - compute: {time: 1ms}\n", "loader"},
      {"  - when: \"rank == 0\"\n    do:\n      - compute: {time: 1ms}\n", "rank"},
      {"  - compute: {time: 1ms}\n  - allreduce: {name: g, bytes: 1MiB}\nfaults:\n  - crash: {rank: 1, at_step: 2}\n",
       "crash"},
      // A degraded link gives some group instances their own collective time.
      {"  - compute: {time: 1ms}\n  - allreduce: {name: g, bytes: 1MiB}\nfaults:\n  - link: {node: 1, nic: 0, bandwidth: 25%}\n",
       "link"},
  };
  for (const auto& [body, why] : cases) {
    const Eligibility e = lockstep_eligible(plan_of(head + body));
    EXPECT_FALSE(e.ok) << body;
    EXPECT_NE(e.why.find(why), std::string::npos) << e.why;
  }
}

// Runs a 4-rank plan (`job`, `step`, and rank 3 a straggler with the fields in
// `straggler`) asking for lockstep, and expects the fallback to the event
// executor and the hang it reports.
void expect_watchdog_fallback(const std::string& job, const std::string& step, const std::string& straggler,
                              const std::string& tag) {
  const Plan plan = plan_of("name: t\nfleet: {system: custom, gpus_per_node: 2, nodes: 2}\njob: " + job +
                            "\nstep:\n" + step + "faults:\n  - straggler: {ranks: [3], " + straggler + "}\n");
  ASSERT_TRUE(lockstep_eligible(plan).ok);
  const Recorded r = record(plan, true, tag);
  EXPECT_EQ(r.executor, "event");
  EXPECT_EQ(r.summary["outcome"], "hang");
}

// A collective that waits past the watchdog timeout makes the lockstep run give
// up; the event executor then reports the hang the real job would have.
TEST(LockstepSim, WatchdogRiskFallsBackToEvents) {
  expect_watchdog_fallback("{steps: 4, watchdog: 1s}",
                           "  - compute: {time: 500ms}\n  - allreduce: {name: g, bytes: 1MiB}\n",
                           "slowdown: 5, from_step: 2", "wd");
}

// A step that ends on a compute op: the compute loop leaves the clocks' low
// end unknown and end_step finds it, so the watchdog ring still holds each
// step's earliest end. Rank 3 computes 15 s from step 10, which a 10 s
// watchdog times out; with no low end recorded the run would finish in lockstep.
TEST(LockstepSim, WatchdogRiskAfterAStepEndingInCompute) {
  expect_watchdog_fallback("{steps: 14, watchdog: 10s}",
                           "  - allreduce: {name: g, bytes: 1MiB}\n  - compute: {time: 500ms}\n",
                           "slowdown: 30, from_step: 10", "wdc");
}

// The bulk path's least wait: lowest rank on ties, whichever of its four lanes
// (rank mod 4, the tail in lane 0) holds it; totals add up; a step whose waits
// are all INT64_MAX names no one, as the rank-by-rank path would not.
TEST(LockstepSim, StragglerStatsBulkLeastWaitTakesTheLowestRank) {
  const Plan plan = plan_of(
      "name: t\nfleet: {system: custom, gpus_per_node: 7, nodes: 1}\njob: {steps: 3}\nstep:\n"
      "  - compute: {time: 1ms}\n  - allreduce: {name: g, bytes: 1MiB}\n");
  ASSERT_EQ(plan.ranks, 7);
  StragglerStats stats(plan);
  const std::vector<int64_t> compute{1, 2, 3, 4, 5, 6, 7};
  stats.on_step_accounted(1, compute, std::vector<int64_t>{9, 8, 3, 7, 6, 3, 3});   // 3 at ranks 2, 5, 6
  stats.on_step_accounted(2, compute, std::vector<int64_t>{9, 8, 4, 7, 6, 5, 1});   // the tail's rank 6 alone
  EXPECT_EQ(stats.slowest_counts(2), (std::vector<int64_t>{0, 0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(stats.compute_ns(), (std::vector<int64_t>{2, 4, 6, 8, 10, 12, 14}));
  EXPECT_EQ(stats.wait_ns(), (std::vector<int64_t>{18, 16, 7, 14, 12, 8, 4}));
  StragglerStats none(plan);
  none.on_step_accounted(1, compute, std::vector<int64_t>(7, INT64_MAX));
  EXPECT_EQ(none.slowest_counts(1), std::vector<int64_t>(7, 0));
}

// The executor reserves well under 200 bytes per rank at 16k ranks.
TEST(LockstepSim, BytesPerRankAreBounded) {
  const Plan plan = plan_of(
      "name: t\nfleet: {system: dgx-h100, nodes: 2048}\njob: {steps: 1}\nstep:\n"
      "  - compute: {time: 1ms, jitter: 2%}\n  - allreduce: {name: g, bytes: 1MiB}\n");
  const auto cost = make_alpha_beta_model(plan.scenario.fleet);
  StragglerStats stats(plan);
  LockstepSim sim(plan, *cost, {}, &stats);
  EXPECT_LT(sim.bytes_per_rank(), 200.0);
}

}  // namespace
}  // namespace fleetsim
