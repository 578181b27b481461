// load_plan, prepare_run, execute: the run path every command shares (run.h).
// execute() wires the observers for the outputs selected, lets the executor
// choice run the plan (lockstep when eligible, else events), then writes
// summary.json and moves the finished folder into place.
#include "sim/run/run.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "sim/io/scenario_loader.h"
#include "sim/model/cost_model_factory.h"
#include "sim/exec/executor.h"
#include "sim/observe/flight_recorder.h"
#include "sim/observe/job_log.h"
#include "sim/observe/model_json.h"
#include "sim/observe/progress.h"
#include "sim/observe/straggler_stats.h"
#include "sim/observe/telemetry.h"
#include "sim/observe/trace_writer.h"
#include "sim/run/out_dir.h"

namespace fs = std::filesystem;

namespace fleetsim {

Result<Plan> load_plan(const std::string& file, const std::vector<std::string>& overrides, const ScenarioEdit& edit) {
  Result<Scenario> scenario = load_scenario(file, overrides);
  if (!scenario.ok()) return scenario.errors();
  if (edit) edit(&*scenario);
  return compile_plan(*scenario);
}

Result<PreparedRun> prepare_run(Plan plan) {
  Result<std::unique_ptr<CostModel>> cost = make_cost_model(plan);
  if (!cost.ok()) return cost.errors();
  return PreparedRun{std::move(plan), std::move(*cost)};
}

PreparedRun prepare_run(Plan plan, std::unique_ptr<CostModel> cost) {
  FLEETSIM_CHECK(cost != nullptr);
  return PreparedRun{std::move(plan), std::move(cost)};
}

Result<PreparedRun> prepare_run(const std::string& file, const std::vector<std::string>& overrides,
                                const ScenarioEdit& edit) {
  Result<Plan> plan = load_plan(file, overrides, edit);
  if (!plan.ok()) return plan.errors();
  return prepare_run(std::move(*plan));
}

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { if (f) std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Closes `f`, written as `name`: "" or why its data did not all reach the disk
// (a full file system, a file-size limit). Checked once per file, at its end.
std::string close_checked(File f, const std::string& name) {
  if (!f) return "";
  errno = 0;
  const bool failed = std::ferror(f.get()) != 0;
  const bool closed = std::fclose(f.release()) == 0;
  if (!failed && closed) return "";
  return "cannot write " + name + ": " + (errno ? std::strerror(errno) : "a write failed (a full file system?)");
}

Diagnostic folder_error(const std::string& dir, const std::string& what) {
  Diagnostic d;
  d.loc.file = dir;
  d.message = what;
  return d;
}

TaxReport tax_report(const Plan& plan, const CostModel& cost, const StepTable& steps, const StragglerStats& stats,
                     int64_t steps_completed) {
  TaxReport t;
  const Baseline b = baseline_step(plan, cost);
  t.baseline_step_ns = b.mean_step_ns;
  t.baseline_how = b.how;
  long double sum = 0;
  for (int64_t d : steps.durations_ns()) sum += static_cast<long double>(d);
  const size_t n = steps.durations_ns().size();
  t.mean_step_ns = n ? static_cast<double>(sum / static_cast<long double>(n)) : 0.0;
  t.tax = t.baseline_step_ns > 0 && n ? t.mean_step_ns / t.baseline_step_ns - 1.0 : 0.0;
  t.slowest_counts = stats.slowest_counts(steps_completed);
  t.wait_ns = stats.wait_ns();
  t.compute_ns = stats.compute_ns();
  return t;
}

nlohmann::ordered_json summary_json(const Plan& plan, const CostModel& cost, const RecordedRun& run) {
  const RunResult& r = run.result;
  nlohmann::ordered_json j;
  add_scenario_fields(&j, plan);
  j["executor"] = "sim";
  j["sim_executor"] = run.executor;
  if (!run.why_event.empty()) j["sim_executor_why"] = run.why_event;
  j["cost_model"] = cost.name();
  j["outcome"] = outcome_name(r.outcome);
  j["steps_planned"] = plan.scenario.job.steps;
  j["steps_completed"] = r.steps_completed;
  j["sim_end_s"] = r.end.to_seconds();
  j["events"] = r.events;
  j["step_time_s"] = {{"mean", run.steps.mean_s}, {"p50", run.steps.p50_s}, {"p99", run.steps.p99_s},
                      {"max", run.steps.max_s}};
  j["straggler_tax"] = run.tax.tax;
  j["straggler"] = straggler_json(run.tax, plan.ranks);
  add_outcome_fields(&j, plan, r,
                     plan.scenario.job.watchdog
                         ? "no rank can progress and no collective is pending for a watchdog to time out"
                         : "no rank can progress and the watchdog is off");
  add_outputs_field(&j, run.outputs.files, run.outputs.notes);
  return j;
}

// The observers of one executor attempt, and the files they write into `tmp`.
// Rebuilt for each attempt: a lockstep attempt that falls back leaves nothing.
class RecordObservers {
 public:
  RecordObservers(const Plan& plan, const OutputSelection& outputs, fs::path tmp)
      : plan_(plan), outputs_(outputs), tmp_(std::move(tmp)) {}

  std::vector<Observer*> make(ExecutorKind kind, StepAccounting** stats_out) {
    close();
    // The hybrid's observers take both: whole steps and, after its handover, events.
    const bool events = kind != ExecutorKind::kLockstep;
    auto wants = [&](OutputFile f) { return outputs_.has(f) && (events || output_spec(f).lockstep); };
    steps_f_ = open(wants(OutputFile::kSteps), OutputFile::kSteps);
    tel_f_ = open(wants(OutputFile::kTelemetry), OutputFile::kTelemetry);
    trace_f_ = open(wants(OutputFile::kTrace), OutputFile::kTrace);
    log_f_ = open(wants(OutputFile::kLog), OutputFile::kLog);
    steps_ = std::make_unique<StepTable>(plan_, steps_f_.get());
    stats_ = std::make_unique<StragglerStats>(plan_);
    std::vector<Observer*> obs = {steps_.get()};
    if (events) obs.push_back(stats_.get());  // lockstep feeds it directly
    *stats_out = kind == ExecutorKind::kEvent ? nullptr : stats_.get();
    if (log_f_) owned_.push_back(std::make_unique<JobLog>(plan_, log_f_.get()));
    if (tel_f_) owned_.push_back(std::make_unique<Telemetry>(plan_, outputs_.telemetry_ranks, tel_f_.get()));
    if (trace_f_) owned_.push_back(std::make_unique<TraceWriter>(plan_, outputs_.trace_ranks, trace_f_.get()));
    if (wants(OutputFile::kFr)) {
      std::error_code ec;
      fs::create_directories(tmp_ / "fr", ec);
      auto fr = std::make_unique<FlightRecorder>(plan_, (tmp_ / "fr").string(), outputs_.fr_capacity);
      fr_ = fr.get();
      owned_.push_back(std::move(fr));
    }
    if (auto p = make_progress_observer(plan_)) owned_.push_back(std::move(p));
    for (auto& o : owned_) obs.push_back(o.get());
    return obs;
  }

  // Ends the attempt: observers flushed and destroyed, files closed. Returns
  // "" or the first write failure.
  std::string close() {
    std::string err = fr_ && !fr_->write_error().empty() ? "cannot write " + fr_->write_error() : "";
    fr_ = nullptr;
    owned_.clear();
    for (auto [f, id] : {std::pair{&steps_f_, OutputFile::kSteps}, {&tel_f_, OutputFile::kTelemetry},
                         {&trace_f_, OutputFile::kTrace}, {&log_f_, OutputFile::kLog}}) {
      const std::string e = close_checked(std::move(*f), output_file_name(id));
      if (err.empty()) err = e;
    }
    return err;
  }
  const StepTable& steps() const { return *steps_; }
  const StragglerStats& stats() const { return *stats_; }

 private:
  File open(bool on, OutputFile f) const {
    return File(on ? std::fopen((tmp_ / output_file_name(f)).c_str(), "wb") : nullptr);
  }
  const Plan& plan_;
  const OutputSelection& outputs_;
  fs::path tmp_;
  File steps_f_, tel_f_, trace_f_, log_f_;
  std::vector<std::unique_ptr<Observer>> owned_;
  FlightRecorder* fr_ = nullptr;  // in owned_, if written
  std::unique_ptr<StepTable> steps_;
  std::unique_ptr<StragglerStats> stats_;
};

}  // namespace

Result<RecordedRun> execute(const PreparedRun& prepared, const RunOptions& opts) {
  const Plan& plan = prepared.plan;
  const CostModel& cost = *prepared.cost;
  Result<OutputSelection> outputs = select_outputs(plan, opts.outputs);
  if (!outputs.ok()) return outputs.errors();
  // The hybrid writes exactly what the event executor writes, so only when every
  // output asked for takes whole steps.
  const bool whole_steps = std::all_of(std::begin(kOutputs), std::end(kOutputs),
                                       [&](const OutputSpec& o) { return o.lockstep || !outputs->has(o.id); });
  FastExecutors allow{outputs->lockstep_ok, whole_steps};
  if (opts.executor != "auto") {
    outputs->lockstep_ok = opts.executor == "lockstep";
    allow = {outputs->lockstep_ok, opts.executor == "hybrid" && whole_steps};
  }
  Result<StagedRunDir> staged = StagedRunDir::open(opts.out_dir, opts.force, plan.scenario.file);
  if (!staged.ok()) return staged.errors();  // checked before anything runs
  const fs::path tmp(staged->tmp());

  RecordObservers observers(plan, *outputs, tmp);
  RecordedRun run;
  const Executed ex = execute_plan(plan, cost, allow,
                                   [&](ExecutorKind k, StepAccounting** s) { return observers.make(k, s); });
  run.result = ex.result;
  run.executor = executor_name(ex.executor);
  run.why_event = ex.why_event;
  run.steps = observers.steps().stats();
  run.outputs = *outputs;
  if (ex.executor == ExecutorKind::kLockstep) note_lockstep_outputs(&run.outputs);
  run.tax = tax_report(plan, cost, observers.steps(), observers.stats(), run.result.steps_completed);
  std::string write_error = observers.close();
  if (!run.result.errors.empty()) return run.result.errors;  // `staged` removes the folder
  if (write_error.empty() && run.outputs.has(OutputFile::kModel)) {
    const std::string name = output_file_name(OutputFile::kModel);
    File f(std::fopen((tmp / name).c_str(), "wb"));
    if (f) write_model_json(plan, cost, f.get());
    write_error = f ? close_checked(std::move(f), name) : "cannot write " + name + ": " + std::strerror(errno);
  }
  if (write_error.empty() && run.outputs.has(OutputFile::kSummary)) {
    const std::string name = output_file_name(OutputFile::kSummary);
    std::ofstream f(tmp / name, std::ios::binary);
    f << summary_json(plan, cost, run).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
    f.close();
    if (!f) write_error = "cannot write " + name + ": " + std::strerror(errno ? errno : EIO);
  }
  if (!write_error.empty()) return folder_error(staged->dir(), write_error + "; nothing was kept");
  Result<std::string> dir = staged->commit();
  if (!dir.ok()) return dir.errors();
  run.dir = *dir;
  return run;
}

Result<StepRun> execute_steps(const PreparedRun& prepared) {
  const Plan& plan = prepared.plan;
  std::unique_ptr<StepTable> table;
  const Executed ex = execute_plan(plan, *prepared.cost, FastExecutors{true, true}, [&](ExecutorKind, StepAccounting**) {
    table = std::make_unique<StepTable>(plan, nullptr);
    return std::vector<Observer*>{table.get()};
  });
  if (!ex.result.errors.empty()) return ex.result.errors;
  StepRun r;
  r.result = ex.result;
  r.lockstep = ex.executor == ExecutorKind::kLockstep;
  r.durations_ns = table->durations_ns();
  r.baseline_step_ns = baseline_step(plan, *prepared.cost).mean_step_ns;
  return r;
}

}  // namespace fleetsim
