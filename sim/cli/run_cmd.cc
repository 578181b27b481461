// `fleetsim run` and `fleetsim check`: load a scenario (with --set overrides),
// simulate it into a RunRecord folder, and print a short human summary.
#include <cinttypes>
#include <cstdio>
#include <filesystem>

#include "fleetsim/cost_model.h"
#include "fleetsim/file_read.h"
#include "fleetsim/plan.h"
#include "fleetsim/record.h"
#include "sim/cli/commands.h"
#include "sim/io/scenario_loader.h"
#include "sim/io/units.h"
#include "sim/model/fabric_keys.h"
#include "sim/run/run.h"

namespace fleetsim::cli {

namespace {

struct RunArgs {
  std::string scenario;
  std::string out;
  std::vector<std::string> sets;
  std::optional<uint64_t> seed;
  std::string outputs;
  bool check_expect = false;
  bool force = false;
  std::string executor = "auto";
  std::string max_output;
};

int print_errors(const std::vector<Diagnostic>& errors) {
  for (const Diagnostic& d : errors) std::fprintf(stderr, "%s\n", d.to_string().c_str());
  return 2;
}

std::string fmt_s(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", s);
  return buf;
}

// Compares the run with the scenario's own `expect:`; prints and returns false on a miss.
bool check_expectations(const Plan& plan, const RecordedRun& run) {
  const Expect& e = plan.scenario.expect;
  std::vector<std::string> misses;
  const std::string outcome = outcome_name(run.result.outcome);
  if (e.outcome && *e.outcome != outcome) misses.push_back("outcome " + outcome + ", expected " + *e.outcome);
  if (e.hang_step && (run.result.outcome != Outcome::kHang || run.result.hang.step != *e.hang_step))
    misses.push_back("hang step " + std::to_string(run.result.hang.step) + ", expected " +
                     std::to_string(*e.hang_step));
  if (e.steps_completed && run.result.steps_completed != *e.steps_completed)
    misses.push_back("steps completed " + std::to_string(run.result.steps_completed) + ", expected " +
                     std::to_string(*e.steps_completed));
  for (const std::string& m : misses) std::printf("expect     FAILED: %s\n", m.c_str());
  if (misses.empty()) std::printf("expect     ok (%s)\n", plan.scenario.file.c_str());
  return misses.empty();
}

void print_summary(const Plan& plan, const CostModel& cost, const RecordedRun& run) {
  const Scenario& s = plan.scenario;
  const RunResult& r = run.result;
  std::printf("scenario   %s: %d ranks (tp %d x dp %d x pp %d) on %d x %s, seed %" PRIu64 ", %s\n",
              s.name.c_str(), plan.ranks, plan.tp, plan.dp, plan.pp, s.fleet.nodes, s.fleet.system.c_str(),
              s.job.seed, cost.name());
  std::printf("outcome    %s after %s simulated: %" PRId64 " of %" PRId64 " steps completed\n",
              outcome_name(r.outcome), fmt_s(r.end.to_seconds()).c_str(), r.steps_completed, s.job.steps);
  if (run.steps.count > 0)
    std::printf("step time  mean %s  p50 %s  p99 %s  max %s\n", fmt_s(run.steps.mean_s).c_str(),
                fmt_s(run.steps.p50_s).c_str(), fmt_s(run.steps.p99_s).c_str(), fmt_s(run.steps.max_s).c_str());
  if (r.outcome == Outcome::kHang) {
    const OpSource& src = plan.sources[plan.ops[r.hang.op].source];
    std::printf("hang       at step %" PRId64 "; first timeout on rank %d: %s '%s' on %s (seq %u)\n", r.hang.step,
                r.hang.first_timeout_rank, op_yaml_name(plan.ops[r.hang.op].kind), src.name.c_str(),
                group_name(r.hang.group), r.hang.collective_seq_id);
    std::printf("           enqueued at %s, watchdog fired at %s (%s later); %zu ranks timed out\n",
                fmt_s(r.hang.stuck_since.to_seconds()).c_str(), fmt_s(r.hang.detected_at.to_seconds()).c_str(),
                fmt_s((r.hang.detected_at - r.hang.stuck_since).to_seconds()).c_str(),
                r.hang.timed_out_ranks.size());
  }
  if (r.outcome == Outcome::kCrash)
    std::printf("crash      rank %d died at step %" PRId64 " (%s); the launcher stopped the job at %s\n",
                r.crash.rank, r.crash.step, fmt_s(r.crash.at.to_seconds()).c_str(),
                fmt_s(r.crash.detected_at.to_seconds()).c_str());
  if (r.outcome == Outcome::kDeadlock)
    std::printf("deadlock   at step %" PRId64 ": no rank can progress (%s)\n", r.stuck_step,
                s.job.watchdog ? "no collective pending for the watchdog" : "watchdog off");
  std::printf("executor   %s%s%s\n", run.executor.c_str(), run.why_event.empty() ? "" : ": ",
              run.why_event.c_str());
  if (run.steps.count > 0)
    std::printf("straggler  tax %.2f%% over the jitter-free %s step (%s)\n", run.tax.tax * 100,
                fmt_s(run.tax.baseline_step_ns * 1e-9).c_str(), run.tax.baseline_how);
  std::string files;
  for (const OutputSpec& o : kOutputs)
    if (run.outputs.has(o.id)) files += std::string(files.empty() ? "" : " ") + o.file_name;
  std::printf("outputs    %s/ (%s)\n", run.dir.c_str(), files.c_str());
  for (const auto& [file, why] : run.outputs.notes) std::printf("           %s: %s\n", file.c_str(), why.c_str());
}


// Refuses a run whose predicted folder is above --max-output (default 2 GiB) before it starts.
int check_output_size(const PreparedRun& run, const RunOptions& opts, const std::string& max_output) {
  int64_t limit = kMaxOutputDefault;
  if (!max_output.empty()) {
    Result<int64_t> b = parse_bytes(max_output);
    if (!b.ok()) return print_errors({Diagnostic{{"--max-output", 0, 0}, b.errors()[0].message}});
    limit = *b;
  }
  Result<OutputEstimate> e = estimate_run_outputs(run.plan, *run.cost, opts.outputs, opts.executor);
  if (!e.ok()) return print_errors(e.errors());
  if (std::optional<Diagnostic> d = check_output_estimate(*e, limit)) return print_errors({*d});
  return 0;
}

int do_run(const RunArgs& a) {
  std::vector<std::string> sets = a.sets;
  if (a.seed) sets.push_back("job.seed=" + std::to_string(*a.seed));
  auto prepared = prepare_run(a.scenario, sets);
  if (!prepared.ok()) return print_errors(prepared.errors());
  RunOptions opts;
  opts.out_dir = a.out.empty() ? "runs/" + std::filesystem::path(a.scenario).stem().string() : a.out;
  if (!a.outputs.empty()) opts.outputs = split_list(a.outputs);
  opts.executor = a.executor;
  opts.force = a.force || a.out.empty();  // runs/<name> is fleetsim's own: a rerun replaces its last run
  if (int rc = check_output_size(*prepared, opts, a.max_output); rc != 0) return rc;
  auto run = execute(*prepared, opts);
  if (!run.ok()) return print_errors(run.errors());
  print_summary(prepared->plan, *prepared->cost, *run);
  if (a.check_expect && !check_expectations(prepared->plan, *run)) return 1;
  return 0;
}

}  // namespace

void register_run_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Simulate a scenario and write its RunRecord folder");
  cmd->add_option("scenario", args->scenario, "Scenario YAML file")->required();
  cmd->add_option("--out,-o", args->out, "Output folder (default runs/<scenario file name>)");
  cmd->add_flag("--force", args->force, "Replace an earlier fleetsim run folder at --out (nothing else is ever replaced)");
  cmd->add_option("--seed", args->seed, "Override job.seed");
  cmd->add_option("--set", args->sets, "Override a scenario key: KEY=VALUE (dotted key, YAML value); repeatable");
  cmd->add_option("--outputs", args->outputs,
                  "Comma-separated files to write, for every rank: " + output_cli_names(",") +
                      " (default: what stays bounded at the run's scale)");
  cmd->add_option("--executor", args->executor,
                  "auto (lockstep when eligible and the outputs allow: above 1024 ranks, or --outputs without "
                  "telemetry/fr/trace; else hybrid when the outputs are summary, steps and model only), event, lockstep "
                  "(when eligible) or hybrid")
      ->check(CLI::IsMember({"auto", "event", "lockstep", "hybrid"}));
  cmd->add_option("--max-output", args->max_output,
                  "Refuse to run if the output folder is predicted above SIZE (e.g. 10GiB; default 2GiB)");
  add_progress_flag(cmd);
  cmd->add_flag("--check-expect", args->check_expect, "Exit 1 unless the run meets the scenario's `expect:`");
  cmd->callback([args, exit_code] { *exit_code = do_run(*args); });
}

void register_check_command(CLI::App& app, int* exit_code) {
  auto path = std::make_shared<std::string>();
  auto sets = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("check", "Validate a scenario file without running it");
  cmd->add_option("scenario", *path, "Scenario YAML file")->required();
  cmd->add_option("--set", *sets, "Override a scenario key: KEY=VALUE; repeatable");
  cmd->callback([path, sets, exit_code] {
    auto run = prepare_run(*path, *sets);
    if (!run.ok()) { *exit_code = print_errors(run.errors()); return; }
    const Plan* plan = &run->plan;
    std::printf("%s: ok: '%s', %d ranks (tp %d x dp %d x pp %d), %" PRId64 " steps, %zu ops, %zu faults\n",
                path->c_str(), plan->scenario.name.c_str(), plan->ranks, plan->tp, plan->dp, plan->pp,
                plan->scenario.job.steps, plan->ops.size(), plan->scenario.faults.size());
    for (const std::string& w : ignored_fleet_key_warnings(plan->scenario)) {
      std::printf("%s: warning: %s\n", path->c_str(), w.c_str());
    }
    if (Result<OutputEstimate> e = estimate_run_outputs(*plan, *run->cost, std::nullopt, "auto"); e.ok())
      std::printf("outputs: %s with the default outputs (run refuses above %s: --max-output)\n",
                  e->describe().c_str(), format_cap(kMaxOutputDefault).c_str());
    *exit_code = 0;
  });
}

}  // namespace fleetsim::cli
