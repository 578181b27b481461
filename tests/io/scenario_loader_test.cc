// Tests for sim/io/scenario_loader.h: the documented example loads with the
// right values, defaults and presets apply, --set overrides work, and a table
// of bad inputs each yields one located diagnostic saying what was expected.
#include "sim/io/scenario_loader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

namespace fleetsim {
namespace {

// The example of docs/scenario-format.md, verbatim.
constexpr const char* kExample = R"(name: step400-hang
description: Rank 0 all-reduces the loss to log it every 400 steps; no other rank does.
fleet:
  system: dgx-h100        # preset: 8 GPUs a node on NVSwitch, 8 x 400 Gb/s NICs a node
  nodes: 4                # 32 ranks
parallel: {tp: 8, dp: 4}  # groups tp, dp (and pp if given); world always exists
job:
  steps: 1000
  seed: 1
  watchdog: 10min         # PyTorch's NCCL default; "off" disables it
  telemetry_period: 1s
step:                     # what every rank runs, every step, in order
  - compute: {name: forward, time: 150ms, jitter: 1%}
  - allreduce: {name: tp_activations, group: tp, bytes: 64MiB}
  - compute: {name: backward, time: 300ms, jitter: 1%}
  - allreduce: {name: grads, group: dp, bytes: 1.5GiB}
  - when: "rank == 0 && step % 400 == 0"
    do:
      - allreduce: {name: loss, group: world, bytes: 4B}
      - log: "step {step} loss {loss}"    # printing a value makes the CPU wait for the GPU
faults:
  - straggler: {ranks: [17], slowdown: 1.3, from_step: 100}
  - stall: {rank: 5, at_step: 250, where: data_loader}   # its CPU never returns
  - crash: {rank: 9, at_step: 300}
  - skip: {rank: 3, op: grads, at_step: 77}              # the rank misses one collective
expect: {outcome: hang, hang_step: 400}
)";

constexpr const char* kMinimal = "name: tiny\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n";

std::string all_errors(const Result<Scenario>& r) {
  std::string s;
  if (!r.ok()) for (const Diagnostic& d : r.errors()) s += d.to_string() + "\n";
  return s;
}

Scenario load_ok(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  Result<Scenario> r = load_scenario_text(yaml, "test.yaml", overrides);
  EXPECT_TRUE(r.ok()) << all_errors(r);
  return r.ok() ? r.value() : Scenario{};
}

// The documented example loads with the fleet, groups, program and faults it spells out.
TEST(ScenarioLoaderTest, ExampleLoadsWithItsValues) {
  const Scenario s = load_ok(kExample);
  EXPECT_EQ(s.name, "step400-hang");
  EXPECT_EQ(s.file, "test.yaml");
  EXPECT_EQ(s.ranks(), 32);
  EXPECT_EQ(s.fleet.system, "dgx-h100");
  EXPECT_EQ(s.parallel.tp, 8);
  EXPECT_EQ(s.parallel.dp, 4);
  EXPECT_EQ(s.parallel.pp, 1);
  EXPECT_FALSE(s.parallel.pp_given);
  EXPECT_EQ(s.job.steps, 1000);
  ASSERT_TRUE(s.job.watchdog.has_value());
  EXPECT_EQ(*s.job.watchdog, Duration::minutes(10));
  EXPECT_EQ(s.job.telemetry_period, Duration::seconds(1));
  ASSERT_EQ(s.step.size(), 5u);
  EXPECT_EQ(s.step[0].kind, OpKind::kCompute);
  EXPECT_EQ(s.step[0].name, "forward");
  EXPECT_EQ(s.step[0].time, Duration::millis(150));
  EXPECT_DOUBLE_EQ(s.step[0].jitter.cv, 0.01);
  EXPECT_EQ(s.step[0].loc.line, 13);
  EXPECT_EQ(s.step[0].loc.col, 5);
  EXPECT_EQ(s.step[1].group, "tp");
  EXPECT_EQ(s.step[1].bytes, 64LL << 20);
  EXPECT_EQ(s.step[3].bytes, 3LL << 29);  // 1.5GiB
  EXPECT_EQ(s.step[3].dtype, DType::kFloat);
  const Op& when = s.step[4];
  EXPECT_EQ(when.kind, OpKind::kWhen);
  EXPECT_EQ(when.when, "rank == 0 && step % 400 == 0");
  EXPECT_EQ(when.when_loc.line, 17);
  EXPECT_EQ(when.when_loc.col, 12);  // first character inside the quotes
  ASSERT_EQ(when.then_ops.size(), 2u);
  EXPECT_EQ(when.then_ops[0].name, "loss");
  EXPECT_EQ(when.then_ops[0].bytes, 4);
  EXPECT_EQ(when.then_ops[1].kind, OpKind::kLog);
  EXPECT_EQ(when.then_ops[1].text, "step {step} loss {loss}");
  EXPECT_TRUE(when.else_ops.empty());
  ASSERT_EQ(s.faults.size(), 4u);
  EXPECT_EQ(s.faults[0].kind, FaultKind::kStraggler);
  EXPECT_EQ(s.faults[0].ranks, std::vector<int>{17});
  EXPECT_DOUBLE_EQ(s.faults[0].slowdown, 1.3);
  EXPECT_EQ(s.faults[0].from_step, 100);
  EXPECT_EQ(s.faults[0].to_step, INT64_MAX);
  EXPECT_EQ(s.faults[1].kind, FaultKind::kStall);
  EXPECT_EQ(s.faults[1].where, "data_loader");
  EXPECT_EQ(s.faults[1].at_step, 250);
  EXPECT_EQ(s.faults[2].kind, FaultKind::kCrash);
  EXPECT_EQ(s.faults[2].ranks, std::vector<int>{9});
  EXPECT_EQ(s.faults[3].kind, FaultKind::kSkip);
  EXPECT_EQ(s.faults[3].op, "grads");
  EXPECT_EQ(s.faults[3].at_step, 77);
  EXPECT_EQ(s.faults[3].loc.line, 25);
  EXPECT_EQ(s.expect.outcome, std::optional<std::string>("hang"));
  EXPECT_EQ(s.expect.hang_step, std::optional<int64_t>(400));
  EXPECT_FALSE(s.expect.steps_completed.has_value());
}

// The example quoted in docs/scenario-format.md is the one tested here, and it loads.
TEST(ScenarioLoaderTest, DocumentedExampleMatches) {
  std::ifstream in(std::string(FLEETSIM_SOURCE_DIR) + "/docs/scenario-format.md");
  ASSERT_TRUE(in.good());
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t begin = doc.find("```yaml\n");
  ASSERT_NE(begin, std::string::npos);
  const size_t end = doc.find("```", begin + 8);
  const std::string example = doc.substr(begin + 8, end - begin - 8);
  EXPECT_EQ(example, kExample);
  EXPECT_TRUE(load_scenario_text(example, "doc.yaml").ok());
}

// Keys left out take the defaults documented in scenario.h.
TEST(ScenarioLoaderTest, DefaultsApply) {
  const Scenario s = load_ok("name: d\nfleet: {nodes: 2}\nstep:\n  - allreduce: {bytes: 1KiB}\n  - sync\n");
  EXPECT_EQ(s.fleet.system, "dgx-h100");
  EXPECT_EQ(s.ranks(), 16);
  EXPECT_EQ(s.parallel.tp, 1);
  EXPECT_EQ(s.parallel.dp, 16);
  EXPECT_EQ(s.job.steps, 1);
  EXPECT_EQ(s.job.seed, 1u);
  EXPECT_EQ(s.job.watchdog, std::optional<Duration>(Duration::minutes(10)));
  EXPECT_EQ(s.job.launch_queue, 4);
  EXPECT_EQ(s.job.flight_recorder_entries, 2000);
  EXPECT_EQ(s.job.dump_wait, Duration::seconds(60));
  EXPECT_EQ(s.job.crash_detect, Duration::seconds(5));
  ASSERT_EQ(s.step.size(), 2u);
  EXPECT_EQ(s.step[0].name, "allreduce");
  EXPECT_EQ(s.step[0].group, "world");
  EXPECT_EQ(s.step[0].dtype, DType::kFloat);
  EXPECT_EQ(s.step[0].bytes, 1024);
  EXPECT_EQ(s.step[1].kind, OpKind::kSync);
  EXPECT_TRUE(s.faults.empty());
  EXPECT_FALSE(s.expect.outcome.has_value());
}

// A preset fills every hardware field; explicit keys override it.
TEST(ScenarioLoaderTest, PresetFillsAndExplicitKeysOverride) {
  const Scenario a = load_ok("name: a\nfleet: {system: dgx-a100, nodes: 1}\nstep: [sync]\n");
  EXPECT_EQ(a.fleet.sms_per_gpu, 108);
  EXPECT_DOUBLE_EQ(a.fleet.nvlink_bandwidth_GBps, 300.0);
  EXPECT_DOUBLE_EQ(a.fleet.nic_bandwidth_Gbps, 200.0);
  EXPECT_EQ(a.fleet.nics_per_node, 8);
  EXPECT_EQ(a.fleet.net_latency, Duration::micros(5));
  const Scenario b = load_ok(
      "name: b\nfleet: {system: dgx-a100, nodes: 1, gpus_per_node: 4, nvlink_bandwidth: 100GB/s,\n"
      "        nic_bandwidth: 100Gb/s, net_latency: 2.5us, nvlink_latency: 1us}\nstep: [sync]\n");
  EXPECT_EQ(b.ranks(), 4);
  EXPECT_EQ(b.fleet.sms_per_gpu, 108);
  EXPECT_DOUBLE_EQ(b.fleet.nvlink_bandwidth_GBps, 100.0);
  EXPECT_DOUBLE_EQ(b.fleet.nic_bandwidth_Gbps, 100.0);
  EXPECT_EQ(b.fleet.net_latency, Duration::nanos(2500));
  EXPECT_EQ(b.fleet.nvlink_latency, Duration::micros(1));
  const Scenario c = load_ok("name: c\nfleet: {system: custom, nodes: 3, gpus_per_node: 2}\nstep: [sync]\n");
  EXPECT_EQ(c.ranks(), 6);
}

// --set job.steps=10 replaces the value in the file.
TEST(ScenarioLoaderTest, SetOverridesAValue) {
  const Scenario s = load_ok(kMinimal, {"job.steps=10", "job.watchdog=off"});
  EXPECT_EQ(s.job.steps, 10);
  EXPECT_FALSE(s.job.watchdog.has_value());
  EXPECT_EQ(load_ok(kExample, {"job.steps=500"}).job.steps, 500);
}

// Overrides apply before validation: fewer steps put the example's faults out of range.
TEST(ScenarioLoaderTest, SetIsValidatedLikeTheFile) {
  Result<Scenario> r = load_scenario_text(kExample, "ex.yaml", {"job.steps=10"});
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 4u);  // from_step 100 and at_step 250, 300, 77
  EXPECT_EQ(r.errors()[0].to_string(),
            "ex.yaml:22:56: error: 'straggler.from_step' = 100 is outside the job's steps 1..10");
}

// --set fleet.nodes=2 changes the rank count and dp is derived again from it.
TEST(ScenarioLoaderTest, SetFleetNodesRederivesDp) {
  const std::string yaml = "name: r\nfleet: {nodes: 4}\nparallel: {tp: 8}\nstep: [sync]\n";
  EXPECT_EQ(load_ok(yaml).parallel.dp, 4);
  const Scenario s = load_ok(yaml, {"fleet.nodes=2"});
  EXPECT_EQ(s.ranks(), 16);
  EXPECT_EQ(s.parallel.dp, 2);
  EXPECT_EQ(load_ok(yaml, {"parallel.tp=4"}).parallel.dp, 8);
}

// --set may create a section the file does not have, and index into lists.
TEST(ScenarioLoaderTest, SetCreatesMissingSectionsAndIndexesLists) {
  const Scenario s = load_ok(kMinimal, {"job.seed=42", "step.0.compute.time=5ms", "parallel={tp: 2, pp: 2}"});
  EXPECT_EQ(s.job.seed, 42u);
  EXPECT_EQ(s.step[0].time, Duration::millis(5));
  EXPECT_TRUE(s.parallel.pp_given);
  EXPECT_EQ(s.parallel.dp, 2);
}

// send/recv, broadcast roots, barriers, else blocks and mismatches load when valid.
TEST(ScenarioLoaderTest, PipelineAndRootedOpsLoad) {
  const Scenario s = load_ok(R"(name: pipe
fleet: {nodes: 1}
parallel: {tp: 2, pp: 2}
job: {steps: 5}
step:
  - send: {name: act, to: next, bytes: 1MB, dtype: bf16}
  - recv: {from: prev, bytes: 1MB}
  - broadcast: {group: tp, bytes: 4B, root: 1}
  - barrier: {group: pp, dtype: double}
  - when: step == 1
    do: [sync]
    else:
      - cpu: {name: load, time: 0.5s}
faults:
  - mismatch: {rank: 7, op: act, at_step: 5, dtype: fp16}
)");
  EXPECT_EQ(s.parallel.dp, 2);
  EXPECT_EQ(s.step[0].peer, "next");
  EXPECT_EQ(s.step[0].group, "pp");
  EXPECT_EQ(s.step[0].dtype, DType::kBFloat16);
  EXPECT_EQ(s.step[0].bytes, 1000000);
  EXPECT_EQ(s.step[1].peer, "prev");
  EXPECT_EQ(s.step[2].root, 1);
  EXPECT_EQ(s.step[3].bytes, 8);
  EXPECT_EQ(s.step[4].when_loc.col, 11);  // a plain scalar: no quote to skip
  ASSERT_EQ(s.step[4].else_ops.size(), 1u);
  EXPECT_EQ(s.step[4].else_ops[0].time, Duration::millis(500));
  ASSERT_EQ(s.faults.size(), 1u);
  EXPECT_EQ(s.faults[0].dtype, std::optional<DType>(DType::kHalf));
  EXPECT_FALSE(s.faults[0].bytes.has_value());
}

// load_scenario reads a file and labels diagnostics with its path.
TEST(ScenarioLoaderTest, LoadsFromFile) {
  const std::string path = ::testing::TempDir() + "loader_test_scenario.yaml";
  {
    std::ofstream out(path);
    out << kExample;
  }
  Result<Scenario> r = load_scenario(path);
  ASSERT_TRUE(r.ok()) << all_errors(r);
  EXPECT_EQ(r->file, path);
  {
    std::ofstream out(path);
    out << "name: x\n";
  }
  r = load_scenario(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].loc.file, path);
  std::remove(path.c_str());
}

// A missing file is one diagnostic that names the file.
TEST(ScenarioLoaderTest, MissingFileNamesIt) {
  Result<Scenario> r = load_scenario("/nonexistent/dir/none.yaml");
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.errors().size(), 1u);
  EXPECT_NE(r.errors()[0].to_string().find("/nonexistent/dir/none.yaml"), std::string::npos);
  EXPECT_NE(r.errors()[0].message.find("cannot open"), std::string::npos);
}

// Every problem in a file is reported, up to kMaxDiagnostics.
TEST(ScenarioLoaderTest, CollectsDiagnosticsUpToTheCap) {
  std::string yaml = "name: t\nfleet: {nodes: 1}\nstep:\n  - compute: {time: 1ms}\n  - log: '{a} {b}'\n";
  EXPECT_EQ(load_scenario_text(yaml, "t.yaml").errors().size(), 2u);
  for (int i = 0; i < 30; ++i) yaml += "  - compute: {time: " + std::to_string(i) + "parsecs}\n";
  EXPECT_EQ(load_scenario_text(yaml, "t.yaml").errors().size(), static_cast<size_t>(kMaxDiagnostics));
}

// Diagnostics print GCC-style: FILE:LINE:COL: error: MESSAGE.
TEST(ScenarioLoaderTest, DiagnosticFormat) {
  Result<Scenario> r = load_scenario_text("name: t\nfleet: {nodes: 0}\nstep: [sync]\n", "s.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors()[0].to_string(), "s.yaml:2:16: error: 'fleet.nodes' must be in 1..16777216 (got 0)");
}

struct BadCase {
  const char* yaml;
  const char* set;  // one --set override, or ""
  const char* message;
  int line;
  int col;
};

// Each row: an input, the substring its first diagnostic must contain, and where it must point.
constexpr BadCase kBadCases[] = {
    // unknown top-level key
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njobb: {steps: 3}\n",
     "", "unknown key 'jobb' in 'scenario (top level)' (did you mean 'job'?)", 4, 1},
    // unknown fleet key
    {"name: t\nfleet: {nodes: 1, gpus_per_nod: 8}\nstep: [{compute: {time: 1ms}}]\n",
     "", "unknown key 'gpus_per_nod' in 'fleet' (did you mean 'gpus_per_node'?)", 2, 19},
    // unknown job key
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: {stepz: 3}\n",
     "", "unknown key 'stepz' in 'job' (did you mean 'steps'?)", 4, 7},
    // unknown op key
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms, jiter: 1%}}]\n",
     "", "unknown key 'jiter' in 'compute' (did you mean 'jitter'?)", 3, 30},
    // unknown fault key
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nfaults: [{crash: {rank: 0, at_step: 1, att_step: 2}}]\n",
     "", "unknown key 'att_step' in 'crash' (did you mean 'at_step'?)", 4, 40},
    // unknown parallel key
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nparallel: {tpp: 2}\n",
     "", "unknown key 'tpp' in 'parallel' (did you mean 'tp'?)", 4, 12},
    // unknown expect key
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nexpect: {outcom: hang}\n",
     "", "unknown key 'outcom' in 'expect' (did you mean 'outcome'?)", 4, 10},
    // unknown when-block key
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: step == 1\n    do: [sync]\n    els: [sync]\n",
     "", "unknown key 'els' in 'when' (did you mean 'else'?)", 6, 5},
    // duration with an unknown unit
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 150 parsecs}}]\n",
     "", "unknown duration unit 'parsecs'", 3, 25},
    // duration unit misspelt
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: {telemetry_period: 10 mins}\n",
     "", "unknown duration unit 'mins' in '10 mins'; expected one of: ns us ms s min h", 4, 25},
    // duration without a unit
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 150}}]\n",
     "", "has no unit", 3, 25},
    // size without unit not an integer
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {bytes: 1.5}}]\n",
     "", "without a unit must be a whole number of bytes", 3, 28},
    // size with an unknown unit
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {bytes: 64MB/s}}]\n",
     "", "unknown size unit 'MB/s'", 3, 28},
    // size not whole bytes
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {bytes: 1.5B}}]\n",
     "", "not a whole number of bytes", 3, 28},
    // negative compute time
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: -5ms}}]\n",
     "", "'compute.time': duration '-5ms' is negative", 3, 25},
    // negative size
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {bytes: -4B}}]\n",
     "", "size '-4B' is negative", 3, 28},
    // negative job duration
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: {dump_wait: -1s}\n",
     "", "'job.dump_wait': duration '-1s' is negative", 4, 18},
    // zero telemetry period
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: {telemetry_period: 0}\n",
     "", "'job.telemetry_period' must be > 0", 4, 25},
    // unknown group
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {group: tq, bytes: 4B}}]\n",
     "", "unknown group 'tq' (did you mean 'tp'?); expected one of: world, tp, dp", 3, 28},
    // pp group without pp
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {group: pp, bytes: 4B}}]\n",
     "", "group 'pp' exists only when parallel.pp is given", 3, 28},
    // tp*pp does not divide ranks
    {"name: t\nfleet: {nodes: 4}\nparallel: {tp: 3}\nstep: [{compute: {time: 1ms}}]\n",
     "", "tp*pp = 3 does not divide the fleet's 32 ranks (4 nodes x 8 GPUs)", 3, 11},
    // tp*dp*pp differs from ranks
    {"name: t\nfleet: {nodes: 4}\nparallel: {tp: 8, dp: 2}\nstep: [{compute: {time: 1ms}}]\n",
     "", "tp*dp*pp = 8*2*1 = 16 does not equal the fleet's 32 ranks (4 nodes x 8 GPUs); set parallel.dp=4 (or omit dp to derive it) to fill the fleet", 3, 11},
    // zero tp
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nparallel: {tp: 0}\n",
     "", "'parallel.tp' must be in 1..16777216 (got 0)", 4, 16},
    // expression: single '='
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: \"rank = 0\"\n    do: [sync]\n",
     "", "in 'when' expression: unexpected character '='; did you mean '=='?", 4, 17},
    // expression: unknown variable
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: \"rnak == 0\"\n    do: [sync]\n",
     "", "unknown variable 'rnak' (did you mean 'rank'?)", 4, 12},
    // expression: dangling operator
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: rank == 0 &&\n    do: [sync]\n",
     "", "expected an operand after '&&', got end of expression", 4, 23},
    // expression: unclosed paren
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: '(rank == 0'\n    do: [sync]\n",
     "", "expected ')' to close '(' at column 1, got end of expression", 4, 22},
    // expression: unmatched paren
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: \"rank == 0)\"\n    do: [sync]\n",
     "", "unmatched ')'", 4, 21},
    // expression: constant modulo by zero
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: \"step % 0 == 0\"\n    do: [sync]\n",
     "", "modulo by the constant 0", 4, 19},
    // fault on a rank that does not exist
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nfaults: [{crash: {rank: 8, at_step: 1}}]\n",
     "", "rank 8 does not exist; the fleet has 8 ranks (0..7)", 4, 25},
    // straggler rank list with a bad rank
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nfaults: [{straggler: {ranks: [1, -2], slowdown: 2}}]\n",
     "", "'straggler.ranks' must be in 0..2147483647 (got -2)", 4, 34},
    // fault on an op that does not exist
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {name: grads, bytes: 4B}}]\nfaults: [{skip: {rank: 0, op: gradz, at_step: 1}}]\n",
     "", "unknown op 'gradz' in the step program (did you mean 'grads'?)", 4, 31},
    // at_step past the last step
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: {steps: 10}\nfaults: [{crash: {rank: 0, at_step: 11}}]\n",
     "", "'crash.at_step' = 11 is outside the job's steps 1..10", 5, 37},
    // at_step zero
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nfaults: [{stall: {rank: 0, at_step: 0}}]\n",
     "", "'stall.at_step' must be >= 1 (got 0)", 4, 37},
    // unknown fault kind
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nfaults: [{crahs: {rank: 0, at_step: 1}}]\n",
     "", "unknown fault kind 'crahs' (did you mean 'crash'?)", 4, 11},
    // mismatch on a non-collective
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {name: fwd, time: 1ms}}]\nfaults: [{mismatch: {rank: 0, op: fwd, at_step: 1, dtype: bf16}}]\n",
     "", "'mismatch' needs a collective op, but 'fwd' is compute", 4, 35},
    // mismatch that changes nothing
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {name: g, bytes: 4B}}]\nfaults: [{mismatch: {rank: 0, op: g, at_step: 1}}]\n",
     "", "'mismatch' needs 'bytes' or 'dtype'", 4, 21},
    // straggler slowdown zero
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nfaults: [{straggler: {rank: 1, slowdown: 0}}]\n",
     "", "'straggler.slowdown' must be > 0", 4, 42},
    // unknown op kind
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduse: {bytes: 4B}}]\n",
     "", "unknown op 'allreduse' (did you mean 'allreduce'?)", 3, 9},
    // unknown bare op
    {"name: t\nfleet: {nodes: 1}\nstep: [comptue]\n",
     "", "unknown op 'comptue' (did you mean 'compute'?)", 3, 8},
    // missing name
    {"fleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "", "missing required key 'name' in 'scenario (top level)'", 1, 1},
    // missing fleet
    {"name: t\nstep: [{compute: {time: 1ms}}]\n",
     "", "missing required key 'fleet'", 1, 1},
    // missing step
    {"name: t\nfleet: {nodes: 1}\n",
     "", "missing required key 'step'", 1, 1},
    // missing fleet.nodes
    {"name: t\nfleet: {system: dgx-h100}\nstep: [{compute: {time: 1ms}}]\n",
     "", "missing required key 'nodes' in 'fleet'", 2, 8},
    // missing bytes
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {name: x}}]\n",
     "", "missing required key 'bytes' in 'allreduce'", 3, 20},
    // custom system without gpus_per_node
    {"name: t\nfleet: {system: custom, nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "", "missing required key 'gpus_per_node' in 'fleet (system: custom)'", 2, 8},
    // string where an int is expected
    {"name: t\nfleet: {nodes: four}\nstep: [{compute: {time: 1ms}}]\n",
     "", "expected an integer for 'fleet.nodes', got 'four'", 2, 16},
    // list where a mapping is expected
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: [1, 2]\n",
     "", "expected a mapping for 'job', got a list", 4, 6},
    // mapping where a string is expected
    {"name: {a: 1}\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "", "expected a string for 'name', got a mapping", 1, 7},
    // mapping where a list is expected
    {"name: t\nfleet: {nodes: 1}\nstep: {compute: {time: 1ms}}\n",
     "", "expected a list of ops for 'step', got a mapping", 3, 7},
    // duplicate key in a flow mapping
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: {steps: 3, steps: 4}\n",
     "", "duplicate key 'steps' in 'job'", 4, 17},
    // duplicate top-level key
    {"name: t\nname: u\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "", "duplicate key 'name' in 'scenario (top level)'", 2, 1},
    // empty step list
    {"name: t\nfleet: {nodes: 1}\nstep: []\n",
     "", "'step' must list at least one op", 3, 7},
    // op mapping with two op keys
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - compute: {time: 1ms}\n    sync: {}\n",
     "", "an op mapping must have exactly one op key; found 'compute' and 'sync'", 5, 5},
    // when without do
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: \"rank == 0\"\n",
     "", "'when' needs a 'do' list", 4, 5},
    // do without when
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - compute: {time: 1ms}\n  - do: [sync]\n",
     "", "'do' without 'when'", 5, 5},
    // empty do list
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - when: step == 1\n    do: []\n",
     "", "'do' must list at least one op", 5, 9},
    // send when pp is 1
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - send: {to: next, bytes: 4B}\n",
     "", "'send' needs pipeline stages, but pp is 1", 4, 5},
    // recv when pp is given as 1
    {"name: t\nfleet: {nodes: 1}\nparallel: {pp: 1}\nstep:\n  - recv: {from: prev, bytes: 4B}\n",
     "", "'recv' needs pipeline stages, but pp is 1", 5, 5},
    // send to an unknown peer
    {"name: t\nfleet: {nodes: 1}\nparallel: {pp: 2}\nstep: [{send: {to: nxt, bytes: 4B}}]\n",
     "", "unknown pipeline peer 'nxt' (did you mean 'next'?)", 4, 20},
    // broadcast root outside the group
    {"name: t\nfleet: {nodes: 1}\nparallel: {tp: 2}\nstep: [{broadcast: {group: tp, bytes: 4B, root: 2}}]\n",
     "", "root 2 is outside group 'tp' of size 2; expected 0..1", 4, 49},
    // log placeholder naming nothing
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - log: \"step {step} loss {}\"\n",
     "", "log placeholder '{}' names nothing", 4, 28},
    // log placeholder naming an unknown op
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - allreduce: {name: loss, bytes: 4B}\n  - log: loss {lss}\n",
     "", "unknown log placeholder 'lss' (did you mean 'loss'?)", 5, 15},
    // log placeholder left open
    {"name: t\nfleet: {nodes: 1}\nstep:\n  - log: 'rank {rank'\n",
     "", "unclosed '{' in log text", 4, 16},
    // unknown dtype
    {"name: t\nfleet: {nodes: 1}\nstep: [{allreduce: {bytes: 4B, dtype: bfloat61}}]\n",
     "", "unknown dtype 'bfloat61' (did you mean 'bfloat16'?)", 3, 39},
    // unknown preset
    {"name: t\nfleet: {system: dgx-h10, nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "", "unknown fleet.system preset 'dgx-h10' (did you mean 'dgx-h100'?)", 2, 17},
    // bad bandwidth unit
    {"name: t\nfleet: {nodes: 1, nvlink_bandwidth: 450GB}\nstep: [{compute: {time: 1ms}}]\n",
     "", "unknown bandwidth unit 'GB'", 2, 37},
    // jitter without a percent sign
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms, jitter: 1}}]\n",
     "", "expected a percentage like 1% or 0.5%, got '1'", 3, 38},
    // watchdog with a bad value
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: {watchdog: never}\n",
     "", "expected a duration like 10min or 'off' for 'job.watchdog', got 'never'", 4, 17},
    // watchdog zero
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\njob: {watchdog: 0}\n",
     "", "'job.watchdog' must be > 0; use 'off' to disable it", 4, 17},
    // unknown expected outcome
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\nexpect: {outcome: hung}\n",
     "", "unknown expect.outcome 'hung' (did you mean 'hang'?)", 4, 19},
    // top level not a mapping
    {"- a\n- b\n",
     "", "expected a mapping for 'scenario (top level)', got a list", 1, 1},
    // YAML syntax error
    {"name: t\nfleet: {nodes: 1\nstep: []\n",
     "", "YAML syntax error: end of map flow not found", 3, 5},
    // YAML bad indentation
    {"name: t\n  bad: 1\n",
     "", "YAML syntax error: illegal map value", 2, 6},
    // --set with an unknown key
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "job.stepz=10", "unknown key 'stepz' in 'job' (did you mean 'steps'?)", 1, 11},
    // --set with a bad value
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "job.steps=ten", "expected an integer for 'job.steps', got 'ten'", 1, 17},
    // --set without '='
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "job.steps", "has no '='; expected KEY=VALUE", 1, 7},
    // --set into a scalar
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "name.x=1", "cannot set 'name.x': 'name' is 't', not a mapping", 1, 12},
    // --set with a YAML error
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "job.steps=[1", "YAML syntax error", 1, 17},
    // --set with an unknown top-level key
    {"name: t\nfleet: {nodes: 1}\nstep: [{compute: {time: 1ms}}]\n",
     "nmae=x", "unknown key 'nmae' in 'scenario (top level)' (did you mean 'name'?)", 1, 7},
};

// Every bad input in the table is rejected with a located, one-line diagnostic.
TEST(ScenarioLoaderTest, BadInputsGiveLocatedDiagnostics) {
  for (const BadCase& c : kBadCases) {
    SCOPED_TRACE(std::string("yaml:\n") + c.yaml + "--set: " + c.set);
    std::vector<std::string> overrides;
    if (*c.set) overrides.push_back(c.set);
    Result<Scenario> r = load_scenario_text(c.yaml, "bad.yaml", overrides);
    ASSERT_FALSE(r.ok());
    const Diagnostic& d = r.errors()[0];
    EXPECT_NE(d.message.find(c.message), std::string::npos) << all_errors(r);
    EXPECT_EQ(d.loc.file, *c.set ? "--set " + std::string(c.set) : std::string("bad.yaml"));
    EXPECT_EQ(d.loc.line, c.line) << all_errors(r);
    EXPECT_EQ(d.loc.col, c.col) << all_errors(r);
    EXPECT_EQ(d.to_string().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace fleetsim
