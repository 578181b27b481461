// Frequent operations (SimPy's "frequent" group): the event heap's push/pop,
// one counter-based random draw, and one compute-time sample. These bound
// every executor's per-op cost; the floor for a rank-step is one normal draw.
#include <benchmark/benchmark.h>

#include "fleetsim/rng.h"
#include "sim/core/event_queue.h"
#include "sim/io/scenario_loader.h"
#include "sim/model/compute_time.h"

namespace fleetsim {
namespace {

// Push then pop one event on a heap holding `range(0)` events.
void BM_HeapPushPop(benchmark::State& state) {
  EventQueue q;
  const auto n = static_cast<int64_t>(state.range(0));
  q.reserve(static_cast<size_t>(n) + 1);
  for (int64_t i = 0; i < n; ++i) q.push(Event{i * 7 % 1000, 0, Priority::kNormal, 1, 0, 0, 0});
  int64_t t = 1000;
  for (auto _ : state) {
    q.push(Event{t++, 0, Priority::kNormal, 1, 0, 0, 0});
    benchmark::DoNotOptimize(q.pop());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HeapPushPop)->Arg(1 << 10)->Arg(1 << 17);

// One 64-bit draw and one standard normal (Box-Muller) from a stream.
void BM_DrawU64(benchmark::State& state) {
  const uint64_t s = stream_seed(1, 2, Stream::kComputeJitter);
  uint64_t c = 0;
  for (auto _ : state) benchmark::DoNotOptimize(draw_u64(s, c++));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DrawU64);

void BM_DrawNormal(benchmark::State& state) {
  const uint64_t s = stream_seed(1, 2, Stream::kComputeJitter);
  uint64_t c = 0;
  for (auto _ : state) benchmark::DoNotOptimize(draw_normal(s, c++));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DrawNormal);

// One sampled compute duration per jitter law (arg: 0 normal, 1 lognormal, 2 gamma).
void BM_SampleCompute(benchmark::State& state) {
  const char* laws[] = {"2%", "{dist: lognormal, cv: 2%}", "{dist: gamma, cv: 2%}"};
  const std::string yaml = std::string("name: b\nfleet: {system: custom, gpus_per_node: 8, nodes: 1}\njob: {steps: 1000000}\n"
                                       "step:\n  - compute: {time: 100ms, jitter: ") + laws[state.range(0)] + "}\n";
  auto plan = compile_plan(*load_scenario_text(yaml, "bench.yaml"));
  ComputeTime ct(*plan);
  int64_t step = 1;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ct.sample_ns(3, step, 0));
    step = step % 1000000 + 1;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(laws[state.range(0)]);
}
BENCHMARK(BM_SampleCompute)->DenseRange(0, 2);

}  // namespace
}  // namespace fleetsim

BENCHMARK_MAIN();
