// Behaviour of the simulator's executor: matching by order, spinning, the
// watchdog, deadlock detection, faults, CPU/GPU asynchrony and determinism.
// Scenarios are small YAML texts so each test states its setup in one place.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "fleetsim/engine.h"
#include "sim/exec/event_executor.h"
#include "sim/io/scenario_loader.h"

namespace fleetsim {
namespace {

// Records what the engine reports, for assertions.
struct Capture final : Observer {
  std::vector<WorkRecord> enqueued, completed, timeouts;
  std::map<int, std::vector<int64_t>> compute_ns;  // rank -> durations in issue order
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> step_ends;  // rank -> (step, t)
  std::vector<std::pair<int, GpuState>> states;
  std::vector<int> dumps;
  std::vector<std::string> logs;
  void on_work_enqueued(const WorkRecord& w) override { enqueued.push_back(w); }
  void on_work_completed(const WorkRecord& w) override { completed.push_back(w); }
  void on_timeout(const WorkRecord& w, SimTime) override { timeouts.push_back(w); }
  void on_compute(int r, uint32_t, int64_t, SimTime b, SimTime e, bool cpu) override {
    if (!cpu) compute_ns[r].push_back((e - b).ns);
  }
  void on_step_end(int r, int64_t s, SimTime t) override { step_ends[r].emplace_back(s, t.ns); }
  void on_gpu_state(int r, SimTime, GpuState s, int64_t) override { states.emplace_back(r, s); }
  void on_dump(int r, SimTime) override { dumps.push_back(r); }
  void on_log(int, SimTime, std::string_view l) override { logs.emplace_back(l); }
};

// A 2-node x 2-GPU fleet (4 ranks, tp 2, dp 2) with `body` as the step program.
std::string fleet4(const std::string& job, const std::string& body, const std::string& extra = "") {
  return "name: t\nfleet: {system: custom, gpus_per_node: 2, nodes: 2}\nparallel: {tp: 2, dp: 2}\n"
         "job: {" + job + "}\nstep:\n" + body + extra;
}

struct Ran {
  Plan plan;
  RunResult result;
};

Ran run_text(const std::string& yaml, Capture* cap) {
  auto s = load_scenario_text(yaml, "test.yaml");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.errors().front().to_string());
  auto plan = compile_plan(*s);
  EXPECT_TRUE(plan.ok());
  const auto cost = make_alpha_beta_model(plan->scenario.fleet);
  std::vector<Observer*> obs;
  if (cap) obs.push_back(cap);
  Ran r{*plan, {}};
  r.result = run_simulation(r.plan, *cost, obs);
  return r;
}

const char* kStep =
    "  - compute: {name: fwd, time: 10ms}\n"
    "  - allreduce: {name: grads, group: dp, bytes: 1MiB}\n";

// A clean program completes every step on every rank.
TEST(FleetSim, CleanRunCompletes) {
  Capture cap;
  const Ran r = run_text(fleet4("steps: 5", kStep), &cap);
  EXPECT_EQ(r.result.outcome, Outcome::kCompleted);
  EXPECT_EQ(r.result.steps_completed, 5);
  EXPECT_EQ(cap.completed.size(), 4u * 5u);
}

// Collectives match by per-group order, never by name: differently named ops of
// the same type and size on different ranks complete together.
TEST(FleetSim, MatchingIsByOrderNotName) {
  const std::string body =
      "  - when: \"rank == 0\"\n    do:\n      - allreduce: {name: a, group: world, bytes: 4B}\n"
      "    else:\n      - allreduce: {name: b, group: world, bytes: 4B}\n";
  const Ran r = run_text(fleet4("steps: 3", body), nullptr);
  EXPECT_EQ(r.result.outcome, Outcome::kCompleted);
}

// Matched ops that differ in size never complete; the watchdog then fires.
TEST(FleetSim, MismatchedSizesNeverComplete) {
  const std::string body =
      "  - when: \"rank == 0\"\n    do:\n      - allreduce: {name: a, group: world, bytes: 8B}\n"
      "    else:\n      - allreduce: {name: a, group: world, bytes: 4B}\n";
  Capture cap;
  const Ran r = run_text(fleet4("steps: 3, watchdog: 1s", body), &cap);
  EXPECT_EQ(r.result.outcome, Outcome::kHang);
  EXPECT_EQ(r.result.hang.step, 1);
  EXPECT_TRUE(cap.completed.empty());
}

// The founding case in miniature: an extra collective on rank 0 hangs the job,
// and rank 0's world group has enqueued one collective more than anyone else.
TEST(FleetSim, ExtraCollectiveOnRankZeroHangs) {
  const std::string body = std::string(kStep) +
      "  - when: \"rank == 0 && step % 4 == 0\"\n    do:\n"
      "      - allreduce: {name: loss, group: world, bytes: 4B}\n      - log: \"loss {loss}\"\n";
  Capture cap;
  const Ran r = run_text(fleet4("steps: 10, watchdog: 10min", body), &cap);
  ASSERT_EQ(r.result.outcome, Outcome::kHang);
  EXPECT_EQ(r.result.hang.step, 4);
  EXPECT_EQ(r.result.steps_completed, 3);
  std::map<int, int> world;
  for (const WorkRecord& w : cap.enqueued)
    if (w.group == GroupKind::kWorld) ++world[w.rank];
  EXPECT_EQ(world[0], 1);
  EXPECT_EQ(world.count(1) + world.count(2) + world.count(3), 0u);
  for (const std::string& l : cap.logs)  // the value never arrives, so it is never printed
    EXPECT_EQ(l.find("loss"), std::string::npos) << l;
}

// The watchdog fires at the first 100 ms poll at or after enqueue + timeout,
// on the rank whose stuck collective was enqueued first.
TEST(FleetSim, WatchdogFiresTimeoutAfterEnqueue) {
  const std::string body = std::string(kStep) +
      "  - when: \"rank == 0 && step == 2\"\n    do:\n      - allreduce: {name: loss, group: world, bytes: 4B}\n";
  const Ran r = run_text(fleet4("steps: 4, watchdog: 10min", body), nullptr);
  ASSERT_EQ(r.result.outcome, Outcome::kHang);
  const int64_t deadline = r.result.hang.stuck_since.ns + Duration::minutes(10).ns;
  EXPECT_GE(r.result.hang.detected_at.ns, deadline);
  EXPECT_LT(r.result.hang.detected_at.ns, deadline + 100'000'000);
  EXPECT_EQ(r.result.hang.detected_at.ns % 100'000'000, 0);
}

// On a timeout every live rank dumps its flight recorder exactly once.
TEST(FleetSim, TimeoutMakesEveryRankDump) {
  const std::string body = std::string(kStep) +
      "  - when: \"rank == 0 && step == 2\"\n    do:\n      - allreduce: {name: loss, group: world, bytes: 4B}\n";
  Capture cap;
  run_text(fleet4("steps: 4, watchdog: 1min", body), &cap);
  std::sort(cap.dumps.begin(), cap.dumps.end());
  EXPECT_EQ(cap.dumps, (std::vector<int>{0, 1, 2, 3}));
}

// With the watchdog off, a stuck job is reported as a deadlock, never looped on.
TEST(FleetSim, WatchdogOffReportsDeadlock) {
  const std::string body = std::string(kStep) +
      "  - when: \"rank == 0 && step == 2\"\n    do:\n      - allreduce: {name: loss, group: world, bytes: 4B}\n";
  const Ran r = run_text(fleet4("steps: 4, watchdog: off", body), nullptr);
  EXPECT_EQ(r.result.outcome, Outcome::kDeadlock);
  EXPECT_EQ(r.result.stuck_step, 2);
}

// A rank waiting for an absent peer spins (GPU busy), it does not go idle.
TEST(FleetSim, WaitingRanksSpin) {
  const std::string extra = "faults:\n  - stall: {rank: 3, at_step: 2}\n";
  Capture cap;
  const Ran r = run_text(fleet4("steps: 4, watchdog: 1min", kStep, extra), &cap);
  ASSERT_EQ(r.result.outcome, Outcome::kHang);
  std::map<int, GpuState> last;
  for (auto [rank, s] : cap.states) last[rank] = s;
  EXPECT_EQ(last[1], GpuState::kSpin);   // rank 1 shares rank 3's dp group
  EXPECT_EQ(last[3], GpuState::kIdle);   // the stalled rank's GPU drained and idles
}

// A skipped collective shifts the culprit's sequence: shapes coincide, so the
// job runs on and hangs only at the last step, when the others issue one more.
TEST(FleetSim, SkipHangsAtTheTrailingCollective) {
  const std::string extra = "faults:\n  - skip: {rank: 1, op: grads, at_step: 2}\n";
  const Ran r = run_text(fleet4("steps: 5, watchdog: 1min", kStep, extra), nullptr);
  ASSERT_EQ(r.result.outcome, Outcome::kHang);
  EXPECT_EQ(r.result.hang.step, 5);
}

// A crashed rank ends the run as a crash once the launcher notices it.
TEST(FleetSim, CrashIsDetectedByTheLauncher) {
  const std::string extra = "faults:\n  - crash: {rank: 2, at_step: 3}\n";
  Capture cap;
  const Ran r = run_text(fleet4("steps: 5, crash_detect: 5s", kStep, extra), &cap);
  ASSERT_EQ(r.result.outcome, Outcome::kCrash);
  // A dead rank completes nothing after it died (a regression: a transfer in
  // flight at the crash used to complete on the emptied queue).
  for (const WorkRecord& w : cap.completed) {
    if (w.rank == 2) {
      EXPECT_LE(w.completed.ns, r.result.crash.at.ns);
    }
  }
  EXPECT_EQ(r.result.crash.rank, 2);
  EXPECT_EQ(r.result.crash.step, 3);
  EXPECT_EQ((r.result.crash.detected_at - r.result.crash.at).ns, Duration::seconds(5).ns);
}

// The CPU runs ahead of the GPU by at most the launch queue; a sync makes it wait.
TEST(FleetSim, CpuRunsAheadUntilSync) {
  const std::string ahead = "  - compute: {name: c, time: 1s}\n  - allreduce: {name: x, group: world, bytes: 4B}\n";
  Capture cap;
  run_text(fleet4("steps: 3, launch_queue: 8", ahead), &cap);
  // Without a sync, step 2's collective is enqueued long before step 1's compute ends.
  EXPECT_LT(cap.enqueued[4].created.ns, Duration::seconds(1).ns);
  Capture synced;
  run_text(fleet4("steps: 3, launch_queue: 8", ahead + "  - sync\n"), &synced);
  EXPECT_GE(synced.enqueued[4].created.ns, Duration::seconds(1).ns);
}

// A straggler's compute takes `slowdown` times longer in its step range only.
TEST(FleetSim, StragglerSlowsItsComputeInRange) {
  const std::string extra = "faults:\n  - straggler: {ranks: [2], slowdown: 1.5, from_step: 2, to_step: 3}\n";
  Capture cap;
  run_text(fleet4("steps: 4", kStep, extra), &cap);
  const auto& d = cap.compute_ns[2];
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(d[0], Duration::millis(10).ns);
  EXPECT_EQ(d[1], Duration::millis(15).ns);
  EXPECT_EQ(d[3], Duration::millis(10).ns);
}

// Draws are keyed by (seed, rank, purpose, step, op): adding a fault on one rank
// leaves every other rank's jittered durations unchanged.
TEST(FleetSim, FaultsDoNotShiftOtherRanksDraws) {
  const std::string body = "  - compute: {name: fwd, time: 10ms, jitter: 5%}\n"
                           "  - allreduce: {name: g, group: world, bytes: 1KiB}\n";
  Capture a, b;
  run_text(fleet4("steps: 6, seed: 9", body), &a);
  run_text(fleet4("steps: 6, seed: 9", body, "faults:\n  - straggler: {ranks: [3], slowdown: 2}\n"), &b);
  EXPECT_EQ(a.compute_ns[0], b.compute_ns[0]);
  EXPECT_EQ(a.compute_ns[1], b.compute_ns[1]);
  EXPECT_NE(a.compute_ns[3], b.compute_ns[3]);
  EXPECT_NE(a.compute_ns[0][0], a.compute_ns[0][1]);  // jitter is really applied
}

// Under gloo each call returns only once its op has completed (torch 2.15's
// blocking all_reduce, send and recv): the CPU no longer runs ahead of its work.
TEST(FleetSim, GlooCallsBlockTheCpu) {
  const std::string ahead = "  - compute: {name: c, time: 1s}\n  - allreduce: {name: x, group: world, bytes: 4B}\n";
  Capture nccl, gloo;
  run_text(fleet4("steps: 3, launch_queue: 8", ahead), &nccl);
  run_text(fleet4("steps: 3, launch_queue: 8, backend: gloo", ahead), &gloo);
  EXPECT_LT(nccl.enqueued[4].created.ns, Duration::seconds(1).ns);
  ASSERT_EQ(gloo.enqueued.size(), 4u * 3u);
  EXPECT_GE(gloo.enqueued[4].created.ns, Duration::seconds(1).ns);
  EXPECT_EQ(gloo.step_ends, nccl.step_ends);  // the GPU's timeline is the same
}

// The p2p skip: rank 0 skips a send, so at the last step rank 2's recv waits for
// a send that never comes. Under gloo the recv holds rank 2's Python thread, so
// it never enqueues the tp all-reduce after it (its peer rank 3 waits there
// alone); under NCCL the recv is queued on a stream and the CPU enqueues the
// all-reduce behind it.
TEST(FleetSim, GlooRecvHoldsTheCpuBeforeTheNextCollective) {
  const std::string yaml = std::string(
      "name: pp\nfleet: {system: custom, gpus_per_node: 2, nodes: 2}\nparallel: {tp: 2, pp: 2}\n"
      "job: {steps: 4, watchdog: 5s") + "BACKEND}\nstep:\n  - when: \"pp_rank == 0\"\n    do:\n"
      "      - compute: {name: f0, time: 5ms}\n      - send: {name: act, to: next, bytes: 1MiB}\n"
      "    else:\n      - recv: {name: act, from: prev, bytes: 1MiB}\n      - compute: {name: f1, time: 5ms}\n"
      "  - allreduce: {name: tp_sync, group: tp, bytes: 1MiB}\n"
      "faults:\n  - skip: {rank: 0, op: act, at_step: 2}\n";
  const auto last_tp_sync = [](const Capture& c, int rank) {
    int n = 0;
    for (const WorkRecord& w : c.enqueued) n += w.rank == rank && w.step == 4 && w.peer < 0;
    return n;
  };
  for (const bool gloo : {false, true}) {
    std::string text = yaml;
    text.replace(text.find("BACKEND"), 7, gloo ? ", backend: gloo" : "");
    Capture cap;
    const Ran r = run_text(text, &cap);
    EXPECT_EQ(r.result.outcome, Outcome::kHang) << gloo;
    EXPECT_EQ(r.result.hang.step, 4) << gloo;
    EXPECT_EQ(last_tp_sync(cap, 2), gloo ? 0 : 1) << gloo;
    EXPECT_EQ(last_tp_sync(cap, 3), 1) << gloo;
  }
}

// Pipeline send/recv between stages complete; a send past the last stage is an
// input error reported at the op, not a crash.
TEST(FleetSim, PipelineSendRecv) {
  const std::string yaml =
      "name: pp\nfleet: {system: custom, gpus_per_node: 2, nodes: 2}\nparallel: {tp: 1, dp: 2, pp: 2}\n"
      "job: {steps: 3}\nstep:\n  - when: \"pp_rank == 0\"\n    do:\n"
      "      - compute: {name: f0, time: 5ms}\n      - send: {name: act, to: next, bytes: 1MiB}\n"
      "    else:\n      - recv: {name: act, from: prev, bytes: 1MiB}\n      - compute: {name: f1, time: 5ms}\n";
  const Ran ok = run_text(yaml, nullptr);
  EXPECT_EQ(ok.result.outcome, Outcome::kCompleted);
  const std::string bad =
      "name: pp\nfleet: {system: custom, gpus_per_node: 2, nodes: 2}\nparallel: {tp: 1, dp: 2, pp: 2}\n"
      "job: {steps: 3}\nstep:\n  - send: {name: act, to: next, bytes: 1MiB}\n";
  const Ran err = run_text(bad, nullptr);
  ASSERT_EQ(err.result.errors.size(), 1u);
  EXPECT_NE(err.result.errors[0].message.find("next pipeline stage"), std::string::npos);
  EXPECT_EQ(err.result.errors[0].loc.line, 6);
}

// A division by zero in a `when` at run time is an input error with a location
// naming the rank and step (here the divisor depends on the step alone, so
// compile_plan cannot find it; tests/program/when_check_test.cc has those it can).
TEST(FleetSim, DivisionByZeroInWhenIsAnError) {
  const std::string body = "  - when: \"10 % (step - 2) == 0\"\n    do:\n      - compute: {name: c, time: 1ms}\n";
  const Ran r = run_text(fleet4("steps: 3", body), nullptr);
  ASSERT_FALSE(r.result.errors.empty());
  EXPECT_NE(r.result.errors[0].message.find("division by zero in `when` at rank 0, step 2"), std::string::npos)
      << r.result.errors[0].message;
  EXPECT_EQ(r.result.errors[0].loc.line, 6);
}

// Same plan and seed: the same callbacks in the same order (here: every
// collective's completion time).
TEST(FleetSim, Deterministic) {
  const std::string body = "  - compute: {name: fwd, time: 10ms, jitter: 3%}\n"
                           "  - allreduce: {name: g, group: dp, bytes: 1MiB}\n";
  Capture a, b;
  run_text(fleet4("steps: 20, seed: 5", body), &a);
  run_text(fleet4("steps: 20, seed: 5", body), &b);
  ASSERT_EQ(a.completed.size(), b.completed.size());
  for (size_t i = 0; i < a.completed.size(); ++i) {
    EXPECT_EQ(a.completed[i].rank, b.completed[i].rank);
    EXPECT_EQ(a.completed[i].completed.ns, b.completed[i].completed.ns);
  }
}

// Running the loop in pieces (run_until, step) gives what run() gives: the
// same result and the same callbacks in the same order; run_until(t) stops
// with the next event after t, and a finished run has no next event.
TEST(FleetSim, RunInPiecesMatchesRun) {
  auto s = load_scenario_text(fleet4("steps: 12, seed: 5, watchdog: 1s",
                                     "  - compute: {name: fwd, time: 10ms, jitter: 3%}\n"
                                     "  - allreduce: {name: g, group: dp, bytes: 1MiB}\n"
                                     "  - when: \"rank == 0 && step == 8\"\n    do:\n"
                                     "      - allreduce: {name: extra, group: world, bytes: 4B}\n"),
                              "test.yaml");
  ASSERT_TRUE(s.ok());
  auto plan = compile_plan(*s);
  ASSERT_TRUE(plan.ok());
  const auto cost = make_alpha_beta_model(plan->scenario.fleet);
  Capture whole, pieces;
  const RunResult a = run_simulation(*plan, *cost, {&whole});
  FleetSim sim(*plan, *cost, {&pieces});
  sim.start();
  for (int64_t t = 0; t < 5'000'000'000; t += 7'000'000) {
    sim.run_until(SimTime{t});
    EXPECT_GT(sim.peek().ns, t);
  }
  while (sim.step()) {
  }
  EXPECT_EQ(sim.peek(), SimTime::never());
  const RunResult b = sim.finish();
  EXPECT_EQ(a.outcome, Outcome::kHang);
  EXPECT_EQ(b.outcome, a.outcome);
  EXPECT_EQ(b.end, a.end);
  EXPECT_EQ(b.events, a.events);
  EXPECT_EQ(b.steps_completed, a.steps_completed);
  EXPECT_EQ(b.hang.step, a.hang.step);
  EXPECT_EQ(pieces.states, whole.states);
  EXPECT_EQ(pieces.step_ends, whole.step_ends);
  ASSERT_EQ(pieces.completed.size(), whole.completed.size());
  for (size_t i = 0; i < whole.completed.size(); ++i)
    EXPECT_EQ(pieces.completed[i].completed, whole.completed[i].completed);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

// A CPU-side store barrier holds every CPU until all ranks arrive, without
// involving GPUs; a rank stuck before it leaves the others idle, not spinning.
TEST(FleetSimStore, StoreBarrierBlocksCpusNotGpus) {
  const std::string body = "  - compute: {name: fwd, time: 10ms}\n"
                           "  - allreduce: {name: g, group: world, bytes: 1KiB}\n"
                           "  - sync\n"
                           "  - when: \"rank == 0 && step == 2\"\n    do:\n"
                           "      - cpu: {name: checkpoint, time: 1h}\n"
                           "  - store_barrier\n";
  Capture cap;
  const Ran r = run_text(fleet4("steps: 3, watchdog: 10min", body), &cap);
  EXPECT_EQ(r.result.outcome, Outcome::kCompleted);  // the checkpoint ends, so the barrier passes
  ASSERT_FALSE(cap.step_ends[1].empty());
  EXPECT_GE(cap.step_ends[1][1].second, Duration::minutes(60).ns);  // rank 1 waited for it
  const std::string extra = "faults:\n  - stall: {rank: 0, at_step: 2, op: checkpoint}\n";
  Capture stuck;
  const Ran s = run_text(fleet4("steps: 3, watchdog: 10min", body, extra), &stuck);
  EXPECT_EQ(s.result.outcome, Outcome::kDeadlock);  // no NCCL work pending: no watchdog can fire
  std::map<int, GpuState> last;
  for (auto [rank, st] : stuck.states) last[rank] = st;
  for (int rank = 0; rank < 4; ++rank) EXPECT_EQ(last[rank], GpuState::kIdle) << rank;
}

// Ranks that never start leave their peers spinning in the first collective.
TEST(FleetSimStore, AbsentRanksHangTheFirstCollective) {
  const std::string extra = "faults:\n  - absent: {ranks: [2, 3]}\n";
  Capture cap;
  const Ran r = run_text(fleet4("steps: 3, watchdog: 5min", kStep, extra), &cap);
  ASSERT_EQ(r.result.outcome, Outcome::kHang);
  EXPECT_EQ(r.result.hang.step, 1);
  for (const WorkRecord& w : cap.enqueued) EXPECT_LT(w.rank, 2);
  EXPECT_TRUE(std::find(cap.dumps.begin(), cap.dumps.end(), 2) == cap.dumps.end());
}

}  // namespace
}  // namespace fleetsim
