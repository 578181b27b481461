// Targeted and simulation groups. Targeted: one collective round (an
// all-reduce over every rank, no compute) at 1k to 131k ranks on the lockstep
// executor. Simulation: steps of (compute with 2% jitter, then a data-parallel
// all-reduce) at 1k, 16k and 131k ranks (rank-steps/s, bytes per rank from the
// executor's own reserved sizes), the floor program those steps are measured
// against, the event executor on the step-400 scenario (events/s), the
// founding case at 4,096 ranks on the event and hybrid executors and at 4,096
// and 131,072 on the hybrid beside the lockstep run of its fleet, and a run
// that diverges every 100 steps (the hybrid coming back after each) on both.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/engine.h"
#include "fleetsim/rng.h"
#include "sim/io/scenario_loader.h"
#include "sim/exec/executor.h"
#include "sim/exec/group_layout.h"
#include "sim/model/compute_time.h"
#include "sim/observe/straggler_stats.h"

namespace fleetsim {
namespace {

Plan fleet_plan(int64_t ranks, int64_t steps, bool compute) {
  const std::string yaml = "name: b\nfleet: {system: dgx-h100, nodes: " + std::to_string(ranks / 8) +
                           "}\nparallel: {tp: 1}\njob: {steps: " + std::to_string(steps) + "}\nstep:\n" +
                           (compute ? "  - compute: {time: 300ms, jitter: 2%}\n" : "") +
                           "  - allreduce: {name: grads, group: dp, bytes: 256MiB}\n";
  return *compile_plan(*load_scenario_text(yaml, "bench.yaml"));
}

// Collective rounds per second; items = rank-arrivals.
void BM_CollectiveRound(benchmark::State& state) {
  const Plan plan = fleet_plan(state.range(0), 20, false);
  const auto cost = make_alpha_beta_model(plan.scenario.fleet);
  for (auto _ : state) {
    state.PauseTiming();
    auto sim = std::make_unique<LockstepSim>(plan, *cost, std::vector<Observer*>{}, nullptr);
    RunResult r;
    state.ResumeTiming();
    benchmark::DoNotOptimize(sim->run(&r));
  }
  state.SetItemsProcessed(state.iterations() * 20 * state.range(0));
}
BENCHMARK(BM_CollectiveRound)->Arg(1 << 10)->Arg(1 << 14)->Arg(1 << 17)->Unit(benchmark::kMillisecond);

// Lockstep steps of (compute with jitter, all-reduce), with straggler stats on.
void BM_LockstepSteps(benchmark::State& state) {
  const int64_t steps = 20;
  const Plan plan = fleet_plan(state.range(0), steps, true);
  const auto cost = make_alpha_beta_model(plan.scenario.fleet);
  double bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    StragglerStats stats(plan);
    auto sim = std::make_unique<LockstepSim>(plan, *cost, std::vector<Observer*>{}, &stats);
    bytes = sim->bytes_per_rank();
    RunResult r;
    state.ResumeTiming();
    benchmark::DoNotOptimize(sim->run(&r));
  }
  state.SetItemsProcessed(state.iterations() * steps * state.range(0));  // rank-steps
  state.counters["bytes_per_rank"] = bytes;
}
BENCHMARK(BM_LockstepSteps)->Arg(1 << 10)->Arg(1 << 14)->Arg(1 << 17)->Unit(benchmark::kMillisecond);

// The floor program: the least work any executor must do for those steps. Per
// rank-step, the rank's jittered compute time (the engine's normal draw,
// stream and counter, rounded to the nanosecond as the engine rounds it: a
// cheaper rounding would give other durations, and so other step ends) added
// to the rank's clock; per step, the max over the ranks (and its lowest rank,
// steps.csv's slowest: GCC 12 lays this loop out faster with it than without)
// and the all-reduce's cost. No observers, accounting or faults. Its end time
// must be the lockstep run's, to the nanosecond (checked before timing).
// Args: ranks, steps. Items = rank-steps, comparable with BM_LockstepSteps.
int64_t floor_run(std::vector<int64_t>& clock, const std::vector<uint64_t>& stream, int64_t steps, int64_t cost,
                  size_t* slowest) {
  const double base = 300e6, cv = 0.02;
  std::fill(clock.begin(), clock.end(), 0);
  int64_t end = 0;
  for (int64_t s = 1; s <= steps; ++s) {
    const uint64_t counter = static_cast<uint64_t>(s) * 2;  // op 0 of 2
    int64_t m = 0;
    size_t who = 0;
    for (size_t r = 0; r < clock.size(); ++r) {
      const double t = base * std::max(0.0, 1.0 + cv * draw_normal(stream[r], counter));
      const int64_t c = clock[r] += ComputeTime::to_ns(t);
      if (c > m) {
        m = c;
        who = r;
      }
    }
    end = m + cost;
    *slowest = who;
    std::fill(clock.begin(), clock.end(), end);
  }
  return end;
}

void BM_LockstepFloor(benchmark::State& state) {
  const auto ranks = static_cast<size_t>(state.range(0));
  const int64_t steps = state.range(1);
  const Plan plan = fleet_plan(state.range(0), steps, true);
  const auto model = make_alpha_beta_model(plan.scenario.fleet);
  const int64_t cost = group_table(plan, *model, is_collective).op_cost[1][0];  // the all-reduce, one shape
  std::vector<uint64_t> stream(ranks);
  for (size_t r = 0; r < ranks; ++r) stream[r] = stream_seed(plan.scenario.job.seed, r, Stream::kComputeJitter);
  std::vector<int64_t> clock(ranks);
  RunResult run;
  LockstepSim(plan, *model, {}, nullptr).run(&run);
  size_t slowest = 0;
  if (floor_run(clock, stream, steps, cost, &slowest) != run.end.ns) {
    state.SkipWithError("the floor program's end differs from the lockstep run's");
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(floor_run(clock, stream, steps, cost, &slowest));
    benchmark::DoNotOptimize(slowest);
  }
  state.SetItemsProcessed(state.iterations() * steps * state.range(0));
}
BENCHMARK(BM_LockstepFloor)
    ->Args({1 << 10, 20})
    ->Args({1 << 14, 20})
    ->Args({1 << 17, 20})
    ->Args({1 << 17, 1000})
    ->Unit(benchmark::kMillisecond);

// The event executor on the founding scenario (32 ranks, hang at step 400).
void BM_FleetSimStep400(benchmark::State& state) {
  auto s = load_scenario(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/step400_hang.yaml");
  const Plan plan = *compile_plan(*s);
  const auto cost = make_alpha_beta_model(plan.scenario.fleet);
  uint64_t events = 0;
  for (auto _ : state) events += run_simulation(plan, *cost, {}).events;
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FleetSimStep400)->Unit(benchmark::kMillisecond);

// The founding case at `ranks` (tp 8), event executor (arg 0) or hybrid (arg 1),
// or (arg 2) the lockstep run of the same fleet: bench/founding_lockstep_131k.yaml,
// the program without its `when`, for the 400 steps the founding case runs.
// rank-steps/s over the steps run (399 uniform ones, then the hang; 400 for lockstep).
void BM_FoundingCase(benchmark::State& state) {
  const int64_t ranks = state.range(0);
  const std::string nodes = std::to_string(ranks / 8);
  const bool lockstep = state.range(1) == 2;
  auto s = load_scenario(std::string(FLEETSIM_SOURCE_DIR) +
                             (lockstep ? "/bench/founding_lockstep_131k.yaml" : "/scenarios/step400_hang.yaml"),
                         {"fleet.nodes=" + nodes, "parallel.dp=" + nodes});
  const Plan plan = *compile_plan(*s);
  const auto cost = make_alpha_beta_model(plan.scenario.fleet);
  int64_t rank_steps = 0;
  for (auto _ : state) {
    RunResult r;
    if (state.range(1) == 0) r = run_simulation(plan, *cost, {});
    else if (state.range(1) == 1) HybridSim(plan, *cost, {}, nullptr).run(&r);
    else LockstepSim(plan, *cost, {}, nullptr).run(&r);
    rank_steps += ranks * (lockstep ? r.steps_completed : r.steps_completed + 1);
  }
  state.counters["rank_steps_per_s"] = benchmark::Counter(static_cast<double>(rank_steps), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FoundingCase)
    ->Args({4096, 0})
    ->Args({4096, 1})
    ->Args({4096, 2})
    ->Args({131072, 1})
    ->Args({131072, 2})
    ->Unit(benchmark::kMillisecond);

// A run that diverges now and then and completes: `ranks` ranks (tp 8), 1,000
// steps of the founding case's program, every rank all-reducing the loss every
// 100 steps and rank 0 printing it (a sync). Event executor (arg 0) or hybrid
// (arg 1; it hands each divergent step to the event executor and comes back):
// rank-steps/s; the counter `returns` is the hybrid's comebacks per run.
void BM_PeriodicDivergence(benchmark::State& state) {
  const int64_t ranks = state.range(0);
  const std::string nodes = std::to_string(ranks / 8);
  const std::string yaml =
      "name: periodic\nfleet: {system: dgx-h100, nodes: " + nodes + "}\nparallel: {tp: 8, dp: " + nodes +
      "}\njob: {steps: 1000, seed: 3, watchdog: 10min, telemetry_period: 1s}\nstep:\n"
      "  - compute: {name: forward, time: 150ms, jitter: 1%}\n"
      "  - allreduce: {name: tp_activations, group: tp, bytes: 64MiB}\n"
      "  - compute: {name: backward, time: 300ms, jitter: 1%}\n"
      "  - allreduce: {name: grads, group: dp, bytes: 1.5GiB}\n"
      "  - when: \"step % 100 == 0\"\n    do:\n"
      "      - allreduce: {name: loss, group: world, bytes: 4B}\n"
      "      - when: \"rank == 0\"\n        do:\n          - log: \"step {step} loss {loss}\"\n";
  const Plan plan = *compile_plan(*load_scenario_text(yaml, "periodic.yaml"));
  const auto cost = make_alpha_beta_model(plan.scenario.fleet);
  int64_t rank_steps = 0;
  int returns = 0;
  for (auto _ : state) {
    RunResult r;
    if (state.range(1) == 0) {
      r = run_simulation(plan, *cost, {});
    } else {
      HybridSim sim(plan, *cost, {}, nullptr);
      sim.run(&r);
      returns = sim.returns();
    }
    rank_steps += ranks * r.steps_completed;
  }
  state.counters["rank_steps_per_s"] = benchmark::Counter(static_cast<double>(rank_steps), benchmark::Counter::kIsRate);
  state.counters["returns"] = returns;
}
BENCHMARK(BM_PeriodicDivergence)->Args({4096, 0})->Args({4096, 1})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetsim

BENCHMARK_MAIN();
