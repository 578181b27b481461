// Link faults as the engine applies them: which group instances a degraded NIC,
// GPUDirect-off node or remote-NUMA NIC touches (in the group-relative terms the
// NCCL model expects), and the job-level slowdown that follows.
#include <gtest/gtest.h>

#include "fleetsim/engine.h"
#include "sim/io/scenario_loader.h"
#include "sim/model/cost_model_factory.h"

namespace fleetsim {
namespace {

Plan plan_with(const std::string& faults, int64_t steps = 20) {
  const std::string yaml =
      "name: f\nfleet: {system: dgx-h100, nodes: 4}\nparallel: {tp: 8, dp: 4}\njob: {steps: " +
      std::to_string(steps) +
      "}\nstep:\n  - compute: {name: c, time: 100ms}\n  - allreduce: {name: g, group: dp, bytes: 1GiB}\n" + faults;
  auto s = load_scenario_text(yaml, "f.yaml");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.errors()[0].to_string());
  return *compile_plan(*s);
}

// A slow NIC touches only the dp ring whose members use it, at that ring's
// relative node and NIC index.
TEST(FabricFaults, SlowNicTouchesOnlyTheRingThatUsesIt) {
  const Plan p = plan_with("faults:\n  - link: {node: 2, nic: 3, bandwidth: 25%}\n");
  for (int inst = 0; inst < p.group_count(GroupKind::kDp); ++inst) {
    const auto d = p.group_degradations(GroupKind::kDp, inst);
    if (inst == 3) {
      ASSERT_EQ(d.size(), 1u);
      EXPECT_EQ(d[0].kind, DegradeKind::kNicRate);
      EXPECT_EQ(d[0].node, 2);   // the ring's third node
      EXPECT_EQ(d[0].index, 0);  // its only NIC there
      EXPECT_DOUBLE_EQ(d[0].fraction, 0.25);
    } else {
      EXPECT_TRUE(d.empty()) << inst;
    }
  }
  EXPECT_TRUE(p.group_degradations(GroupKind::kTp, 2).empty());  // NVLink-only groups never use NICs
  EXPECT_EQ(p.group_degradations(GroupKind::kWorld, 0).size(), 1u);
}

// GPUDirect off on a node degrades every group with members there; a remote-NUMA
// NIC only the ring of that GPU.
TEST(FabricFaults, GpuDirectAndNumaMapToTheirGroups) {
  const Plan g = plan_with("faults:\n  - gpudirect: {nodes: [1], enabled: false}\n");
  for (int inst = 0; inst < 8; ++inst) {
    const auto d = g.group_degradations(GroupKind::kDp, inst);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].kind, DegradeKind::kGpuDirectOff);
    EXPECT_EQ(d[0].node, 1);
  }
  const Plan n = plan_with("faults:\n  - nic_affinity: {node: 3, gpu: 5, numa: remote}\n");
  EXPECT_EQ(n.group_degradations(GroupKind::kDp, 5).size(), 1u);
  EXPECT_TRUE(n.group_degradations(GroupKind::kDp, 4).empty());
}

// A degraded NVLink touches the groups with two or more members on that node
// that include the GPU (the node's tp ring, the world), at the GPU's place among
// them; a ring with one GPU per node (dp) never uses NVLink.
TEST(FabricFaults, NvlinkTouchesOnlyTheNodesRingsThroughThatGpu) {
  const Plan p = plan_with("faults:\n  - nvlink: {node: 1, gpu: 3, bandwidth: 25%}\n");
  for (int inst = 0; inst < p.group_count(GroupKind::kTp); ++inst) {
    const auto d = p.group_degradations(GroupKind::kTp, inst);
    if (inst != 1) {
      EXPECT_TRUE(d.empty()) << inst;
      continue;
    }
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].kind, DegradeKind::kNvlinkRate);
    EXPECT_EQ(d[0].node, 0);   // the tp group's only node
    EXPECT_EQ(d[0].index, 3);  // GPU 3 among its eight
    EXPECT_DOUBLE_EQ(d[0].fraction, 0.25);
  }
  for (int inst = 0; inst < p.group_count(GroupKind::kDp); ++inst)
    EXPECT_TRUE(p.group_degradations(GroupKind::kDp, inst).empty()) << inst;
  const auto world = p.group_degradations(GroupKind::kWorld, 0);
  ASSERT_EQ(world.size(), 1u);
  EXPECT_EQ(world[0].node, 1);
  // The healthy-fabric time of the node's 1 GiB tp all-reduce stretches about fourfold.
  auto cost = make_cost_model(p);
  ASSERT_TRUE(cost.ok());
  const GroupShape tp = p.group_shape(GroupKind::kTp, 1);
  const double t = (*cost)->collective_time(OpKind::kAllReduce, int64_t{1} << 30, tp).to_seconds();
  const double t_slow = (*cost)->collective_time_degraded(OpKind::kAllReduce, int64_t{1} << 30, tp,
                                                          p.group_degradations(GroupKind::kTp, 1)).to_seconds();
  EXPECT_GT(t_slow / t, 3.5);
}

double mean_step_s(const Plan& p) {
  auto cost = make_cost_model(p);
  EXPECT_TRUE(cost.ok());
  const RunResult r = run_simulation(p, **cost, {});
  return r.end.to_seconds() / static_cast<double>(r.steps_completed);
}

// A NIC at 25% stretches the degraded ring's all-reduce 4x (bandwidth-bound), so
// the synchronous job's step grows by about three healthy all-reduce times.
TEST(FabricFaults, SlowNicSlowsTheJobAsTheModelPredicts) {
  const Plan healthy = plan_with("");
  const Plan slow = plan_with("faults:\n  - link: {node: 2, nic: 3, bandwidth: 25%}\n");
  auto cost = make_cost_model(healthy);
  const GroupShape ring = healthy.group_shape(GroupKind::kDp, 3);
  const double t = (*cost)->collective_time(OpKind::kAllReduce, int64_t{1} << 30, ring).to_seconds();
  const double t_slow = (*cost)->collective_time_degraded(OpKind::kAllReduce, int64_t{1} << 30, ring,
                                                          slow.group_degradations(GroupKind::kDp, 3)).to_seconds();
  EXPECT_NEAR(t_slow / t, 4.0, 0.2);
  EXPECT_NEAR(mean_step_s(slow) - mean_step_s(healthy), t_slow - t, 0.002);
}

// A NIC that goes down stops the rings that cross it (no failover); NCCL reports the
// error on the rank that NIC serves after the IB retry timeout (7 tries of
// 4.096 us x 2^20 since NCCL 2.23, 2^18 before), and the job ends as a crash there.
TEST(FabricFaults, NicDownErrorsAfterTheIbRetryTimeout) {
  const Plan p = plan_with("faults:\n  - nic_down: {node: 2, nic: 3, at_step: 5}\n");
  auto cost = make_cost_model(p);
  const RunResult r = run_simulation(p, **cost, {});
  EXPECT_EQ(r.outcome, Outcome::kCrash);
  EXPECT_EQ(r.crash.rank, 19);  // node 2, GPU 3: the GPU that NIC serves
  EXPECT_EQ(r.crash.step, 5);
  // Steps take ~0.1 s of compute plus the all-reduce each; the NIC dies as rank 19
  // starts step 5, the next ring transfer stalls, and the error lands ~30.06 s later.
  const double retry_s = 7 * 4096e-9 * (1 << 20);
  EXPECT_GT(r.crash.at.to_seconds(), retry_s);
  EXPECT_LT(r.crash.at.to_seconds(), retry_s + 5 * 0.2);
  // at_step is when the rank's CPU starts step 5; its GPU is then up to the launch
  // queue behind, so the stalled all-reduce may be that of an earlier step.
  EXPECT_LT(r.steps_completed, 5);

  const std::string old_yaml =
      "name: f\nfleet: {system: dgx-h100, nodes: 4}\nparallel: {tp: 8, dp: 4}\njob: {steps: 20, nccl: {version: "
      "\"2.22\"}}\nstep:\n  - compute: {name: c, time: 100ms}\n  - allreduce: {name: g, group: dp, bytes: 1GiB}\n"
      "faults:\n  - nic_down: {node: 2, nic: 3, at_step: 5}\n";
  auto s = load_scenario_text(old_yaml, "f.yaml");
  ASSERT_TRUE(s.ok()) << s.errors()[0].to_string();
  const Plan old_plan = *compile_plan(*s);
  auto old_cost = make_cost_model(old_plan);
  const RunResult old = run_simulation(old_plan, **old_cost, {});
  EXPECT_EQ(old.outcome, Outcome::kCrash);
  EXPECT_NEAR(r.crash.at.to_seconds() - old.crash.at.to_seconds(), 7 * 4096e-9 * ((1 << 20) - (1 << 18)), 0.05);

}

// Bad fabric-fault input is reported at its position.
TEST(FabricFaults, BadInputIsDiagnosed) {
  const std::string base = "name: f\nfleet: {system: dgx-h100, nodes: 2}\njob: {steps: 2}\nstep:\n  - sync\nfaults:\n";
  auto bad_nic = load_scenario_text(base + "  - link: {node: 1, nic: 8, bandwidth: 25%}\n", "f.yaml");
  ASSERT_FALSE(bad_nic.ok());
  EXPECT_EQ(bad_nic.errors()[0].to_string(), "f.yaml:7:26: error: NIC 8 does not exist; a node has 8 (0..7)");
  auto bad_node = load_scenario_text(base + "  - gpudirect: {nodes: [5], enabled: false}\n", "f.yaml");
  ASSERT_FALSE(bad_node.ok());
  EXPECT_NE(bad_node.errors()[0].message.find("node 5 does not exist"), std::string::npos);
  auto bad_bw = load_scenario_text(base + "  - link: {node: 0, nic: 1, bandwidth: 0%}\n", "f.yaml");
  ASSERT_FALSE(bad_bw.ok());
  EXPECT_NE(bad_bw.errors()[0].message.find("share of the NIC's rate"), std::string::npos);
  auto bad_down = load_scenario_text(base + "  - nic_down: {node: 1, nic: 3}\n", "f.yaml");
  ASSERT_FALSE(bad_down.ok());
  EXPECT_NE(bad_down.errors()[0].message.find("at_step"), std::string::npos) << bad_down.errors()[0].message;
  auto bad_numa = load_scenario_text(base + "  - nic_affinity: {node: 0, gpu: 1, numa: local}\n", "f.yaml");
  ASSERT_FALSE(bad_numa.ok());
  auto bad_model = load_scenario_text(
      "name: f\nfleet: {system: dgx-h100, nodes: 2}\njob: {steps: 2, collective_model: stepz}\nstep:\n  - sync\n",
      "f.yaml");
  ASSERT_FALSE(bad_model.ok());
  EXPECT_NE(bad_model.errors()[0].message.find("expected one of: nccl, alpha-beta, steps"), std::string::npos)
      << bad_model.errors()[0].message;
  auto bad_algo = load_scenario_text(
      "name: f\nfleet: {system: dgx-h100, nodes: 2}\njob: {steps: 2, nccl: {algo: rung}}\nstep:\n  - sync\n", "f.yaml");
  ASSERT_FALSE(bad_algo.ok());
}

// job.nccl overrides reach the model: forcing Ring on one node changes the time
// of a large all-reduce (NCCL would pick NVLS there).
TEST(FabricFaults, NcclOverridesReachTheEngine) {
  auto pick = [](const std::string& nccl) {
    auto s = load_scenario_text("name: f\nfleet: {system: dgx-h100, nodes: 1}\njob: {steps: 2" + nccl +
                                    "}\nstep:\n  - allreduce: {name: g, group: world, bytes: 1GiB}\n",
                                "f.yaml");
    const Plan p = *compile_plan(*s);
    return (*make_cost_model(p))->collective_time(OpKind::kAllReduce, int64_t{1} << 30, p.group_shape(GroupKind::kWorld, 0));
  };
  EXPECT_GT(pick(", nccl: {algo: ring}").ns, pick("").ns);
}

}  // namespace
}  // namespace fleetsim
