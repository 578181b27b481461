// Nothing is sized by a number the user typed before the run reaches it: a
// job.steps at its maximum and a flight recorder at its largest capacity on
// 100,000 ranks build their observers without allocating per step or per slot.
#include <gtest/gtest.h>

#include "fleetsim/plan.h"
#include "sim/io/scenario_loader.h"
#include "sim/observe/flight_recorder.h"
#include "sim/observe/step_table.h"
#include "sim/observe/straggler_stats.h"

namespace fleetsim {
namespace {

Plan plan_of(const std::string& yaml) {
  Result<Scenario> s = load_scenario_text(yaml, "t.yaml");
  EXPECT_TRUE(s.ok()) << s.errors()[0].to_string();
  Result<Plan> p = compile_plan(*s);
  EXPECT_TRUE(p.ok()) << p.errors()[0].to_string();
  return std::move(*p);
}

TEST(BoundedMemory, StepObserversDoNotAllocateJobSteps) {
  const Plan plan = plan_of("name: t\nfleet: {nodes: 1, gpus_per_node: 2}\njob: {steps: 1099511627776}\n"
                            "step:\n  - compute: {time: 1ms}\n");
  StepTable table(plan, nullptr);  // per-step storage up front would be 2^40 entries
  StragglerStats stats(plan);
  table.on_step_end(0, 1, SimTime{10});
  table.on_step_end(1, 1, SimTime{12});
  stats.on_step_end(0, 1, SimTime{10});
  stats.on_step_end(1, 1, SimTime{12});
  ASSERT_EQ(table.durations_ns().size(), 1u);
  EXPECT_EQ(table.durations_ns()[0], 12);
  EXPECT_EQ(stats.slowest_counts(1)[0], 1);
}

TEST(BoundedMemory, FlightRecorderSizesEachRankOnDemand) {
  const Plan plan = plan_of("name: t\nfleet: {nodes: 12500, gpus_per_node: 8}\njob: {flight_recorder_entries: 16777216, flight_recorder: {format: json}}\n"
                            "step:\n  - allreduce: {bytes: 1MiB}\n");
  // ranks x capacity up front would be 1.6e12 records.
  FlightRecorder fr(plan, "/nonexistent", plan.scenario.job.flight_recorder_entries);
  WorkRecord w;
  w.rank = 99999;
  fr.on_work_enqueued(w);
  const std::string dump = fr.dump(99999, SimTime{0});
  EXPECT_NE(dump.find("\"record_id\": 0"), std::string::npos) << dump.substr(0, 400);
}

}  // namespace
}  // namespace fleetsim
