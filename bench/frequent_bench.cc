// Frequent operations (SimPy's "frequent" group): the event heap's push/pop,
// one counter-based random draw, and one compute-time sample. These bound
// every executor's per-op cost; the floor for a rank-step is one normal draw.
// Also one collective under the step model (job.collective_model: steps), cold
// (schedule and longest paths) and warm (a call with the spans cached), and one
// fleet-scale ring all-reduce whose members all arrive at different times.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "fleetsim/rng.h"
#include "sim/core/event_queue.h"
#include "sim/io/scenario_loader.h"
#include "sim/model/compute_time.h"
#include "sim/model/ring_steps.h"

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

// One 64-bit draw and one standard normal (the ziggurat) from a stream.
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

// DGX H100 nodes for `ranks` (8 a node) with NCCL held to Ring, and the group
// of all of them: the fleet the step-model benchmarks time.
struct RingFleet {
  nccl::Fabric fabric = *nccl::fabric_preset("dgx-h100");
  nccl::Options options;
  GroupShape shape;
  explicit RingFleet(int ranks) {
    fabric.nodes = std::max(1, ranks / 8);
    options.algo = "ring";
    shape = GroupShape{ranks, fabric.nodes, std::min(ranks, 8)};
  }
  nccl::Model model() const { return *nccl::Model::create(fabric, options); }
  nccl::StepRequest all_reduce(int64_t bytes) const {
    nccl::StepRequest req;
    req.bytes = bytes;
    req.shape = shape;
    return req;
  }
};

// One 1 GiB Ring all-reduce under the step model on range(0) ranks (8 GPUs a
// DGX H100 node): building its schedule and every member's longest path, the
// work done once per (collective, size, group shape, degradations).
void BM_RingStepsSchedule(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const RingFleet fleet(ranks);
  const nccl::Model model = fleet.model();
  const nccl::StepRequest req = fleet.all_reduce(int64_t{1} << 30);
  int64_t transfers = 0;
  for (auto _ : state) {
    const nccl::StepSchedule s = nccl::ring_schedule(model, req, nccl::Proto::kSimple);
    benchmark::DoNotOptimize(nccl::completion_spans_us(s));
    transfers = s.transfers() * static_cast<int64_t>(s.chunk_us.size());
  }
  state.counters["transfers"] = static_cast<double>(transfers);
  state.SetItemsProcessed(state.iterations() * transfers);
}
BENCHMARK(BM_RingStepsSchedule)->Arg(8)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

// The step model's costliest schedules: several chunks a step (K > 1), where the
// spans come from the recurrence over every transfer, up to the cap of 2^22 a
// channel class: a 16 GiB all-reduce on range(0) ranks, NCCL's Simple protocol.
void BM_RingStepsManyChunks(benchmark::State& state) {
  const RingFleet fleet(static_cast<int>(state.range(0)));
  const nccl::Model model = fleet.model();
  const nccl::StepSchedule s = nccl::ring_schedule(model, fleet.all_reduce(int64_t{16} << 30), nccl::Proto::kSimple);
  for (auto _ : state) benchmark::DoNotOptimize(nccl::completion_spans_us(s));
  state.counters["transfers"] = static_cast<double>(s.transfers() * static_cast<int64_t>(s.chunk_us.size()));
  state.counters["chunks"] = s.chunks;
}
BENCHMARK(BM_RingStepsManyChunks)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

// The same collective as the engine asks for it, with jittered arrivals, once
// the spans are cached: O(ranks) per call.
void BM_RingStepsCall(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const RingFleet fleet(ranks);
  const auto cost = nccl::make_ring_steps_model(fleet.fabric, fleet.options);
  std::vector<int64_t> arrivals(static_cast<size_t>(ranks));
  const uint64_t s = stream_seed(1, 0, Stream::kComputeJitter);
  uint64_t c = 0;
  const std::vector<LinkDegradation> none;
  for (auto _ : state) {
    for (int64_t& a : arrivals) a = static_cast<int64_t>(draw_u64(s, c++) % 1'000'000);
    benchmark::DoNotOptimize(cost->collective_time_after(OpKind::kAllReduce, int64_t{1} << 30, fleet.shape, none, arrivals, 0));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RingStepsCall)->Arg(8)->Arg(64)->Arg(512);

// One 1 MiB world all-reduce under the step model at fleet scale (NCCL Ring, 8
// GPUs a DGX H100 node), every member arriving at a different time, on a fresh
// model (nothing cached): NCCL's choice, the schedule, every member's longest
// path by the closed form (one chunk a step, NCCL's receive buffers bounded),
// and the completion. The goal: <= 1 s at 65,536.
void BM_RingStepsFleetAllReduce(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const RingFleet fleet(ranks);
  std::vector<int64_t> arrivals(static_cast<size_t>(ranks));
  const uint64_t s = stream_seed(1, 0, Stream::kComputeJitter);
  uint64_t c = 0;
  for (int64_t& a : arrivals) a = static_cast<int64_t>(draw_u64(s, c++) % 10'000'000);  // within 10 ms
  const std::vector<LinkDegradation> none;
  for (auto _ : state) {
    state.PauseTiming();
    const auto cost = nccl::make_ring_steps_model(fleet.fabric, fleet.options);
    state.ResumeTiming();
    benchmark::DoNotOptimize(cost->collective_time_after(OpKind::kAllReduce, int64_t{1} << 20, fleet.shape, none, arrivals, 0));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RingStepsFleetAllReduce)->Arg(1024)->Arg(4096)->Arg(16384)->Arg(65536)->Unit(benchmark::kMillisecond);

// The same ring's longest paths by the recurrence over every transfer (the
// reference the closed form is tested against, O(n^2)): what the call above
// cost before the closed form. Only the two smaller rings (16,384 takes seconds).
void BM_RingStepsFleetReference(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const RingFleet fleet(ranks);
  const nccl::Model model = fleet.model();
  const nccl::StepRequest req = fleet.all_reduce(int64_t{1} << 20);
  const nccl::Estimate e = model.estimate(nccl::Coll::kAllReduce, req.bytes, req.shape);
  const nccl::StepSchedule sch = nccl::ring_schedule(model, req, e.proto);
  for (auto _ : state) benchmark::DoNotOptimize(nccl::completion_spans_reference_us(sch));
  state.counters["transfers"] = static_cast<double>(sch.transfers() * static_cast<int64_t>(sch.chunk_us.size()));
  state.counters["channels"] = sch.channels;
  state.counters["chunks"] = sch.chunks;
}
BENCHMARK(BM_RingStepsFleetReference)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetsim

BENCHMARK_MAIN();
