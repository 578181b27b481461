// Output selection, observer wiring, summary.json and the atomic folder rename.
#include "sim/observe/run_record.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "sim/exec/executor.h"
#include "sim/observe/flight_recorder.h"
#include "sim/observe/job_log.h"
#include "sim/observe/straggler_stats.h"
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

void add_scenario_fields(nlohmann::ordered_json* out, const Plan& plan) {
  nlohmann::ordered_json& j = *out;
  j["scenario"] = plan.scenario.name;
  j["description"] = plan.scenario.description;
  j["file"] = plan.scenario.file;
  j["seed"] = plan.scenario.job.seed;
  j["ranks"] = plan.ranks;
  j["parallel"] = {{"tp", plan.tp}, {"dp", plan.dp}, {"pp", plan.pp}};
}

void add_outcome_fields(nlohmann::ordered_json* out, const Plan& plan, const RunResult& r,
                        const std::string& deadlock_why) {
  nlohmann::ordered_json& j = *out;
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
                     {"why", deadlock_why}};
}

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
  s.lockstep_ok = requested ? !(s.telemetry || s.fr || s.trace) : n > kFrRanksMax;
  if (plan.scenario.job.flight_recorder_entries == 0 && s.fr) {
    s.fr = false;
    s.notes.emplace_back("fr/", "skipped (job.flight_recorder_entries is 0: the recorder is off)");
  }
  return s;
}

namespace {

constexpr int kPerRankMax = 1024, kTopK = 16, kHistogramBins = 20;

// Min, p50, max and mean of per-rank values (ns), in seconds.
nlohmann::ordered_json spread_s(const std::vector<int64_t>& v) {
  std::vector<int64_t> s = v;
  std::sort(s.begin(), s.end());
  long double sum = 0;
  for (int64_t x : s) sum += static_cast<long double>(x);
  if (s.empty()) return nlohmann::ordered_json::object();
  return {{"min", static_cast<double>(s.front()) * 1e-9}, {"p50", static_cast<double>(s[(s.size() - 1) / 2]) * 1e-9},
          {"max", static_cast<double>(s.back()) * 1e-9},
          {"mean", static_cast<double>(sum / static_cast<long double>(s.size())) * 1e-9}};
}

// The k ranks with the largest (or, `least`, smallest) value; ties to the lowest rank.
std::vector<int> top_ranks(const std::vector<int64_t>& v, bool least) {
  std::vector<int> idx(v.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  const size_t k = std::min<size_t>(kTopK, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](int a, int b) {
    const int64_t x = v[static_cast<size_t>(a)], y = v[static_cast<size_t>(b)];
    return x != y ? (least ? x < y : x > y) : a < b;
  });
  idx.resize(k);
  return idx;
}

// Per-rank arrays up to kPerRankMax ranks; beyond, top-k lists, spreads and a
// histogram of the collective wait, so the summary stays bounded at any scale.
nlohmann::ordered_json straggler_json(const TaxReport& t, int ranks) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["baseline_step_s"] = t.baseline_step_ns * 1e-9;
  j["baseline"] = std::string(t.baseline_how) + " (the same plan with jitter and faults off)";
  j["mean_step_s"] = t.mean_step_ns * 1e-9;
  j["slowest_rank_is"] = "the rank that waited least in the step's collectives (ties: lowest rank)";
  if (t.wait_ns.empty()) return j;
  auto seconds = [](const std::vector<int64_t>& v) {
    Json a = Json::array();
    for (int64_t x : v) a.push_back(static_cast<double>(x) * 1e-9);
    return a;
  };
  if (ranks <= kPerRankMax) {
    j["slowest_counts"] = t.slowest_counts;
    j["collective_wait_s"] = seconds(t.wait_ns);
    j["compute_s"] = seconds(t.compute_ns);
    return j;
  }
  Json top = Json::array(), least = Json::array();
  for (int r : top_ranks(t.slowest_counts, false))
    if (t.slowest_counts[static_cast<size_t>(r)] > 0) top.push_back({{"rank", r}, {"steps", t.slowest_counts[static_cast<size_t>(r)]}});
  for (int r : top_ranks(t.wait_ns, true))
    least.push_back({{"rank", r}, {"wait_s", static_cast<double>(t.wait_ns[static_cast<size_t>(r)]) * 1e-9}});
  j["slowest_top"] = top;
  j["collective_wait_s"] = spread_s(t.wait_ns);
  j["least_waiting"] = least;
  const auto [lo, hi] = std::minmax_element(t.wait_ns.begin(), t.wait_ns.end());
  std::vector<int64_t> counts(kHistogramBins, 0);
  const double width = static_cast<double>(*hi - *lo) / kHistogramBins;
  for (int64_t w : t.wait_ns) {
    const auto b = width > 0 ? static_cast<size_t>(static_cast<double>(w - *lo) / width) : 0;
    ++counts[std::min<size_t>(b, kHistogramBins - 1)];
  }
  j["collective_wait_histogram"] = {{"from_s", static_cast<double>(*lo) * 1e-9}, {"to_s", static_cast<double>(*hi) * 1e-9},
                                    {"counts", counts}};
  j["compute_s"] = spread_s(t.compute_ns);
  return j;
}

nlohmann::ordered_json summary_json(const Plan& plan, const CostModel& cost, const RecordedRun& run) {
  using Json = nlohmann::ordered_json;
  const RunResult& r = run.result;
  Json j;
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

// The lockstep executor writes no per-op files; say so where they would be.
void note_lockstep_outputs(OutputSelection* o) {
  const char* why = "skipped: the lockstep executor ran (--executor event writes it)";
  if (o->telemetry) o->notes.emplace_back("telemetry.csv", why);
  if (o->fr) o->notes.emplace_back("fr/", why);
  if (o->trace) o->notes.emplace_back("trace.json", why);
  o->telemetry = o->fr = o->trace = false;
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
  File steps_f, tel_f, trace_f, log_f;
  std::vector<std::unique_ptr<Observer>> owned;
  std::unique_ptr<StepTable> steps;
  std::unique_ptr<StragglerStats> stats;
  // Called before each executor attempt: a lockstep attempt that falls back
  // leaves nothing behind (files are reopened, observers rebuilt).
  auto make_observers = [&](ExecutorKind kind, StepAccounting** stats_out) {
    owned.clear();
    const bool events = kind == ExecutorKind::kEvent;
    steps_f = open(outputs.steps, "steps.csv");
    tel_f = open(events && outputs.telemetry, "telemetry.csv");
    trace_f = open(events && outputs.trace, "trace.json");
    log_f = open(outputs.log, "job.log");
    steps = std::make_unique<StepTable>(plan, steps_f.get());
    stats = std::make_unique<StragglerStats>(plan);
    std::vector<Observer*> obs = {steps.get()};
    if (events) obs.push_back(stats.get());  // lockstep feeds it directly
    *stats_out = events ? nullptr : stats.get();
    if (log_f) owned.push_back(std::make_unique<JobLog>(plan, log_f.get()));
    if (tel_f) owned.push_back(std::make_unique<Telemetry>(plan, outputs.telemetry_ranks, tel_f.get()));
    if (trace_f) owned.push_back(std::make_unique<TraceWriter>(plan, outputs.trace_ranks, trace_f.get()));
    if (events && outputs.fr) {
      fs::create_directories(tmp / "fr", ec);
      owned.push_back(std::make_unique<FlightRecorder>(plan, (tmp / "fr").string(), outputs.fr_capacity));
    }
    for (auto& o : owned) obs.push_back(o.get());
    return obs;
  };

  RecordedRun run;
  const Executed ex = execute_plan(plan, cost, outputs.lockstep_ok, make_observers);
  run.result = ex.result;
  run.executor = executor_name(ex.executor);
  run.why_event = ex.why_event;
  run.steps = steps->stats();
  run.outputs = outputs;
  if (ex.executor == ExecutorKind::kLockstep) note_lockstep_outputs(&run.outputs);
  run.tax = tax_report(plan, cost, *steps, *stats, run.result.steps_completed);
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
