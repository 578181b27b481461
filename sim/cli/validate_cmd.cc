// `fleetsim validate SCENARIO.yaml --backend mpi|nccl|torch --ranks N`: runs the
// scenario for real (one MPI process per rank scaled to a CPU, one process per
// GPU with NCCL, or the exported PyTorch script under torchrun) and in the simulator with
// the calibrated collective model on the same scaled scenario, then prints the
// two side by side: outcome, hang step, first timeout, diagnose's culprit, step
// and collective times with the relative error.
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "sim/cli/commands.h"
#include "sim/cli/validate_torch.h"
#include "sim/diagnose/diagnose.h"
#include "sim/io/scenario_loader.h"
#include "sim/io/units.h"
#include "sim/model/calibration.h"
#include "sim/run/out_dir.h"
#include "sim/run/run.h"
#include "validate/calibrate_job.h"
#include "validate/launcher.h"
#include "validate/real_record.h"
#include "validate/scaling.h"
#include "validate/torch_backend.h"

namespace fs = std::filesystem;

namespace fleetsim::cli {

namespace {

struct ValidateArgs {
  std::string scenario, backend = "mpi", out, calibration, hostfile, python = ".venv/bin/python";
  std::string timeout = "5s", grace = "5s", dump_wait = "1s", time_scale = "0.1", bytes_scale = "1/1024";
  std::vector<std::string> sets;
  std::optional<int> ranks;  // unset: the scenario's count
  bool spin_demo = false;
  bool force = false;
  int64_t spin_step = 3;
};

struct Side {
  std::string label, outcome, hang_step = "-", first_timeout = "-", culprit = "-";
  int64_t steps_completed = 0;
  double step_p50 = 0, step_mean = 0;
  std::map<std::string, double> coll_ms;  // op name -> median duration_ms
};

int fail(const std::vector<Diagnostic>& errors) {
  for (const Diagnostic& d : errors) std::fprintf(stderr, "%s\n", d.to_string().c_str());
  return 2;
}
int fail(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  return 2;
}

// Median duration of completed collectives per YAML op name, over every rank's dump.
std::map<std::string, double> collective_medians(const diagnose::Record& rec) {
  std::map<std::string, std::vector<double>> all;
  for (const auto& [rank, dump] : rec.dumps)
    for (const diagnose::FrEntry& e : dump.entries)
      if (e.duration_ms() && e.state() == "completed") all[e.op_name()].push_back(*e.duration_ms());
  std::map<std::string, double> out;
  for (auto& [name, v] : all) {
    std::sort(v.begin(), v.end());
    out[name] = v[v.size() / 2];
  }
  return out;
}

Side read_side(const std::string& label, const Plan& plan, const RunResult& r, const std::string& dir) {
  Side s;
  s.label = label;
  s.outcome = outcome_name(r.outcome);
  s.steps_completed = r.steps_completed;
  if (r.outcome == Outcome::kHang) {
    s.hang_step = std::to_string(r.hang.step);
    const PlanOp& op = plan.ops[r.hang.op];
    s.first_timeout = "rank " + std::to_string(r.hang.first_timeout_rank) + ": " + op_yaml_name(op.kind) + " '" +
                      plan.sources[op.source].name + "' on " + group_name(r.hang.group) + " (seq " +
                      std::to_string(r.hang.collective_seq_id) + ")";
  }
  auto d = diagnose::diagnose_dir(dir);
  if (d.ok()) {
    std::string ranks;
    for (int c : d->culprit_ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(c);
    s.culprit = std::string(diagnose::to_string(d->verdict)) + ", " + std::string(diagnose::to_string(d->cause)) +
                (ranks.empty() ? "" : ", rank " + ranks);
  }
  auto rec = diagnose::read_record(dir);
  if (rec.ok()) {
    std::vector<double> steps;
    for (const diagnose::StepRow& row : rec->steps) steps.push_back(row.duration_s);
    if (!steps.empty()) {
      double sum = 0;
      for (double x : steps) sum += x;
      s.step_mean = sum / static_cast<double>(steps.size());
      std::sort(steps.begin(), steps.end());
      s.step_p50 = steps[steps.size() / 2];
    }
    s.coll_ms = collective_medians(*rec);
  }
  return s;
}

std::string err_pct(double real, double sim) {
  if (real <= 0 || sim <= 0) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", (sim - real) / real * 100);
  return buf;
}

void print_sides(const Side& a, const Side& b) {
  auto row = [](const char* what, const std::string& x, const std::string& y, const std::string& e = "") {
    std::printf("%-22s %-44s %-44s %s\n", what, x.c_str(), y.c_str(), e.c_str());
  };
  auto sec = [](double s) { char buf[32]; std::snprintf(buf, sizeof buf, "%.4f s", s); return std::string(buf); };
  auto ms = [](double v) { char buf[32]; std::snprintf(buf, sizeof buf, "%.3f ms", v); return std::string(buf); };
  row("", a.label, b.label, "sim vs real");
  row("outcome", a.outcome, b.outcome);
  row("steps completed", std::to_string(a.steps_completed), std::to_string(b.steps_completed));
  row("hang step", a.hang_step, b.hang_step);
  row("first timeout", a.first_timeout, b.first_timeout);
  row("diagnose", a.culprit, b.culprit);
  row("step time p50", sec(a.step_p50), sec(b.step_p50), err_pct(a.step_p50, b.step_p50));
  row("step time mean", sec(a.step_mean), sec(b.step_mean), err_pct(a.step_mean, b.step_mean));
  for (const auto& [name, real_ms] : a.coll_ms) {
    const auto it = b.coll_ms.find(name);
    const double sim_ms = it == b.coll_ms.end() ? 0 : it->second;
    row(("collective " + name).c_str(), ms(real_ms) + " (p50)", sim_ms > 0 ? ms(sim_ms) + " (p50)" : "-",
        err_pct(real_ms, sim_ms));
  }
}

}  // namespace

int do_validate(const ValidateArgs& a);

void register_validate_command(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand("validate", "Run a scenario for real (MPI processes, NCCL on GPUs, or its PyTorch export) and in the simulator, side by side");
  cmd->add_option("scenario", a->scenario, "Scenario YAML file")->required();
  cmd->add_option("--backend", a->backend,
                  "mpi (CPU processes), nccl (one GPU per rank) or torch (the exported PyTorch script under "
                  "torchrun, gloo on the CPU)");
  cmd->add_option("--python", a->python, "--backend torch: the Python with torch (default .venv/bin/python)");
  add_progress_flag(cmd);
  cmd->add_flag("--spin-demo", a->spin_demo,
                "At --spin-step, the first collective waits for a peer that never comes (a kernel spinning on a "
                "flag with nccl); the watchdog then times it out and aborts");
  cmd->add_option("--spin-step", a->spin_step, "The step of --spin-demo (default 3)");
  cmd->add_option("--ranks", a->ranks, "Processes (default: the scenario's ranks; must match them)");
  cmd->add_option("--timeout", a->timeout, "Watchdog timeout of the real and simulated runs (default 5s)");
  cmd->add_option("--grace", a->grace, "The launcher kills the job this long after the timeout (default 5s)");
  cmd->add_option("--out,-o", a->out, "Output folder (default runs/validate/<scenario file name>)");
  cmd->add_flag("--force", a->force, "Replace an earlier fleetsim run folder at --out (nothing else is ever replaced)");
  cmd->add_option("--calibration", a->calibration, "Calibration file (default: a quick calibration is run first)");
  cmd->add_option("--time-scale", a->time_scale, "Scenario durations times this (default 0.1)");
  cmd->add_option("--bytes-scale", a->bytes_scale, "Scenario bytes times this (default 1/1024)");
  cmd->add_option("--set", a->sets, "Override a scenario key: KEY=VALUE; repeatable");
  cmd->add_option("--hostfile", a->hostfile, "mpirun hostfile (a cluster); default: every rank here");
  cmd->callback([a, exit_code] { *exit_code = do_validate(*a); });
}

namespace {

struct Prepared {
  Plan plan;
  validate::Scaling scaling;
  Duration grace{};
  std::optional<Calibration> calibration;
};

std::string out_folder(const ValidateArgs& a) {
  return a.out.empty() ? "runs/validate/" + fs::path(a.scenario).stem().string() : a.out;
}

// Everything that can be bad input is checked here, before anything is written.
Result<Prepared> prepare(const ValidateArgs& a) {
  auto bad = [](const std::string& flag, const std::string& msg) {
    Diagnostic d;
    d.loc.file = flag;
    d.message = msg;
    return d;
  };
  if (a.backend != "mpi" && a.backend != "nccl" && a.backend != "torch")
    return bad("--backend", "unknown backend " + quote_value(a.backend) + " (expected mpi, nccl or torch)");
  if (a.backend == "torch" && (a.spin_demo || !a.hostfile.empty()))
    return bad("--backend torch", "runs on this machine only, without --spin-demo or --hostfile");
  if (a.spin_demo && a.spin_step < 1) return bad("--spin-step", "expected a step >= 1");
  if (a.ranks && *a.ranks < 1)
    return bad("--ranks", "expected a number of processes >= 1 (got " + std::to_string(*a.ranks) +
                              "); leave it out to use the scenario's ranks");
  if (!a.hostfile.empty())
    if (const std::string why = validate::hostfile_unreadable(a.hostfile); !why.empty()) return bad("--hostfile", why);
  Prepared p;
  auto timeout = parse_duration(a.timeout), grace = parse_duration(a.grace), wait = parse_duration(a.dump_wait);
  if (!timeout.ok() || timeout->ns <= 0) return bad("--timeout", "expected a positive duration like 5s");
  if (!grace.ok() || grace->ns < 0) return bad("--grace", "expected a duration like 5s");
  if (!wait.ok()) return bad("--dump-wait", "expected a duration like 1s");
  if (!validate::parse_scale(a.time_scale, &p.scaling.time_scale)) return bad("--time-scale", "expected a number > 0 or A/B");
  if (!validate::parse_scale(a.bytes_scale, &p.scaling.bytes_scale)) return bad("--bytes-scale", "expected a number > 0 or A/B");
  p.scaling.timeout = *timeout;
  p.scaling.dump_wait = *wait;
  p.grace = std::max(*grace, *wait + Duration::seconds(1));
  auto plan = load_plan(a.scenario, a.sets, [&](Scenario* s) {
    *s = validate::scale_scenario(*s, p.scaling);
    // The real side of --backend torch runs gloo on the CPU: simulate gloo's semantics
    // (a size mismatch aborts, a missing peer times out), not NCCL's.
    if (a.backend == "torch") s->job.backend = CommBackend::kGloo;
  });
  if (!plan.ok()) return plan.errors();
  if (a.ranks && *a.ranks != plan->ranks)
    return bad("--ranks", "the scenario has " + std::to_string(plan->ranks) + " ranks, not " +
                              std::to_string(*a.ranks) + " (set fleet.nodes / fleet.gpus_per_node with --set)");
  p.plan = std::move(*plan);
  if (auto out = check_out_dir(out_folder(a), a.force, a.scenario); !out.ok()) return out.errors();
  if (!a.calibration.empty()) {
    auto c = load_calibration(a.calibration);
    if (!c.ok()) return c.errors();
    p.calibration = std::move(*c);
  }
  if (a.backend == "torch") {
    if (const std::string why = validate::torch_backend_unavailable(a.python); !why.empty())
      return bad("--backend torch", why);
  } else if (a.backend == "nccl") {
    if (const std::string why = validate::nccl_backend_unavailable(); !why.empty()) return bad("--backend nccl", why);
  } else if (!validate::find_runner()) {
    return bad("fleetsim-mpi-runner", "not found next to the fleetsim executable (build with MPI)");
  }
  return p;
}

// A quick calibration for the collectives and group sizes the scenario uses.
Result<Calibration> quick_calibration(const Plan& plan, const std::string& out, const std::string& hostfile,
                                      const std::string& backend) {
  validate::CalibrateSpec spec;
  spec.backend = backend;
  spec.system = nccl::fabric_preset(plan.scenario.fleet.system) ? plan.scenario.fleet.system : "dgx-h100";
  spec.nodes = hostfile.empty() ? 1 : std::max(1, plan.scenario.fleet.nodes);  // one machine unless a cluster
  spec.ranks = plan.ranks;
  spec.out = out;
  spec.hostfile = hostfile;
  spec.ops.clear();
  int64_t max_bytes = 8;
  for (const PlanOp& op : plan.ops) {
    if (!is_collective(op.kind)) continue;
    const OpKind k = op.kind == OpKind::kRecv ? OpKind::kSend : op.kind == OpKind::kBarrier ? OpKind::kAllReduce : op.kind;
    if (std::find(spec.ops.begin(), spec.ops.end(), k) == spec.ops.end()) spec.ops.push_back(k);
    const int n = plan.group_size(op.group);
    if (n >= 2 && std::find(spec.group_sizes.begin(), spec.group_sizes.end(), n) == spec.group_sizes.end())
      spec.group_sizes.push_back(n);
    max_bytes = std::max(max_bytes, op.bytes);
  }
  if (spec.ops.empty()) spec.ops.push_back(OpKind::kAllReduce);
  if (spec.group_sizes.empty()) spec.group_sizes.push_back(std::min(plan.ranks, 2));
  spec.min_bytes = 4;
  spec.max_bytes = max_bytes * 4;
  spec.factor = 4;
  spec.iters = 20;
  spec.budget_s = 0.1;
  auto r = validate::run_calibration(spec);
  if (!r.ok()) return r.errors();
  return r->calibration;
}

// The real side on MPI processes (or NCCL on GPUs): mpirun and the runner.
std::optional<validate::LaunchResult> launch_mpi(const ValidateArgs& a, const Plan& plan, const std::string& tmp,
                                                 const validate::Scaling& k, Duration grace) {
  const bool gpu = a.backend == "nccl";
  validate::LaunchSpec ls;
  ls.runner = *validate::find_runner(gpu ? "fleetsim-nccl-runner" : "fleetsim-mpi-runner");
  ls.ranks = plan.ranks;
  ls.hostfile = a.hostfile;
  ls.log_file = tmp + "/mpirun.log";
  ls.watch_dir = tmp + "/real/" + std::string(validate::kPartsDir);
  ls.watch_suffix = ".tsv";
  ls.idle_limit_s = (k.timeout + grace).to_seconds();
  ls.args = {"run", fs::absolute(a.scenario).string(), "--work", tmp + "/real", "--time-scale", a.time_scale,
             "--bytes-scale", a.bytes_scale, "--timeout-ms", std::to_string(k.timeout.ns / 1'000'000),
             "--dump-wait-ms", std::to_string(k.dump_wait.ns / 1'000'000), "--telemetry-ms",
             std::to_string(k.telemetry_period.ns / 1'000'000)};
  for (const std::string& s : a.sets) ls.args.insert(ls.args.end(), {"--set", s});
  if (!gpu && plan.ranks > static_cast<int>(std::thread::hardware_concurrency())) ls.args.push_back("--yield");
  if (a.spin_demo) ls.args.insert(ls.args.end(), {"--spin-step", std::to_string(a.spin_step)});
  std::printf("real       %d %s: time x%g, bytes x%g, watchdog %s, grace %s%s ...\n", plan.ranks,
              gpu ? "GPU processes (NCCL)" : "MPI processes", k.time_scale, k.bytes_scale, a.timeout.c_str(),
              format_seconds(grace.ns).c_str(),
              a.spin_demo ? (", spin demo at step " + std::to_string(a.spin_step)).c_str() : "");
  std::fflush(stdout);
  return validate::launch(ls);
}

}  // namespace

int do_validate(const ValidateArgs& a) {
  auto prep = prepare(a);
  if (!prep.ok()) return fail(prep.errors());
  const Plan& plan = prep->plan;
  auto staged = StagedRunDir::open(out_folder(a), a.force, a.scenario);  // removed unless committed
  if (!staged.ok()) return fail(staged.errors());
  const std::string tmp = staged->tmp();
  std::error_code ec;
  fs::create_directories(tmp + "/real/fr", ec);
  fs::create_directories(tmp + "/real/" + std::string(validate::kPartsDir), ec);
  if (ec) return fail("error: cannot create " + tmp + ": " + ec.message());
  const bool gpu = a.backend == "nccl", torch = a.backend == "torch";
  std::optional<Calibration> calib;
  if (prep->calibration) {
    calib = *prep->calibration;
  } else if (a.backend == "torch") {
    std::printf("calibrate  none for torch (gloo): the simulated side uses the scenario's own collective model\n");
  } else if (plan.ranks < 2) {
    std::printf("calibrate  one rank: no collective to sweep; the simulated side uses the scenario's own model\n");
  } else {
    std::printf("calibrate  quick sweep of the scenario's collectives (%d ranks) ...\n", plan.ranks);
    std::fflush(stdout);
    auto c = quick_calibration(plan, tmp + "/calibration.yaml", a.hostfile, a.backend);
    if (!c.ok()) { for (const auto& d : c.errors()) std::fprintf(stderr, "%s\n", d.to_string().c_str()); return 1; }
    calib = *c;
  }
  const validate::Scaling& k = prep->scaling;
  std::optional<validate::LaunchResult> lr;
  if (torch) {
    std::printf("real       %d PyTorch processes (torchrun, gloo): time x%g, bytes x%g, watchdog %s, grace %gs ...\n",
                plan.ranks, k.time_scale, k.bytes_scale, a.timeout.c_str(), prep->grace.to_seconds());
    std::fflush(stdout);
    auto t = run_torch_real(plan, tmp, a.python, k, prep->grace);
    if (!t.ok()) return fail(t.errors());
    lr = *t;
  } else {
    lr = launch_mpi(a, plan, tmp, k, prep->grace);
    if (!lr) return fail("error: cannot start mpirun");
  }
  validate::LaunchInfo info{lr->exit_code, lr->killed, lr->wall_s, k.time_scale, k.bytes_scale, lr->command, a.backend};
  auto real = validate::merge_parts(plan, tmp + "/real", info);
  if (!real.ok()) return fail(real.errors());
  Result<PreparedRun> simulated =
      calib ? Result<PreparedRun>(prepare_run(plan, make_calibrated_model(*calib, plan.scenario.fleet,
                                                                          plan.scenario.job.nccl_algo,
                                                                          plan.scenario.job.nccl_proto)))
            : prepare_run(plan);
  if (!simulated.ok()) return fail(simulated.errors());
  const CostModel* model = simulated->cost.get();
  RunOptions sim_opts;
  sim_opts.out_dir = tmp + "/sim";
  auto sim = execute(*simulated, sim_opts);
  if (!sim.ok()) return fail(sim.errors());
  auto committed = staged->commit();
  if (!committed.ok()) return fail(committed.errors());
  const std::string& out = *committed;
  const Side r = read_side(gpu     ? "real (nccl, " + std::to_string(plan.ranks) + " GPUs)"
                           : torch ? "real (torch gloo, " + std::to_string(plan.ranks) + " processes)"
                                   : "real (mpi, " + std::to_string(plan.ranks) + " processes)",
                           plan, real->result, out + "/real");
  const Side s = read_side(std::string("simulated (") + model->name() + ")", plan, sim->result, out + "/sim");
  std::printf("scenario   %s: %d ranks (tp %d x dp %d x pp %d), %s exit %d%s, %.1f s wall\n",
              plan.scenario.name.c_str(), plan.ranks, plan.tp, plan.dp, plan.pp, torch ? "torchrun" : "mpirun",
              lr->exit_code,
              lr->killed ? " (killed by the launcher's deadline)" : "", lr->wall_s);
  print_sides(r, s);
  if (a.spin_demo)
    std::printf("spin demo  the real side's hang is by design (a wait for a peer that never comes at step %lld); "
                "the simulated side runs the scenario as written\n",
                static_cast<long long>(a.spin_step));
  std::printf("outputs    %s/ (real/ sim/ %s%s)\n", out.c_str(), torch ? "repro.py torchrun.log" : "mpirun.log",
              prep->calibration || !calib ? "" : " calibration.yaml calibration.csv");
  return 0;
}

}  // namespace fleetsim::cli
