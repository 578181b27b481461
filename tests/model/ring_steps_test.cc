// The step-level ring model (job.collective_model: steps): it agrees with NCCL's
// analytic Ring time on a healthy fabric, a degraded link slows it as the
// analytic degraded model predicts, its closed form (longest paths) equals the
// forward step-by-step run, late ranks and the bottleneck link interact as on a
// pipeline, and the engine uses it deterministically.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "fleetsim/engine.h"
#include "sim/io/scenario_loader.h"
#include "sim/model/cost_model_factory.h"
#include "sim/exec/lockstep_executor.h"
#include "sim/model/ring_steps.h"

namespace fleetsim::nccl {
namespace {

constexpr int64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

Fabric h100(int nodes) {
  Fabric f = *fabric_preset("dgx-h100");
  f.nodes = nodes;
  return f;
}

Options ring_only() {
  Options o;
  o.algo = "ring";
  return o;
}

// Steps and analytic models on the same fabric and options.
struct Pair {
  std::unique_ptr<CostModel> steps, analytic;
  Pair(const Fabric& f, const Options& o) : steps(make_ring_steps_model(f, o)), analytic(make_nccl_model(f, o)) {}
};

double rel(Duration a, Duration b) { return std::abs(a.to_seconds() / b.to_seconds() - 1.0); }

// Group shapes: one node of 8, 4 nodes of 8, 16 nodes of 8, and a data-parallel
// ring with one GPU on each of 8 nodes.
const GroupShape kShapes[] = {{8, 1, 8}, {32, 4, 8}, {128, 16, 8}, {8, 8, 1}};

// Healthy fabric, Ring forced: the step model's time is NCCL's Ring time, from
// the latency-bound 8 B to the bandwidth-bound 16 GiB (they agree by
// construction: each step costs NCCL's per-step latency on the sender, and the
// link rates are NCCL's per-channel ring bandwidth; only rounding differs).
TEST(RingSteps, HomogeneousAgreesWithAnalyticRing) {
  for (const GroupShape& s : kShapes) {
    Pair m(h100(s.nodes), ring_only());
    ASSERT_TRUE(m.steps && m.analytic);
    for (OpKind op : {OpKind::kAllReduce, OpKind::kAllGather, OpKind::kReduceScatter}) {
      for (int64_t bytes : {int64_t{8}, 64 * kKiB, kMiB, 16 * kMiB, 256 * kMiB, kGiB, 16 * kGiB}) {
        const Duration st = m.steps->collective_time(op, bytes, s);
        const Duration an = m.analytic->collective_time(op, bytes, s);
        EXPECT_LT(rel(st, an), 0.05) << op_yaml_name(op) << " " << bytes << " B on " << s.ranks << " ranks: steps "
                                     << st.ns << " ns, analytic " << an.ns << " ns";
        EXPECT_LE(std::abs(st.ns - an.ns), 2) << op_yaml_name(op) << " " << bytes << " B on " << s.ranks;
      }
    }
  }
}

// Without `algo: ring` the step model follows NCCL's choice: where NCCL picks
// NVLS or Tree it returns the analytic time of that choice.
TEST(RingSteps, NonRingChoicesUseTheAnalyticTime) {
  Pair one(h100(1), Options{});
  const GroupShape s{8, 1, 8};
  // 1 GiB on one DGX H100: NCCL picks NVLS.
  EXPECT_EQ(one.steps->collective_time(OpKind::kAllReduce, kGiB, s), one.analytic->collective_time(OpKind::kAllReduce, kGiB, s));
  Pair four(h100(4), Options{});
  const GroupShape w{32, 4, 8};
  EXPECT_EQ(four.steps->collective_time(OpKind::kAllReduce, 4, w), four.analytic->collective_time(OpKind::kAllReduce, 4, w));
  EXPECT_EQ(four.steps->collective_time(OpKind::kAllToAll, kMiB, w), four.analytic->collective_time(OpKind::kAllToAll, kMiB, w));
}

// Broadcast and reduce run as a pipelined chain of n-1 hops: NCCL's time plus
// the pipeline fill, (n-2) chunk times, which NCCL's formula leaves out.
TEST(RingSteps, ChainIsAnalyticPlusPipelineFill) {
  const Fabric f = h100(1);
  auto model = Model::create(f, ring_only());
  ASSERT_TRUE(model.ok());
  Pair m(f, ring_only());
  const GroupShape s{8, 1, 8};
  for (Coll coll : {Coll::kBroadcast, Coll::kReduce}) {
    for (int64_t bytes : {64 * kKiB, 16 * kMiB, kGiB}) {
      const Estimate e = model->estimate(coll, bytes, s);
      ASSERT_EQ(e.algo, Algo::kRing);
      StepRequest req;
      req.coll = coll;
      req.bytes = bytes;
      req.shape = s;
      req.root = 3;
      const StepSchedule sch = ring_schedule(*model, req, e.proto);
      ASSERT_EQ(sch.chunk_us.size(), 1u);
      const double fill = (s.ranks - 2) * sch.chunk_us[0][0];
      const std::vector<double> zero(8, 0.0);
      EXPECT_NEAR(simulate_us(sch, zero), e.time_us + fill, 1e-6 * e.time_us) << coll_name(coll) << " " << bytes;
    }
  }
  // With NCCL's 512 KiB chunks the fill is small on 8 ranks at 1 GiB (86 chunks a channel).
  const OpKind bc = OpKind::kBroadcast;
  EXPECT_LT(rel(m.steps->collective_time(bc, kGiB, s), m.analytic->collective_time(bc, kGiB, s)), 0.08);
}

// A degraded link slows the step model as the analytic degraded model predicts:
// the ring runs at its slowest hop.
TEST(RingSteps, DegradedLinkSlowsLikeTheAnalyticModel) {
  struct Case {
    GroupShape s;
    LinkDegradation d;
  };
  const Case cases[] = {
      {{32, 4, 8}, {DegradeKind::kNicRate, 1, 3, 0.25}},  // one NIC of 8 at 25%: 2 of 16 channels
      {{8, 8, 1}, {DegradeKind::kNicRate, 2, 0, 0.25}},   // a dp ring's only NIC on node 2
      {{32, 4, 8}, {DegradeKind::kGpuDirectOff, 2, 0, 1.0}},
      {{32, 4, 8}, {DegradeKind::kRemoteNuma, 0, 5, 1.0}},
      {{16, 2, 8}, {DegradeKind::kNvlinkRate, 1, 4, 0.25}},
  };
  for (const Case& c : cases) {
    Pair m(h100(c.s.nodes), ring_only());
    const std::vector<LinkDegradation> d{c.d};
    for (int64_t bytes : {256 * kMiB, 4 * kGiB}) {
      const Duration healthy = m.steps->collective_time(OpKind::kAllReduce, bytes, c.s);
      const Duration st = m.steps->collective_time_degraded(OpKind::kAllReduce, bytes, c.s, d);
      const Duration an = m.analytic->collective_time_degraded(OpKind::kAllReduce, bytes, c.s, d);
      EXPECT_GT(st.ns, healthy.ns * 3 / 2) << static_cast<int>(c.d.kind) << " " << bytes;
      EXPECT_LT(rel(st, an), 0.05) << static_cast<int>(c.d.kind) << " " << bytes << ": steps " << st.ns
                                   << " analytic " << an.ns;
    }
  }
}

// The closed form (longest paths from each member's arrival) is the forward
// step-by-step run for any arrivals: checked on rings, a degraded ring and chains.
TEST(RingSteps, SpansEqualTheForwardRun) {
  const Fabric f = h100(4);
  auto model = Model::create(f, ring_only());
  ASSERT_TRUE(model.ok());
  uint64_t x = 12345;
  auto next = [&x] {  // a fixed LCG: the arrivals are part of the test
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(x >> 11) / 9007199254740992.0;
  };
  for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kReduce}) {
    for (bool degraded : {false, true}) {
      StepRequest req;
      req.coll = coll;
      req.bytes = 96 * kMiB;
      req.shape = {32, 4, 8};
      req.root = 5;
      if (degraded) req.degraded = {{DegradeKind::kNicRate, 2, 1, 0.3}, {DegradeKind::kGpuDirectOff, 3, 0, 1.0}};
      const StepSchedule sch = ring_schedule(*model, req, Proto::kSimple);
      // GPUDirect off on node 3 slows every channel's hops into and out of node 3;
      // the slot-1 NIC of node 2 only channels 1 and 9: two channel classes.
      EXPECT_EQ(sch.chunk_us.size(), degraded ? 2u : 1u) << coll_name(coll);
      const std::vector<double> span = completion_spans_us(sch);
      for (int trial = 0; trial < 4; ++trial) {
        std::vector<double> a(32);
        for (double& v : a) v = trial == 0 ? 0.0 : next() * (trial == 1 ? 50.0 : 5000.0);
        double closed = -1e300;
        for (size_t i = 0; i < a.size(); ++i) closed = std::max(closed, a[i] + span[i]);
        const double fwd = simulate_us(sch, a);
        EXPECT_NEAR(closed, fwd, 1e-9 * fwd) << coll_name(coll) << " degraded " << degraded << " trial " << trial;
      }
    }
  }
}

// Arrivals, in ns, of n members: every one at 0 except `late` at `at`.
std::vector<int64_t> one_late(int n, int late, int64_t at) {
  std::vector<int64_t> a(static_cast<size_t>(n), 0);
  a[static_cast<size_t>(late)] = at;
  return a;
}

// A late rank on a ring. Healthy: its own contribution must still cross every
// hop and it must send every step itself, so completion - last arrival is the
// full time (no gain). With a slow NIC elsewhere, the bottleneck hop has worked
// ahead on what did not need the late rank, as far as the receive buffers between
// them hold: completion - last arrival is shorter than the degraded time. On a
// chain, a late rank near the end finds what the buffers upstream hold waiting.
TEST(RingSteps, LateRankAndThePipeline) {
  Pair m(h100(4), ring_only());
  const GroupShape s{32, 4, 8};
  const int64_t bytes = kGiB;
  const std::vector<LinkDegradation> none;
  const Duration t = m.steps->collective_time(OpKind::kAllReduce, bytes, s);
  for (int late : {0, 7, 13, 31}) {
    const Duration after = m.steps->collective_time_after(OpKind::kAllReduce, bytes, s, none,
                                                          one_late(32, late, 3'000'000), 0);
    EXPECT_LE(after.ns, t.ns) << late;
    EXPECT_GT(after.ns, t.ns * 99 / 100) << late;  // a ring: the late rank's own data crosses every hop
  }
  // Node 0's NIC 3 at 25%: hops 7->8 and 31->0 of channels 3 and 11 are the bottleneck.
  const std::vector<LinkDegradation> slow{{DegradeKind::kNicRate, 0, 3, 0.25}};
  const Duration td = m.steps->collective_time_degraded(OpKind::kAllReduce, bytes, s, slow);
  EXPECT_LT(rel(td, m.analytic->collective_time_degraded(OpKind::kAllReduce, bytes, s, slow)), 0.05);
  const int64_t very_late = 2 * td.ns;  // everything that does not need the late rank is done
  const Duration after_d = m.steps->collective_time_after(OpKind::kAllReduce, bytes, s, slow,
                                                          one_late(32, 20, very_late), 0);
  EXPECT_LT(after_d.ns, td.ns * 9 / 10) << after_d.ns << " vs " << td.ns;
  // Rank 8, just past the bottleneck hop 7 -> 8: that hop may run only 4 slices
  // (NCCL's receive buffers) ahead of rank 8's forwarding, so almost nothing is
  // done before it arrives (unbounded buffers gave 0.68 of the degraded time).
  const Duration after_next = m.steps->collective_time_after(OpKind::kAllReduce, bytes, s, slow,
                                                             one_late(32, 8, very_late), 0);
  EXPECT_GT(after_next.ns, td.ns * 95 / 100) << after_next.ns << " vs " << td.ns;
  // The slow hop's own sender late: nothing to gain, it is the bottleneck.
  const Duration after_bottleneck = m.steps->collective_time_after(OpKind::kAllReduce, bytes, s, slow,
                                                                   one_late(32, 7, very_late), 0);
  EXPECT_GT(after_bottleneck.ns, td.ns * 99 / 100);
  // Broadcast from member 0: the chain's last member arriving late finds 8 chunks
  // waiting in its buffer and 8 more in each buffer upstream (NCCL's slots: the
  // senders stop there), so the rest of the chunks still flows after it
  // arrives; a late member in the middle must forward all the data.
  Pair one(h100(1), ring_only());
  const GroupShape s8{8, 1, 8};
  const Duration tb = one.analytic->collective_time(OpKind::kBroadcast, 256 * kMiB, s8);
  const Duration on_time = one.steps->collective_time(OpKind::kBroadcast, 256 * kMiB, s8);
  const Duration tail = one.steps->collective_time_after(OpKind::kBroadcast, 256 * kMiB, s8, none,
                                                         one_late(8, 7, 10 * tb.ns), 0);
  const Duration middle = one.steps->collective_time_after(OpKind::kBroadcast, 256 * kMiB, s8, none,
                                                           one_late(8, 4, 10 * tb.ns), 0);
  EXPECT_LT(tail.ns, on_time.ns * 9 / 10);
  EXPECT_GT(tail.ns, tb.ns / 3);  // unbounded buffers let the whole message wait: < 1/10
  EXPECT_LT(middle.ns, on_time.ns);
  EXPECT_GT(middle.ns, tail.ns);
  // A late member of a reduce next to its root: the partial sums upstream wait
  // for it (8 chunks a buffer), so little more than its own hop remains.
  const Duration reduce_on_time = one.steps->collective_time(OpKind::kReduce, 256 * kMiB, s8);
  const Duration reduce_late = one.steps->collective_time_after(OpKind::kReduce, 256 * kMiB, s8, none,
                                                                one_late(8, 7, 10 * tb.ns), 0);
  EXPECT_LT(reduce_late.ns, tb.ns);
  EXPECT_LT(reduce_late.ns, reduce_on_time.ns * 9 / 10);
}

// In the engine: `collective_model: steps` loads, runs on the event executor,
// matches the analytic model on a healthy job whose collectives NCCL runs as
// rings, and gives byte-identical results twice.
Plan plan_of(const std::string& model, const std::string& extra) {
  const std::string yaml =
      "name: s\nfleet: {system: dgx-h100, nodes: 4}\nparallel: {tp: 8, dp: 4}\njob: {steps: 30, seed: 3" + model +
      "}\nstep:\n  - compute: {name: c, time: 50ms, jitter: 2%}\n  - allreduce: {name: g, group: dp, bytes: 1GiB}\n"
      "  - allgather: {name: w, group: world, bytes: 256MiB}\n" + extra;
  auto s = load_scenario_text(yaml, "s.yaml");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.errors()[0].to_string());
  return *compile_plan(*s);
}

struct Ends final : Observer {
  std::vector<int64_t> t;
  void on_step_end(int, int64_t, SimTime at) override { t.push_back(at.ns); }
};

TEST(RingSteps, EngineRunsTheStepModel) {
  const Plan steps = plan_of(", collective_model: steps", "");
  const Plan nccl = plan_of("", "");
  EXPECT_FALSE(fleetsim::lockstep_eligible(steps).ok);
  auto cs = make_cost_model(steps);
  auto cn = make_cost_model(nccl);
  ASSERT_TRUE(cs.ok() && cn.ok());
  EXPECT_TRUE((*cs)->wants_arrivals());
  EXPECT_FALSE((*cn)->wants_arrivals());
  Ends a, b, c;
  const RunResult ra = run_simulation(steps, **cs, {&a});
  const RunResult rb = run_simulation(steps, **cs, {&b});
  const RunResult rc = run_simulation(nccl, **cn, {&c});
  EXPECT_EQ(ra.steps_completed, 30);
  EXPECT_EQ(a.t, b.t);  // deterministic
  EXPECT_EQ(ra.end, rb.end);
  // Ring allreduce on the dp rings and NCCL's Ring for the world allgather: the
  // step model adds nothing on a healthy fabric (a late rank gains nothing on a ring).
  EXPECT_NEAR(ra.end.to_seconds(), rc.end.to_seconds(), 1e-6 * rc.end.to_seconds());
}

// With a slow NIC the job slows under both models by about the same amount.
TEST(RingSteps, EngineSlowNicMatchesAnalytic) {
  const std::string fault = "faults:\n  - link: {node: 2, nic: 3, bandwidth: 25%}\n";
  const Plan steps = plan_of(", collective_model: steps", fault);
  const Plan nccl = plan_of("", fault);
  auto cs = make_cost_model(steps);
  auto cn = make_cost_model(nccl);
  const RunResult rs = run_simulation(steps, **cs, {});
  const RunResult rn = run_simulation(nccl, **cn, {});
  EXPECT_EQ(rs.steps_completed, 30);
  EXPECT_LT(std::abs(rs.end.to_seconds() / rn.end.to_seconds() - 1.0), 0.05);
}

// A slow NIC on node 2 and a straggler (rank 3) in the same dp ring: the analytic
// model charges the straggler's lateness plus the whole degraded all-reduce; in
// the step model the slow hops (into and out of node 2) work ahead on what does
// not need rank 3, but only as far as NCCL's receive buffers between them and
// rank 3 hold (4 slices a connection), so the job's steps are a little shorter.
// (With unbounded buffers they were more than 2% shorter.)
TEST(RingSteps, EngineBottleneckWorksAheadOfAStraggler) {
  const std::string faults =
      "faults:\n  - link: {node: 2, nic: 3, bandwidth: 25%}\n  - straggler: {ranks: [3], slowdown: 1.3}\n";
  const Plan steps = plan_of(", collective_model: steps", faults);
  const Plan nccl = plan_of("", faults);
  const RunResult rs = run_simulation(steps, **make_cost_model(steps), {});
  const RunResult rn = run_simulation(nccl, **make_cost_model(nccl), {});
  ASSERT_EQ(rs.steps_completed, 30);
  ASSERT_EQ(rn.steps_completed, 30);
  EXPECT_LT(rs.end.ns, rn.end.ns);
  EXPECT_GT(rs.end.to_seconds(), 0.98 * rn.end.to_seconds()) << rs.end.ns << " vs " << rn.end.ns;
}

}  // namespace
}  // namespace fleetsim::nccl
