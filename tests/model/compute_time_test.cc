// Compute-time models: each jitter law has mean 1 and its cv, draws are pure
// functions of (rank, step, op), and the compute-time faults (persistent,
// intermittent, pause, throttle) apply where and when they say.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "fleetsim/rng.h"
#include "fleetsim/time.h"
#include "sim/io/scenario_loader.h"
#include "sim/model/compute_time.h"

namespace fleetsim {
namespace {

Plan plan_of(const std::string& jitter, const std::string& faults = "", int steps = 2000) {
  const std::string yaml = "name: t\nfleet: {system: custom, gpus_per_node: 4, nodes: 2}\njob: {steps: " +
                           std::to_string(steps) + "}\nstep:\n  - compute: {name: c, time: 100ms, jitter: " + jitter +
                           "}\n  - allreduce: {name: g, bytes: 1MiB}\n" + (faults.empty() ? "" : "faults:\n" + faults);
  auto s = load_scenario_text(yaml, "t.yaml");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.errors()[0].to_string());
  return *compile_plan(*s);
}

// Mean and cv of rank 0..7's draws over every step, in units of the nominal time.
std::pair<double, double> moments(const Plan& plan) {
  ComputeTime ct(plan);
  double sum = 0, sq = 0, n = 0;
  for (int r = 0; r < plan.ranks; ++r)
    for (int64_t s = 1; s <= plan.scenario.job.steps; ++s) {
      const double x = static_cast<double>(ct.sample_ns(r, s, 0)) / 1e8;
      sum += x;
      sq += x * x;
      ++n;
    }
  const double m = sum / n;
  return {m, std::sqrt(sq / n - m * m) / m};
}

// Every parametric law has mean 1 and the requested cv (16,000 draws: within 3 standard errors).
TEST(ComputeTime, JitterLawsHaveMeanOneAndTheirCv) {
  for (const char* law : {"3%", "{dist: lognormal, cv: 3%}", "{dist: gamma, cv: 3%}", "{dist: gamma, cv: 150%}"}) {
    const Plan plan = plan_of(law);
    const double cv = std::string(law).find("150") != std::string::npos ? 1.5 : 0.03;
    const auto [m, c] = moments(plan);
    EXPECT_NEAR(m, 1.0, 3 * cv / std::sqrt(16000.0)) << law;
    EXPECT_NEAR(c, cv, 0.05 * cv) << law;
  }
}

// The same (rank, step, op) gives the same duration whatever the call order.
TEST(ComputeTime, DrawsAreCounterBased) {
  const Plan plan = plan_of("{dist: gamma, cv: 5%}");
  ComputeTime a(plan), b(plan);
  const int64_t late = a.sample_ns(3, 1500, 0);
  for (int64_t s = 1; s < 1500; ++s) b.sample_ns(3, s, 0);
  EXPECT_EQ(b.sample_ns(3, 1500, 0), late);
  EXPECT_NE(a.sample_ns(3, 1501, 0), late);
}

// A persistent straggler multiplies only its ranks and steps.
TEST(ComputeTime, PersistentStragglerScalesItsRanks) {
  const Plan plan = plan_of("0%", "  - straggler: {ranks: [2], slowdown: 1.3, from_step: 5, to_step: 6}\n", 10);
  ComputeTime ct(plan);
  EXPECT_EQ(ct.sample_ns(2, 4, 0), 100'000'000);
  EXPECT_EQ(ct.sample_ns(2, 5, 0), 130'000'000);
  EXPECT_EQ(ct.sample_ns(1, 5, 0), 100'000'000);
  EXPECT_EQ(ct.sample_ns(2, 7, 0), 100'000'000);
}

// Intermittent stragglers hit about `probability` of rank-steps, with mean slowdown `mean`.
TEST(ComputeTime, IntermittentHitsAtItsRate) {
  const Plan plan = plan_of("0%", "  - intermittent: {probability: 10%, slowdown: {mean: 2, dist: lognormal, cv: 10%}}\n");
  ComputeTime ct(plan);
  double hits = 0, factor = 0;
  for (int r = 0; r < 8; ++r)
    for (int64_t s = 1; s <= 2000; ++s) {
      const double x = static_cast<double>(ct.sample_ns(r, s, 0)) / 1e8;
      if (x != 1.0) { ++hits; factor += x; }
    }
  EXPECT_NEAR(hits / 16000, 0.10, 0.01);
  EXPECT_NEAR(factor / hits, 2.0, 0.02);
}

// Aligned pauses hit every rank at multiples of `every`; staggered ones at (step + rank) % every == 0.
TEST(ComputeTime, PausesLandOnTheirSteps) {
  const Plan aligned = plan_of("0%", "  - pause: {every: 4, time: 1s}\n", 10);
  const Plan staggered = plan_of("0%", "  - pause: {every: 4, time: 1s, phase: staggered}\n", 10);
  ComputeTime a(aligned), s(staggered);
  EXPECT_EQ(a.sample_ns(5, 8, 0), 1'100'000'000);
  EXPECT_EQ(a.sample_ns(5, 7, 0), 100'000'000);
  EXPECT_EQ(s.sample_ns(1, 3, 0), 1'100'000'000);
  EXPECT_EQ(s.sample_ns(1, 4, 0), 100'000'000);
}

// A throttle schedule applies the factor of the stage in force, on its ranks only.
TEST(ComputeTime, ThrottleFollowsItsSchedule) {
  const Plan plan = plan_of(
      "0%", "  - throttle: {ranks: [4], schedule: [{from_step: 3, factor: 1.5}, {from_step: 6, factor: 1.1}]}\n", 10);
  ComputeTime ct(plan);
  EXPECT_EQ(ct.sample_ns(4, 2, 0), 100'000'000);
  EXPECT_EQ(ct.sample_ns(4, 3, 0), 150'000'000);
  EXPECT_EQ(ct.sample_ns(4, 9, 0), 110'000'000);
  EXPECT_EQ(ct.sample_ns(3, 4, 0), 100'000'000);
}

// add_all (the lockstep's batch path) gives exactly sample_ns's values, with
// and without faults and for every jitter law, adds to or stores into the
// compute array as asked, and reports the clocks' range (or its high end alone).
TEST(ComputeTime, BatchMatchesSingleDraws) {
  for (const auto& [jitter, faults] : {std::pair<std::string, std::string>{"2%", "  - straggler: {ranks: [1], slowdown: 1.2}\n"},
                                       {"2%", ""}, {"{dist: gamma, cv: 3%}", ""}, {"0%", ""}}) {
    const Plan plan = plan_of(jitter, faults, 10);
    ComputeTime ct(plan);
    std::vector<int64_t> clock(8), compute(8, 5), stored(8, 5);
    for (int r = 0; r < 8; ++r) clock[static_cast<size_t>(r)] = 1000 * (r % 3);
    const std::vector<int64_t> start = clock;
    ComputeTime::ClockRange range;
    ct.add_all(7, 0, clock.data(), compute.data(), ComputeTime::Sum::kAdd, &range);
    std::vector<int64_t> again = start;
    ct.add_all(7, 0, again.data(), stored.data(), ComputeTime::Sum::kStore);
    EXPECT_EQ(again, clock);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int hi_rank = -1;
    for (int r = 0; r < 8; ++r) {
      const auto i = static_cast<size_t>(r);
      const int64_t d = ct.sample_ns(r, 7, 0);
      EXPECT_EQ(clock[i], start[i] + d) << jitter << " rank " << r;
      EXPECT_EQ(compute[i], 5 + d);
      EXPECT_EQ(stored[i], d);
      lo = std::min(lo, clock[i]);
      if (clock[i] > hi) { hi = clock[i]; hi_rank = r; }
    }
    EXPECT_EQ(range.lo, lo);
    EXPECT_EQ(range.hi, hi);
    EXPECT_EQ(range.hi_rank, hi_rank);
    // Span::kHigh: the same clocks and high end, the low end left unknown.
    std::vector<int64_t> high_only = start;
    ComputeTime::ClockRange high;
    ct.add_all(7, 0, high_only.data(), nullptr, ComputeTime::Sum::kAdd, &high, ComputeTime::Span::kHigh);
    EXPECT_EQ(high_only, clock);
    EXPECT_EQ(high.lo, INT64_MAX);
    EXPECT_EQ(high.hi, hi);
    EXPECT_EQ(high.hi_rank, hi_rank);
  }
}

// to_ns skips round_to_duration's division only where the division cannot
// change the result: the same nanoseconds for durations a few ulps either side
// of a half-integer (where it matters), across magnitudes, and for a million
// durations drawn over 0 to 10 s and over the edges of the fast path.
TEST(ComputeTime, ToNsRoundsAsRoundToDuration) {
  auto reference = [](double t) { return round_to_duration(t / 1e9).ns; };
  int64_t checked = 0;
  for (double whole = 1; whole < 0x1p53; whole = whole * 3 + 1) {
    const double half = whole + 0.5;
    double below = half, above = half;
    for (int k = 0; k < 12; ++k) {
      EXPECT_EQ(ComputeTime::to_ns(below), reference(below)) << below;
      EXPECT_EQ(ComputeTime::to_ns(above), reference(above)) << above;
      below = std::nextafter(below, 0.0);
      above = std::nextafter(above, 1e300);
      checked += 2;
    }
  }
  const uint64_t stream = stream_seed(7, 0, Stream::kComputeJitter);
  for (uint64_t i = 0; i < 1'000'000; ++i) {
    const double u = draw_uniform(stream, i);
    const double t = i % 4 == 0 ? u * 4 : i % 4 == 1 ? 0x1p51 * (0.5 + u) : u * 1e10;
    ASSERT_EQ(ComputeTime::to_ns(t), reference(t)) << t;
    ++checked;
  }
  EXPECT_GT(checked, 1'000'000);
}

}  // namespace
}  // namespace fleetsim
