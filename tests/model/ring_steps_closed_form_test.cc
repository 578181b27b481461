// The step model's closed form for a ring's longest paths (one chunk a step,
// NCCL's bounded receive buffers) equals the recurrence over every transfer
// (completion_spans_reference_us) in every bit, so every member's span and every
// completion agree to the nanosecond: on schedules of NCCL's rings with random
// degraded links (slow NICs, slow NVLinks, GPUDirect off, remote NUMA), sizes 2
// to 2,048, all three protocols and several message sizes (so several chunk and
// channel counts), and on synthetic schedules whose every hop has its own time.
// The recurrence backwards (spans) equals the forward run for random arrivals,
// and the buffers bind where they must: a bottleneck upstream of a late member
// works ahead only as far as the slots between them hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "fleetsim/time.h"
#include "sim/model/ring_steps.h"

namespace fleetsim::nccl {
namespace {

// Completion (ns, the cost model's rounding) of arrivals `a_ns` given spans.
int64_t completion_ns(const std::vector<double>& span_us, const std::vector<int64_t>& a_ns) {
  const int64_t last = *std::max_element(a_ns.begin(), a_ns.end());
  double us = -1e300;
  for (size_t i = 0; i < span_us.size(); ++i)
    us = std::max(us, static_cast<double>(a_ns[i] - last) * 1e-3 + span_us[i]);
  return round_to_duration(std::max(0.0, us) * 1e-6).ns;
}

// Checks closed form == reference for `s`: every member's span bit for bit, its
// rounding to ns, and the completion of a few random arrival vectors.
void expect_same_spans(const StepSchedule& s, std::mt19937_64& rng, const std::string& what) {
  const std::vector<double> fast = completion_spans_us(s);
  const std::vector<double> ref = completion_spans_reference_us(s);
  ASSERT_EQ(fast.size(), ref.size()) << what;
  int differ = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    if (fast[i] == ref[i] && round_to_duration(fast[i] * 1e-6) == round_to_duration(ref[i] * 1e-6)) continue;
    if (++differ <= 3) ADD_FAILURE() << what << ": member " << i << " closed form " << fast[i] << " µs, reference " << ref[i];
  }
  EXPECT_EQ(differ, 0) << what;
  for (int trial = 0; trial < 3; ++trial) {
    const uint64_t spread = trial == 0 ? 1000 : trial == 1 ? 1'000'000 : 100'000'000;  // 1 µs .. 100 ms
    std::vector<int64_t> a(fast.size());
    for (int64_t& v : a) v = static_cast<int64_t>(rng() % spread);
    EXPECT_EQ(completion_ns(fast, a), completion_ns(ref, a)) << what << " trial " << trial;
  }
}

// A random degradation of a group of `nodes` nodes with `ppn` GPUs each.
LinkDegradation random_degradation(std::mt19937_64& rng, int nodes, int ppn) {
  LinkDegradation d;
  const int kind = static_cast<int>(rng() % 6);  // slow NICs and NVLinks twice as often
  d.kind = kind < 2 ? DegradeKind::kNicRate
           : kind < 4 ? DegradeKind::kNvlinkRate
           : kind == 4 ? DegradeKind::kGpuDirectOff
                       : DegradeKind::kRemoteNuma;
  d.node = static_cast<int>(rng() % static_cast<uint64_t>(nodes));
  d.index = static_cast<int>(rng() % static_cast<uint64_t>(d.kind == DegradeKind::kNvlinkRate ? ppn : 8));
  d.fraction = 0.05 + 0.9 * static_cast<double>(rng() % 1000) / 1000.0;
  return d;
}

// NCCL's rings on DGX H100 nodes: n ranks 8 to a node (or fewer on one node),
// and data-parallel rings with one GPU on each of n nodes.
TEST(RingStepsClosedForm, EqualsTheRecurrenceOnDegradedRings) {
  std::mt19937_64 rng(20240617);
  const int kSizes[] = {2, 3, 5, 8, 16, 24, 64, 136, 512, 2048};
  const int64_t kBytes[] = {4096, 1 << 20, 64 << 20, int64_t{1} << 30};
  int schedules = 0, multi_class = 0, multi_chunk = 0, one_chunk = 0;
  for (int n : kSizes) {
    for (bool dp : {false, true}) {
      if (dp && n > 512) continue;  // the reference's cost grows as n^2
      const int ppn = dp ? 1 : std::min(n, 8);
      const int nodes = (n + ppn - 1) / ppn;
      Fabric f = *fabric_preset("dgx-h100");
      f.nodes = nodes;
      Options o;
      o.algo = "ring";
      const auto model = Model::create(f, o);
      ASSERT_TRUE(model.ok());
      for (int trial = 0; trial < (n > 512 ? 1 : 3); ++trial) {
        StepRequest req;
        const Coll colls[] = {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter};
        req.coll = colls[rng() % 3];
        req.bytes = kBytes[rng() % 4];
        req.shape = GroupShape{n, nodes, ppn};
        const int degradations = static_cast<int>(rng() % 4);
        for (int d = 0; d < degradations; ++d) req.degraded.push_back(random_degradation(rng, nodes, ppn));
        const Proto proto = static_cast<Proto>(rng() % 3);
        const StepSchedule s = ring_schedule(*model, req, proto);
        ++schedules;
        multi_class += s.chunk_us.size() > 1;
        multi_chunk += s.chunks > 1;
        one_chunk += s.chunks == 1;  // the closed form's case (K > 1 runs the recurrence either way)
        expect_same_spans(s, rng, std::string(coll_name(req.coll)) + " " + std::to_string(req.bytes) + " B on " +
                                      std::to_string(n) + (dp ? " dp" : "") + " proto " + std::to_string(static_cast<int>(proto)));
      }
    }
  }
  // The draw covers what the closed form must get right.
  EXPECT_GT(multi_class, 5) << schedules;
  EXPECT_GT(multi_chunk, 5) << schedules;
  EXPECT_GT(one_chunk, 10) << schedules;
}

// Synthetic rings whose hops all run at different speeds (the closed form's
// worst case: long chains of ever slower hops), with and without a per-step
// cost, both step counts (all-reduce, all-gather), 3 to 12 slots, and a quarter
// with 1 to 64 chunks (the recurrence either way).
TEST(RingStepsClosedForm, EqualsTheRecurrenceWhenEveryHopDiffers) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    StepSchedule s;
    s.ranks = 2 + static_cast<int>(rng() % (trial < 280 ? 30 : 300));
    s.steps = rng() % 2 ? 2 * (s.ranks - 1) : s.ranks - 1;
    s.chunks = trial % 4 == 3 ? 1 + static_cast<int>(rng() % 64) : 1;  // the closed form's case, mostly
    s.loop_chunks = 1 + static_cast<int>(rng() % 2);
    const int kSlots[] = {3, 4, 5, 8, 8, 12};
    s.slots = std::max(s.loop_chunks + 1, kSlots[rng() % 6]);
    s.base_us = static_cast<double>(rng() % 100000) / 7.0;
    s.step_us = rng() % 4 == 0 ? 0.0 : static_cast<double>(rng() % 100000) / 13.0;
    const int classes = 1 + static_cast<int>(rng() % 3);
    const int values = 1 + static_cast<int>(rng() % (trial % 2 ? 4 : 1000));  // few or all distinct
    for (int k = 0; k < classes; ++k) {
      std::vector<double> us(static_cast<size_t>(s.ranks));
      for (double& v : us) v = 0.1 + static_cast<double>(rng() % static_cast<uint64_t>(values)) * 3.7 / 11.0;
      if (trial % 5 == 0) std::sort(us.begin(), us.end());  // every hop slower than the one before
      s.chunk_us.push_back(std::move(us));
      s.class_channels.push_back(1);
    }
    s.channels = classes;
    expect_same_spans(s, rng, "synthetic trial " + std::to_string(trial));
  }
}

// A healthy 65,536-rank ring (the recurrence would take seconds): by symmetry
// every member's span is the same, base + 2(n-1) x (step cost + K chunk times).
TEST(RingStepsClosedForm, HealthyFleetScaleRingIsSymmetric) {
  StepSchedule s;
  s.ranks = 65536;
  s.steps = 2 * (s.ranks - 1);
  s.chunks = 1;
  s.base_us = 10.0;
  s.step_us = 0.5;
  s.channels = 2;
  s.chunk_us.assign(1, std::vector<double>(static_cast<size_t>(s.ranks), 0.25));
  s.class_channels = {2};
  const std::vector<double> span = completion_spans_us(s);
  for (double v : span) ASSERT_EQ(v, 10.0 + s.steps * (0.5 + 0.25));
}

// Synthetic rings: K chunks, G a loop, b slots, random hop times and arrivals.
StepSchedule synthetic(std::mt19937_64& rng, int n) {
  StepSchedule s;
  s.ranks = n;
  s.steps = rng() % 2 ? 2 * (n - 1) : n - 1;
  s.chunks = 1 + static_cast<int>(rng() % 9);
  s.loop_chunks = 1 + static_cast<int>(rng() % 2);
  s.slots = s.loop_chunks + 1 + static_cast<int>(rng() % 8);
  s.base_us = static_cast<double>(rng() % 1000) / 7.0;
  s.step_us = static_cast<double>(rng() % 1000) / 13.0;
  std::vector<double> us(static_cast<size_t>(n));
  for (double& v : us) v = 0.5 + static_cast<double>(rng() % 100) * 0.37;
  s.chunk_us.push_back(std::move(us));
  s.class_channels.push_back(1);
  s.channels = 1;
  return s;
}

// The spans (the recurrence run backwards, and the closed form where K = 1) give
// the forward run's completion for any arrivals, in NCCL's order and with the
// buffers bounded: two evaluations of the same max-plus system.
TEST(RingStepsClosedForm, SpansEqualTheForwardRunWithBoundedBuffers) {
  std::mt19937_64 rng(99);
  for (int trial = 0; trial < 200; ++trial) {
    const StepSchedule s = synthetic(rng, 2 + static_cast<int>(rng() % 12));
    const std::vector<double> span = completion_spans_us(s);
    for (int a = 0; a < 3; ++a) {
      std::vector<double> arrival(static_cast<size_t>(s.ranks));
      for (double& v : arrival) v = static_cast<double>(rng() % 100000) / (a == 0 ? 1e9 : a == 1 ? 10.0 : 0.1);
      double closed = -1e300;
      for (size_t i = 0; i < arrival.size(); ++i) closed = std::max(closed, arrival[i] + span[i]);
      const double fwd = simulate_us(s, arrival);
      ASSERT_NEAR(closed, fwd, 1e-9 * fwd) << "trial " << trial << " K " << s.chunks << " G " << s.loop_chunks
                                           << " b " << s.slots << " n " << s.ranks;
    }
  }
}

// One slow hop (member 3 -> 4 takes 10 µs a chunk, the others 1 µs), one chunk a
// step, no step cost, all-reduce on 16 members (S = 30). Member 4 (just past the
// slow hop) late: unbounded, hop 3 could send every step that does not need
// member 4's data; with b slots it stops b-1 transfers ahead of member 4's
// forwarding. So member 4's span is the longest path that waits one step at 4,
// moves back to 3 (b-1 steps later, a sender waiting for a slot) and sends the
// rest there: 2 + 10 (S - 1 - (b-1)) µs, where going forwards round the ring
// to 3 gives only 15 + 10 (S - 15).
TEST(RingStepsClosedForm, SlotsHoldTheBottleneckToTheLateMember) {
  for (int b : {4, 8}) {
    StepSchedule s;
    s.ranks = 16;
    s.steps = 30;
    s.chunks = 1;
    s.slots = b;
    s.channels = 1;
    s.chunk_us.assign(1, std::vector<double>(16, 1.0));
    s.chunk_us[0][3] = 10.0;
    s.class_channels = {1};
    const std::vector<double> fast = completion_spans_us(s), ref = completion_spans_reference_us(s);
    EXPECT_EQ(fast[4], 2.0 + 10.0 * (s.steps - 1 - (b - 1))) << b;
    EXPECT_EQ(ref[4], fast[4]) << b;
    EXPECT_GT(fast[4], 15.0 + 10.0 * (s.steps - 15)) << b;  // more than the forward route: the bound binds
    EXPECT_EQ(fast[3], 10.0 * s.steps) << b;               // the bottleneck's own sender: the whole time
    // The forward run agrees: everyone at 0 but member 4 at 1 ms.
    std::vector<double> a(16, 0.0);
    a[4] = 1000.0;
    EXPECT_DOUBLE_EQ(simulate_us(s, a), 1000.0 + fast[4]) << b;
  }
}

// NCCL's order: K chunks in loops of G through every step. On a healthy ring
// with equal arrivals the critical path is unchanged: S step costs and S K chunk
// times, whatever G and b (the receive buffers never bind there).
TEST(RingStepsClosedForm, HealthyRingKeepsNcclsTimeInLoopOrder) {
  for (int K : {1, 2, 3, 8, 64}) {
    for (int G : {1, 2}) {
      StepSchedule s;
      s.ranks = 16;
      s.steps = 30;
      s.chunks = K;
      s.loop_chunks = G;
      s.slots = G == 2 ? 4 : 8;
      s.base_us = 3.0;
      s.step_us = 0.75;
      s.channels = 1;
      s.chunk_us.assign(1, std::vector<double>(16, 0.5));
      s.class_channels = {1};
      const std::vector<double> span = completion_spans_us(s);
      for (double v : span) ASSERT_EQ(v, 3.0 + 30 * 0.75 + 30.0 * K * 0.5) << K << " " << G;
      EXPECT_DOUBLE_EQ(simulate_us(s, std::vector<double>(16, 0.0)), span[0]) << K << " " << G;
    }
  }
}

}  // namespace
}  // namespace fleetsim::nccl
