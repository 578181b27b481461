// Shared setup of the per-rank programs (see runner_common.h).
#include "validate/runner_common.h"

#include <signal.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cstdio>

#include "sim/run/run.h"
#include "sim/model/calibration.h"
#include "validate/rank_runner.h"
#include "validate/scaling.h"

namespace fleetsim::validate {

CLI::App* add_run_command(CLI::App& app, RunArgs& a) {
  CLI::App* run = app.add_subcommand("run", "Execute one rank of a scaled scenario");
  run->add_option("scenario", a.scenario)->required();
  run->add_option("--work", a.work, "RunRecord folder being written")->required();
  run->add_option("--set", a.sets);
  run->add_option("--time-scale", a.time_scale);
  run->add_option("--bytes-scale", a.bytes_scale);
  run->add_option("--timeout-ms", a.timeout_ms);
  run->add_option("--dump-wait-ms", a.dump_wait_ms);
  run->add_option("--telemetry-ms", a.telemetry_ms);
  run->add_flag("--yield", a.yield);
  run->add_option("--spin-step", a.spin_step,
                  "At this step the first collective becomes a wait for a peer that never comes (the spin demo)");
  return run;
}

std::optional<Plan> load_run_plan(const RunArgs& a, int world, bool report) {
  Scaling k;
  if (!parse_scale(a.time_scale, &k.time_scale) || !parse_scale(a.bytes_scale, &k.bytes_scale)) {
    if (report) std::fprintf(stderr, "error: bad --time-scale or --bytes-scale\n");
    return std::nullopt;
  }
  k.timeout = Duration::millis(a.timeout_ms);
  k.dump_wait = Duration::millis(a.dump_wait_ms);
  k.telemetry_period = Duration::millis(a.telemetry_ms);
  auto plan = load_plan(a.scenario, a.sets, [&](Scenario* s) { *s = scale_scenario(*s, k); });
  if (!plan.ok()) {
    if (report)
      for (const Diagnostic& d : plan.errors()) std::fprintf(stderr, "%s\n", d.to_string().c_str());
    return std::nullopt;
  }
  if (plan->ranks != world) {
    if (report)
      std::fprintf(stderr, "%s: error: the scenario has %d ranks but mpirun started %d processes\n",
                   a.scenario.c_str(), plan->ranks, world);
    return std::nullopt;
  }
  return std::move(*plan);
}

void install_process_guards() {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // if mpirun goes, so do we: never an orphan
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_terminate = true; };
  sigaction(SIGTERM, &sa, nullptr);
}

int64_t plan_max_bytes(const Plan& plan) {
  int64_t m = 4;
  for (const PlanOp& op : plan.ops) m = std::max(m, op.bytes);
  for (const Fault& f : plan.op_faults) m = std::max(m, f.bytes.value_or(0));
  return m;
}

CLI::App* add_calibrate_command(CLI::App& app, const std::string& what, SweepOptions& so, std::string& ops,
                                std::string& sizes) {
  CLI::App* cal = app.add_subcommand("calibrate", what);
  cal->add_option("--out", so.out)->required();
  cal->add_option("--ops", ops);
  cal->add_option("--group-sizes", sizes);
  cal->add_option("--min-bytes", so.min_bytes);
  cal->add_option("--max-bytes", so.max_bytes);
  cal->add_option("--factor", so.factor);
  cal->add_option("--iters", so.iters);
  cal->add_option("--budget-s", so.budget_s);
  cal->add_flag("--yield", so.yield);
  return cal;
}

bool parse_sweep_lists(const std::string& ops, const std::string& sizes, SweepOptions* o) {
  for (const std::string& name : split_list(ops)) {
    const auto k = collective_from_name(name);
    if (!k) {
      std::fprintf(stderr, "error: unknown collective '%s'\n", name.c_str());
      return false;
    }
    o->ops.push_back(*k);
  }
  for (const std::string& g : split_list(sizes)) o->group_sizes.push_back(std::atoi(g.c_str()));
  return true;
}

}  // namespace fleetsim::validate
