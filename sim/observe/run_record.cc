// Output selection, observer wiring, summary.json and the atomic folder rename.
#include "sim/observe/run_record.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "sim/observe/flight_recorder.h"
#include "sim/observe/job_log.h"
#include "sim/observe/telemetry.h"
#include "sim/observe/trace_writer.h"

namespace fs = std::filesystem;

namespace fleetsim {

namespace {
constexpr int kTelemetryAllRanksMax = 512, kTelemetrySample = 64;
constexpr int kTraceRanksMax = 64;
constexpr int kFrRanksMax = 1024;
constexpr int64_t kFrEntriesTotal = int64_t{1} << 18;

std::vector<int> first_ranks(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

struct FileCloser {
  void operator()(std::FILE* f) const { if (f) std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;
}  // namespace

Result<OutputSelection> select_outputs(const Plan& plan, const std::optional<std::vector<std::string>>& requested) {
  OutputSelection s;
  const int n = plan.ranks;
  s.fr_capacity = plan.scenario.job.flight_recorder_entries;
  if (requested) {
    s.summary = s.steps = s.telemetry = s.fr = s.trace = s.log = false;
    for (const std::string& name : *requested) {
      if (name == "summary") s.summary = true;
      else if (name == "steps") s.steps = true;
      else if (name == "telemetry") s.telemetry = true;
      else if (name == "fr") s.fr = true;
      else if (name == "trace") s.trace = true;
      else if (name == "log") s.log = true;
      else {
        Diagnostic d;
        d.loc.file = "--outputs";
        d.message = "unknown output '" + name + "' (expected summary, steps, telemetry, fr, trace, log)";
        return d;
      }
    }
    s.telemetry_ranks = s.trace_ranks = first_ranks(n);
  } else {
    s.telemetry_ranks = first_ranks(std::min(n, n <= kTelemetryAllRanksMax ? n : kTelemetrySample));
    if (n > kTelemetryAllRanksMax)
      s.notes.emplace_back("telemetry.csv", "ranks 0-" + std::to_string(kTelemetrySample - 1) + " only (" +
                                                std::to_string(n) + " ranks > " +
                                                std::to_string(kTelemetryAllRanksMax) + "; --outputs telemetry samples all)");
    s.trace = n <= kTraceRanksMax;
    if (s.trace) s.trace_ranks = first_ranks(n);
    else s.notes.emplace_back("trace.json", "skipped (" + std::to_string(n) + " ranks > " +
                                                std::to_string(kTraceRanksMax) + "; --outputs trace writes it)");
    s.fr = n <= kFrRanksMax;
    if (!s.fr) s.notes.emplace_back("fr/", "skipped (" + std::to_string(n) + " ranks > " +
                                              std::to_string(kFrRanksMax) + "; --outputs fr writes it)");
    const int64_t cap = std::max<int64_t>(16, kFrEntriesTotal / n);
    if (s.fr && cap < s.fr_capacity) {
      s.fr_capacity = static_cast<int>(cap);
      s.notes.emplace_back("fr/", "last " + std::to_string(cap) + " entries per rank (ring buffer reduced from " +
                                      std::to_string(plan.scenario.job.flight_recorder_entries) + " at this scale)");
    }
  }
  if (plan.scenario.job.flight_recorder_entries == 0 && s.fr) {
    s.fr = false;
    s.notes.emplace_back("fr/", "skipped (job.flight_recorder_entries is 0: the recorder is off)");
  }
  return s;
}

namespace {

nlohmann::ordered_json summary_json(const Plan& plan, const CostModel& cost, const RecordedRun& run) {
  using Json = nlohmann::ordered_json;
  const RunResult& r = run.result;
  Json j;
  j["scenario"] = plan.scenario.name;
  j["description"] = plan.scenario.description;
  j["file"] = plan.scenario.file;
  j["seed"] = plan.scenario.job.seed;
  j["ranks"] = plan.ranks;
  j["parallel"] = {{"tp", plan.tp}, {"dp", plan.dp}, {"pp", plan.pp}};
  j["executor"] = "sim";
  j["cost_model"] = cost.name();
  j["outcome"] = outcome_name(r.outcome);
  j["steps_planned"] = plan.scenario.job.steps;
  j["steps_completed"] = r.steps_completed;
  j["sim_end_s"] = r.end.to_seconds();
  j["events"] = r.events;
  j["step_time_s"] = {{"mean", run.steps.mean_s}, {"p50", run.steps.p50_s}, {"p99", run.steps.p99_s},
                      {"max", run.steps.max_s}};
  if (r.outcome == Outcome::kHang) {
    const PlanOp& op = plan.ops[r.hang.op];
    j["hang"] = {{"step", r.hang.step},
                 {"stuck_since_s", r.hang.stuck_since.to_seconds()},
                 {"detected_at_s", r.hang.detected_at.to_seconds()},
                 {"first_timeout_rank", r.hang.first_timeout_rank},
                 {"timeout_s", plan.scenario.job.watchdog->to_seconds()},
                 {"process_group", std::to_string(static_cast<int>(r.hang.group))},
                 {"group", group_name(r.hang.group)},
                 {"collective_seq_id", r.hang.collective_seq_id},
                 {"op", op_watchdog_name(op.kind)},
                 {"op_name", plan.sources[op.source].name},
                 {"timed_out_ranks", r.hang.timed_out_ranks}};
  }
  if (r.outcome == Outcome::kCrash)
    j["crash"] = {{"rank", r.crash.rank}, {"step", r.crash.step}, {"at_s", r.crash.at.to_seconds()},
                  {"detected_at_s", r.crash.detected_at.to_seconds()}};
  if (r.outcome == Outcome::kDeadlock)
    j["deadlock"] = {{"step", r.stuck_step}, {"at_s", r.end.to_seconds()},
                     {"why", plan.scenario.job.watchdog ? "no rank can progress and no collective is pending for a watchdog to time out"
                                                        : "no rank can progress and the watchdog is off"}};
  Json written = Json::array(), skipped = Json::array();
  const OutputSelection& o = run.outputs;
  if (o.summary) written.push_back("summary.json");
  if (o.steps) written.push_back("steps.csv");
  if (o.telemetry) written.push_back("telemetry.csv");
  if (o.fr) written.push_back("fr/");
  if (o.trace) written.push_back("trace.json");
  if (o.log) written.push_back("job.log");
  for (const auto& [file, why] : o.notes) skipped.push_back({{"file", file}, {"why", why}});
  j["outputs"] = {{"written", written}, {"notes", skipped}};
  return j;
}

}  // namespace

Result<RecordedRun> simulate_to_record(const Plan& plan, const CostModel& cost, const std::string& out_dir,
                                       const OutputSelection& outputs) {
  const fs::path final_dir(out_dir);
  const fs::path tmp = fs::path(out_dir + ".tmp-" + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) {
    Diagnostic d;
    d.loc.file = out_dir;
    d.message = "cannot create output folder: " + ec.message();
    return d;
  }
  auto open = [&](bool on, const char* name) { return File(on ? std::fopen((tmp / name).c_str(), "wb") : nullptr); };
  File steps_f = open(outputs.steps, "steps.csv"), tel_f = open(outputs.telemetry, "telemetry.csv");
  File trace_f = open(outputs.trace, "trace.json"), log_f = open(outputs.log, "job.log");
  std::vector<std::unique_ptr<Observer>> owned;
  std::vector<Observer*> obs;
  auto steps = std::make_unique<StepTable>(plan, steps_f.get());
  obs.push_back(steps.get());
  if (log_f) owned.push_back(std::make_unique<JobLog>(plan, log_f.get()));
  if (tel_f) owned.push_back(std::make_unique<Telemetry>(plan, outputs.telemetry_ranks, tel_f.get()));
  if (trace_f) owned.push_back(std::make_unique<TraceWriter>(plan, outputs.trace_ranks, trace_f.get()));
  if (outputs.fr) {
    fs::create_directories(tmp / "fr", ec);
    owned.push_back(std::make_unique<FlightRecorder>(plan, (tmp / "fr").string(), outputs.fr_capacity));
  }
  for (auto& o : owned) obs.push_back(o.get());

  RecordedRun run;
  run.result = run_simulation(plan, cost, obs);
  run.steps = steps->stats();
  run.outputs = outputs;
  owned.clear();
  steps_f.reset(); tel_f.reset(); trace_f.reset(); log_f.reset();
  if (!run.result.errors.empty()) {
    fs::remove_all(tmp, ec);
    return run.result.errors;
  }
  if (outputs.summary) {
    std::ofstream f(tmp / "summary.json", std::ios::binary);
    f << summary_json(plan, cost, run).dump(2) << "\n";
  }
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    Diagnostic d;
    d.loc.file = out_dir;
    d.message = "cannot move the finished run into place: " + ec.message();
    return d;
  }
  run.dir = out_dir;
  return run;
}

}  // namespace fleetsim
