// Slow windows and rotating stalls, on synthetic steps.csv rows and telemetry
// where the answer is known by construction.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/diagnose/signals.h"

namespace fleetsim::diagnose {
namespace {

// `n` steps of `base` seconds with a deterministic +-0.5% wobble; `slow(step)`
// returns the factor and the slowest rank of that step.
template <typename F>
std::vector<StepRow> make_steps(int n, double base, F slow) {
  std::vector<StepRow> out;
  double t = 0;
  for (int i = 1; i <= n; ++i) {
    const auto [factor, rank] = slow(i);
    StepRow s;
    s.step = i;
    s.start_s = t;
    s.duration_s = base * factor * (1 + 0.005 * std::sin(i * 1.7));
    t += s.duration_s;
    s.end_s = t;
    s.slowest_rank = rank;
    out.push_back(s);
  }
  return out;
}

TEST(SlowWindow, FindsAMidRunWindowAndItsEdges) {
  const auto steps = make_steps(300, 0.35, [](int i) {
    return std::pair{i >= 100 && i < 200 ? 1.12 : 1.0, i % 64};
  });
  auto w = find_slow_window(steps);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->first_step, 100);
  EXPECT_EQ(w->last_step, 199);
  EXPECT_FALSE(w->to_the_end);
  EXPECT_NEAR(w->median_s / w->baseline_s, 1.12, 0.01);
}

TEST(SlowWindow, NoneOnASteadyRunOrOneSlowThroughout) {
  EXPECT_FALSE(find_slow_window(make_steps(300, 0.35, [](int i) { return std::pair{1.0, i % 8}; })));
  // Every fifth step spikes: spikes are not a window.
  EXPECT_FALSE(find_slow_window(make_steps(300, 0.35, [](int i) { return std::pair{i % 5 == 0 ? 2.0 : 1.0, i % 8}; })));
}

TEST(SlowWindow, TelemetryNamesTheRanksWhoseTensorPipesWereBusier) {
  const auto steps = make_steps(300, 0.35, [](int i) { return std::pair{i >= 100 && i < 200 ? 1.12 : 1.0, 0}; });
  auto w = find_slow_window(steps);
  ASSERT_TRUE(w.has_value());
  std::vector<TelemetryRow> tel;
  for (int s = 1; s < 100; ++s) {
    for (int r = 0; r < 32; ++r) {
      const bool inside = s >= w->start_s && s <= w->end_s;
      const bool hot = r >= 8 && r < 16;
      tel.push_back(TelemetryRow{static_cast<double>(s), r, 100, 0.8, inside && hot ? 0.52 : 0.45, 0, 0});
    }
  }
  WindowCulprits c = window_culprits(*w, steps, tel, 32);
  EXPECT_EQ(c.basis, "telemetry");
  EXPECT_EQ(c.ranks, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
}

TEST(SlowWindow, WithoutTelemetryTheRanksLastFarMoreOftenThanChance) {
  const auto steps = make_steps(300, 0.35, [](int i) {
    const bool in = i >= 100 && i < 200;
    return std::pair{in ? 1.12 : 1.0, in ? 20 + i % 2 : i % 64};
  });
  auto w = find_slow_window(steps);
  ASSERT_TRUE(w.has_value());
  WindowCulprits c = window_culprits(*w, steps, {}, 64);
  EXPECT_EQ(c.basis, "steps");
  EXPECT_EQ(c.ranks, (std::vector<int>{20, 21}));
}

TEST(RotatingStalls, SpikesOnADifferentRankEachTime) {
  const auto steps = make_steps(300, 0.2, [](int i) { return std::pair{i % 3 ? 2.5 : 1.0, (i * 7) % 64}; });
  auto r = find_rotating_stalls(steps);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->spikes, 200);
  EXPECT_EQ(r->distinct_ranks, 64);
  EXPECT_LE(r->max_per_rank, 4);
  EXPECT_GT(r->excess_share, 0.5);
}

TEST(RotatingStalls, NotWhenTheSameRankIsAlwaysLastOrSpikesAreRare) {
  EXPECT_FALSE(find_rotating_stalls(make_steps(300, 0.2, [](int i) { return std::pair{i % 3 ? 2.5 : 1.0, 17}; })));
  EXPECT_FALSE(find_rotating_stalls(make_steps(300, 0.2, [](int i) { return std::pair{i % 50 ? 1.0 : 2.5, i % 64}; })));
}

}  // namespace
}  // namespace fleetsim::diagnose
