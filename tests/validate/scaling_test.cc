// Tests of validate/scaling: how a GPU scenario is scaled down for real processes.
#include "validate/scaling.h"

#include <gtest/gtest.h>

#include "sim/io/scenario_loader.h"

namespace fleetsim::validate {
namespace {

// Bytes scale to whole elements, never below one element.
TEST(Scaling, BytesAreWholeElements) {
  EXPECT_EQ(scale_bytes(int64_t{64} << 20, 1.0 / 1024, 4), 65536);
  EXPECT_EQ(scale_bytes(4, 1.0 / 1024, 4), 4);
  EXPECT_EQ(scale_bytes(1000, 0.5, 2), 500);
}

// Durations and bytes scale recursively through when blocks; the job's clocks become real ones.
TEST(Scaling, ScenarioScalesOpsAndClocks) {
  auto s = load_scenario_text(R"(
name: t
fleet: {system: dgx-h100, nodes: 1, gpus_per_node: 2}
job: {steps: 3, watchdog: 10min}
step:
  - compute: {name: f, time: 150ms}
  - when: "step % 2 == 0"
    do:
      - allreduce: {name: g, group: world, bytes: 1GiB}
)", "t.yaml");
  ASSERT_TRUE(s.ok()) << s.errors()[0].to_string();
  Scaling k;
  k.time_scale = 0.01;
  k.bytes_scale = 1.0 / 1024;
  k.timeout = Duration::seconds(3);
  const Scenario out = scale_scenario(*s, k);
  EXPECT_EQ(out.step[0].time, Duration::micros(1500));
  EXPECT_EQ(out.step[1].then_ops[0].bytes, int64_t{1} << 20);
  EXPECT_EQ(out.job.watchdog, Duration::seconds(3));
  EXPECT_EQ(out.job.dump_wait, k.dump_wait);
}

// Scales parse as numbers or fractions; zero, negatives and junk are refused.
TEST(Scaling, ParseScale) {
  double v = 0;
  EXPECT_TRUE(parse_scale("0.1", &v));
  EXPECT_DOUBLE_EQ(v, 0.1);
  EXPECT_TRUE(parse_scale("1/1024", &v));
  EXPECT_DOUBLE_EQ(v, 1.0 / 1024);
  for (const char* bad : {"", "0", "-1", "x", "1/0", "1/", "/4", "0.1s"}) EXPECT_FALSE(parse_scale(bad, &v)) << bad;
}

}  // namespace
}  // namespace fleetsim::validate
