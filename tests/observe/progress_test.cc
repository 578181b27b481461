// The progress line: what it says (done/total, simulated time, rate, ETA) and
// when it is on (a terminal or --progress; never by default, so library users
// and tests stay quiet).
#include <gtest/gtest.h>

#include <string>

#include "sim/io/scenario_loader.h"
#include "sim/observe/progress.h"

namespace fleetsim {
namespace {

TEST(Progress, LineSaysDoneTotalSimTimeRateAndEta) {
  EXPECT_EQ(ProgressMeter::format("run", "steps", 2500, 10000, 1234.0, 10.0),
            "run 2500/10000 steps (25%)  sim 20m34s  250.0 steps/s  elapsed 10s  ETA 30s");
  EXPECT_EQ(ProgressMeter::format("sweep", "runs", 3, 12, -1, 90.0),
            "sweep 3/12 runs (25%)  0.0 runs/s  elapsed 1m30s  ETA 4m30s");
  EXPECT_EQ(ProgressMeter::format("run", "steps", 0, 10, 0, 3.0),
            "run 0/10 steps (0%)  sim 0s  0.0 steps/s  elapsed 3s  ETA ?");
}

TEST(Progress, OffUnlessATerminalOrForced) {
  auto s = load_scenario_text("name: t\nfleet: {system: custom, gpus_per_node: 2, nodes: 1}\njob: {steps: 2}\n"
                              "step:\n  - compute: {time: 1ms}\n", "t.yaml");
  ASSERT_TRUE(s.ok());
  auto plan = compile_plan(*s);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(progress_enabled());
  EXPECT_EQ(make_progress_observer(*plan), nullptr);
  set_progress_output(false, true);
  EXPECT_TRUE(progress_enabled());
  EXPECT_NE(make_progress_observer(*plan), nullptr);
  set_progress_output(true, false);
  EXPECT_TRUE(progress_enabled());
  set_progress_output(false, false);
  EXPECT_FALSE(progress_enabled());
}

}  // namespace
}  // namespace fleetsim
