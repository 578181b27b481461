// The event executor's loop allocates nothing in steady state. A healthy job
// (CPU ops, jittered compute, tp/dp/world collectives, pipeline send/recv, a
// sync, telemetry ticks, the watchdog armed; no log lines, whose formatting may
// allocate) runs with an observer attached until its queues and heaps have
// reached their high-water marks; running many more steps then performs no heap
// allocation, under each collective model.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>

#include "sim/exec/event_executor.h"
#include "sim/io/scenario_loader.h"
#include "sim/model/cost_model_factory.h"
#include "tests/support/alloc_counter.h"

namespace fleetsim {
namespace {

// 16 ranks (tp 4 x dp 2 x pp 2) on 2 nodes; each step is about 60 ms.
std::string healthy_job(const std::string& collective_model) {
  return "name: alloc\nfleet: {system: dgx-h100, nodes: 2}\nparallel: {tp: 4, dp: 2, pp: 2}\n"
         "job: {steps: 200, seed: 3, telemetry_period: 10ms, launch_queue: 2, collective_model: " +
         collective_model +
         "}\n"
         "step:\n"
         "  - cpu: {name: loader, time: 2ms, jitter: 5%}\n"
         "  - when: \"pp_rank == 0\"\n"
         "    do:\n"
         "      - compute: {name: forward, time: 20ms, jitter: 3%}\n"
         "      - send: {name: act_send, to: next, bytes: 4MiB}\n"
         "    else:\n"
         "      - recv: {name: act_recv, from: prev, bytes: 4MiB}\n"
         "      - compute: {name: forward, time: 20ms, jitter: 3%}\n"
         "  - allreduce: {name: tp_sync, group: tp, bytes: 8MiB}\n"
         "  - compute: {name: backward, time: 30ms, jitter: {dist: gamma, cv: 4%}}\n"
         "  - allreduce: {name: grads, group: dp, bytes: 64MiB}\n"
         "  - when: \"step % 5 == 0\"\n"
         "    do:\n"
         "      - allreduce: {name: loss, group: world, bytes: 4B}\n"
         "      - sync\n";
}

// Sees every callback, allocates in none: the lowest step every rank finished,
// and counts of what happened.
struct Tally final : Observer {
  std::array<int64_t, 16> finished{};
  int64_t transfers = 0, ticks = 0, computes = 0;
  void on_step_end(int rank, int64_t step, SimTime) override { finished[static_cast<size_t>(rank)] = step; }
  void on_transfer(const WorkRecord&, SimTime, SimTime, int64_t) override { ++transfers; }
  void on_compute(int, uint32_t, int64_t, SimTime, SimTime, bool) override { ++computes; }
  void on_tick(SimTime) override { ++ticks; }
  int64_t lowest_step() const { return *std::min_element(finished.begin(), finished.end()); }
};

class EngineAlloc : public ::testing::TestWithParam<const char*> {};

TEST_P(EngineAlloc, SteadyStateLoopDoesNotAllocate) {
  if (!test_support::allocation_counting()) GTEST_SKIP() << "another operator new replacement is active";
  auto scenario = load_scenario_text(healthy_job(GetParam()), "alloc.yaml");
  ASSERT_TRUE(scenario.ok()) << scenario.errors().front().to_string();
  auto plan = compile_plan(*scenario);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->ranks, 16);
  auto cost = make_cost_model(*plan);
  ASSERT_TRUE(cost.ok());
  Tally tally;
  FleetSim sim(*plan, **cost, {&tally});
  sim.start();

  sim.run_until(SimTime{2'000'000'000});  // warm-up: about 30 steps
  EXPECT_LT(2'000'000'000, sim.peek().ns);
  const int64_t warm_step = tally.lowest_step();
  const int64_t warm_transfers = tally.transfers, warm_ticks = tally.ticks, warm_computes = tally.computes;
  ASSERT_GE(warm_step, 10);

  const long before = test_support::allocations();
  sim.run_until(SimTime{8'000'000'000});  // about 100 more steps
  const long allocated = test_support::allocations() - before;

  EXPECT_EQ(allocated, 0) << "the event loop allocated " << allocated << " times in steady state";
  // The measured stretch did the work: steps, transfers, kernels and ticks.
  EXPECT_GE(tally.lowest_step(), warm_step + 80);
  EXPECT_GT(tally.transfers, warm_transfers);
  EXPECT_GT(tally.computes, warm_computes);
  EXPECT_GT(tally.ticks, warm_ticks);
  while (sim.step()) {
  }
  const RunResult r = sim.finish();
  EXPECT_EQ(r.outcome, Outcome::kCompleted);
  EXPECT_EQ(r.steps_completed, 200);
}

INSTANTIATE_TEST_SUITE_P(CollectiveModels, EngineAlloc, ::testing::Values("nccl", "alpha-beta", "steps"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace fleetsim
