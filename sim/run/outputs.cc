// Output selection: the bounded defaults at scale, and `--outputs`; the
// estimate of what a run will write, from a sample of its steps.
#include "sim/run/outputs.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "fleetsim/file_read.h"
#include "sim/exec/lockstep_executor.h"

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

// The ranks trace.json shows in full: every rank up to kTraceRanksMax; above, rank
// 0, the last rank and the ranks a fault names, then an even sample up to
// kTraceRanksMax in all (the trace writer summarizes the rest).
std::vector<int> trace_sample(const Plan& plan) {
  const int n = plan.ranks;
  if (n <= kTraceRanksMax) return first_ranks(n);
  std::vector<int> v{0, n - 1};
  for (const Fault& f : plan.scenario.faults)
    for (int r : f.ranks)
      if (r >= 0 && r < n && v.size() < static_cast<size_t>(kTraceRanksMax / 2)) v.push_back(r);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  for (int k = 1; k < kTraceRanksMax && v.size() < static_cast<size_t>(kTraceRanksMax); ++k) {
    const int r = static_cast<int>(int64_t{k} * n / kTraceRanksMax);
    const auto at = std::lower_bound(v.begin(), v.end(), r);
    if (at == v.end() || *at != r) v.insert(at, r);
  }
  return v;
}

std::string trace_note(const Plan& plan, size_t traced) {
  return std::to_string(traced) + " of " + std::to_string(plan.ranks) + " ranks in full (rank 0, the last, faulted ranks, " +
         "an even sample); the rest summarized per rank range";
}

Result<OutputSelection> select_requested(const Plan& plan, const std::vector<std::string>& requested) {
  OutputSelection s;
  s.fr_capacity = plan.scenario.job.flight_recorder_entries;
  s.files = OutputSet();
  for (const std::string& name : requested) {
    const std::optional<OutputFile> f = output_by_cli_name(name);
    if (!f) {
      Diagnostic d;
      d.loc.file = "--outputs";
      d.message = "unknown output '" + name + "' (expected " + output_cli_names() + ")";
      return d;
    }
    s.files.set(*f);
  }
  s.telemetry_ranks = first_ranks(plan.ranks);
  s.trace_ranks = trace_sample(plan);
  if (s.has(OutputFile::kTrace) && plan.ranks > kTraceRanksMax)
    s.notes.emplace_back("trace.json", trace_note(plan, s.trace_ranks.size()));
  s.lockstep_ok = std::all_of(std::begin(kOutputs), std::end(kOutputs),
                              [&](const OutputSpec& o) { return o.lockstep || !s.files.has(o.id); });
  return s;
}

OutputSelection select_default(const Plan& plan) {
  OutputSelection s;
  const int n = plan.ranks;
  s.fr_capacity = plan.scenario.job.flight_recorder_entries;
  s.telemetry_ranks = first_ranks(std::min(n, n <= kTelemetryAllRanksMax ? n : kTelemetrySample));
  if (n > kTelemetryAllRanksMax)
    s.notes.emplace_back("telemetry.csv", "ranks 0-" + std::to_string(kTelemetrySample - 1) + " only (" +
                                              std::to_string(n) + " ranks > " +
                                              std::to_string(kTelemetryAllRanksMax) + "; --outputs telemetry samples all)");
  s.trace_ranks = trace_sample(plan);
  if (n > kTraceRanksMax) s.notes.emplace_back("trace.json", trace_note(plan, s.trace_ranks.size()));
  s.files.set(OutputFile::kFr, n <= kFrRanksMax);
  if (!s.has(OutputFile::kFr)) s.notes.emplace_back("fr/", "skipped (" + std::to_string(n) + " ranks > " +
                                                        std::to_string(kFrRanksMax) + "; --outputs fr writes it)");
  const int64_t cap = std::max<int64_t>(16, kFrEntriesTotal / n);
  if (s.has(OutputFile::kFr) && cap < s.fr_capacity) {
    s.fr_capacity = static_cast<int>(cap);
    s.notes.emplace_back("fr/", "last " + std::to_string(cap) + " entries per rank (ring buffer reduced from " +
                                    std::to_string(plan.scenario.job.flight_recorder_entries) + " at this scale)");
  }
  s.lockstep_ok = n > kFrRanksMax;
  return s;
}
}  // namespace

Result<OutputSelection> select_outputs(const Plan& plan, const std::optional<std::vector<std::string>>& requested) {
  Result<OutputSelection> r = requested ? select_requested(plan, *requested) : select_default(plan);
  if (!r.ok()) return r;
  OutputSelection& s = *r;
  if (plan.scenario.job.flight_recorder_entries == 0 && s.has(OutputFile::kFr)) {
    s.files.set(OutputFile::kFr, false);
    s.notes.emplace_back("fr/", "skipped (job.flight_recorder_entries is 0: the recorder is off)");
  }
  return r;
}

void note_lockstep_outputs(OutputSelection* o) {
  const char* why = "skipped: the lockstep executor ran (--executor event writes it)";
  for (const OutputSpec& spec : kOutputs) {
    if (spec.lockstep || !o->has(spec.id)) continue;
    std::erase_if(o->notes, [&](const auto& n) { return n.first == spec.file_name; });  // what it would have held
    o->notes.emplace_back(spec.file_name, why);
    o->files.set(spec.id, false);
  }
}

namespace {

// Bytes per row, event or entry as the writers format them (measured on the
// scenario library; the estimate aims at 2x, not at the byte).
constexpr int64_t kStepRowBytes = 46, kTelemetryRowBytes = 64;
constexpr int64_t kTraceMetaBytes = 220, kTraceComputeBytes = 105, kTraceCollectiveBytes = 290;
// A JSON entry spells every key; a pickle entry fetches repeated strings from its memo.
constexpr int64_t kFrJsonEntryBytes = 980, kFrPickleEntryBytes = 160, kFrFileBytes = 700, kFrRankListBytes = 6;
constexpr int64_t kLogLineBytes = 80, kHangLogBytesPerRank = 900;
constexpr int64_t kSummaryBytes = 3000, kModelBytes = 1000;
constexpr int64_t kSampledStepsMax = 1024;

// One rank's average step: ops of each kind it runs and its healthy duration;
// and the first sampled step where the first and last rank issue different
// collectives (a program that hangs itself), 0 if none.
struct StepShape {
  double compute = 0, collectives = 0, logs = 0, step_ns = 0;
  int64_t diverges_at = 0;
};

// The plan ops `rank` runs at `step`, in order.
std::vector<uint32_t> step_ops(const Plan& plan, int rank, int64_t step) {
  std::vector<uint32_t> ops;
  const VarValues vars = plan.vars(rank, step);
  for (uint32_t pc = 0; pc < plan.program.size();) {
    const Instr& in = plan.program[pc];
    if (in.kind == InstrKind::kJump) { pc = in.target; continue; }
    if (in.kind == InstrKind::kBranch) {
      int64_t v = 0;
      if (!plan.exprs[in.index].eval(vars, &v)) v = 0;
      pc = v != 0 ? pc + 1 : in.target;
      continue;
    }
    ops.push_back(in.index);
    ++pc;
  }
  return ops;
}

StepShape sample_steps(const Plan& plan, const CostModel& cost, int64_t steps) {
  StepShape a;
  const int64_t n = std::min(steps, kSampledStepsMax);
  std::vector<double> collective_ns(plan.ops.size(), -1);  // on first use: group_shape walks every member
  for (int64_t i = 0; i < n; ++i) {
    const int64_t step = 1 + (n == 1 ? 0 : i * (steps - 1) / (n - 1));
    // Pipeline stages differ in their sends and receives by design; compare the rest.
    auto group_ops = [&](int rank) {
      std::vector<uint32_t> out;
      for (uint32_t o : step_ops(plan, rank, step)) {
        const OpKind k = plan.ops[o].kind;
        if (is_collective(k) && k != OpKind::kSend && k != OpKind::kRecv) out.push_back(o);
      }
      return out;
    };
    const std::vector<uint32_t> first = group_ops(0), last = group_ops(plan.ranks - 1);
    if (first != last && a.diverges_at == 0) a.diverges_at = step;
    for (uint32_t index : step_ops(plan, 0, step)) {
      const PlanOp& op = plan.ops[index];
      if (op.kind == OpKind::kCompute || op.kind == OpKind::kCpu) {
        a.compute += 1;
        a.step_ns += static_cast<double>(op.time.ns);
      } else if (op.kind == OpKind::kLog) {
        a.logs += 1;
      } else if (is_collective(op.kind)) {
        a.collectives += 1;
        double& ns = collective_ns[index];
        if (ns < 0) ns = static_cast<double>(cost.collective_time(op.kind, op.bytes, plan.group_shape(op.group, 0)).ns);
        a.step_ns += ns;
      }
    }
  }
  const auto k = static_cast<double>(std::max<int64_t>(n, 1));
  a.compute /= k, a.collectives /= k, a.logs /= k, a.step_ns /= k;
  return a;
}

// How far a run gets: the steps it runs, and the time after them until the job
// stops (a hang: the watchdog and the dump wait; a crash: its detection).
struct RunSpan {
  int64_t steps = 0;
  double tail_ns = 0;
  bool hang = false;
};

RunSpan run_span(const Plan& plan, int64_t diverges_at) {
  const Job& job = plan.scenario.job;
  RunSpan r{job.steps, 0, false};
  const double hang_tail = static_cast<double>((job.watchdog ? job.watchdog->ns : 0) + job.dump_wait.ns);
  if (diverges_at > 0) r = RunSpan{diverges_at, hang_tail, true};
  for (const Fault& f : plan.scenario.faults) {
    const bool crash = f.kind == FaultKind::kCrash;
    const bool stops = crash || f.kind == FaultKind::kStall || f.kind == FaultKind::kSkip ||
                       f.kind == FaultKind::kMismatch || f.kind == FaultKind::kAbsent || f.kind == FaultKind::kNicDown;
    if (!stops) continue;
    const int64_t at = f.kind == FaultKind::kAbsent ? 1 : std::max<int64_t>(f.at_step, 1);
    if (at > r.steps) continue;
    r.steps = at;
    r.hang = !crash;
    r.tail_ns = crash ? static_cast<double>(job.crash_detect.ns) : hang_tail;
  }
  return r;
}

std::string human_bytes(int64_t b) {
  char buf[32];
  if (b >= (int64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(b) / (1 << 30));
  else if (b >= (1 << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= 1024) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  else std::snprintf(buf, sizeof buf, "%" PRId64 " B", b);
  return buf;
}

int64_t clamp_bytes(double b) { return b >= 9e18 ? INT64_MAX / 4 : static_cast<int64_t>(b); }

}  // namespace

OutputEstimate estimate_outputs(const Plan& plan, const CostModel& cost, const OutputSelection& sel, bool lockstep) {
  const Job& job = plan.scenario.job;
  const StepShape step = sample_steps(plan, cost, job.steps);
  const RunSpan span = run_span(plan, step.diverges_at);
  const auto steps = static_cast<double>(span.steps);
  const double sim_ns = steps * step.step_ns + span.tail_ns;
  const auto ranks = static_cast<double>(plan.ranks);
  auto writes = [&](OutputFile f) { return sel.has(f) && (!lockstep || output_spec(f).lockstep); };
  OutputEstimate e;
  auto add = [&](OutputFile f, double bytes) {
    if (writes(f)) e.files.emplace_back(output_file_name(f), clamp_bytes(bytes));
  };
  add(OutputFile::kSummary, kSummaryBytes);
  add(OutputFile::kModel, kModelBytes);
  add(OutputFile::kSteps, 64 + steps * kStepRowBytes);
  const double periods = std::ceil(sim_ns / static_cast<double>(std::max<int64_t>(job.telemetry_period.ns, 1))) + 1;
  add(OutputFile::kTelemetry, 96 + periods * static_cast<double>(sel.telemetry_ranks.size()) * kTelemetryRowBytes);
  add(OutputFile::kTrace, static_cast<double>(sel.trace_ranks.size()) *
                              (kTraceMetaBytes + steps * (step.compute * kTraceComputeBytes +
                                                          step.collectives * kTraceCollectiveBytes)));
  add(OutputFile::kLog, steps * step.logs * kLogLineBytes + (span.hang ? ranks * kHangLogBytesPerRank : 0));
  if (writes(OutputFile::kFr)) {
    const double entries = std::min(static_cast<double>(sel.fr_capacity), std::ceil(steps * step.collectives));
    double header = kFrFileBytes;
    for (int g = 0; g < kGroupKinds; ++g)
      if (plan.group_exists(static_cast<GroupKind>(g)))
        header += static_cast<double>(plan.group_size(static_cast<GroupKind>(g)) * kFrRankListBytes);
    const int64_t entry_bytes = job.flight_recorder.json() ? kFrJsonEntryBytes : kFrPickleEntryBytes;
    add(OutputFile::kFr, ranks * (header + entries * static_cast<double>(entry_bytes)));
    e.fr_memory_bytes = clamp_bytes(ranks * entries * static_cast<double>(sizeof(WorkRecord)));
  }
  std::stable_sort(e.files.begin(), e.files.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [name, bytes] : e.files) e.total_bytes = std::min(INT64_MAX / 2, e.total_bytes + bytes);
  return e;
}

Result<OutputEstimate> estimate_run_outputs(const Plan& plan, const CostModel& cost,
                                            const std::optional<std::vector<std::string>>& requested,
                                            const std::string& executor) {
  Result<OutputSelection> sel = select_outputs(plan, requested);
  if (!sel.ok()) return sel.errors();
  const bool allow = executor == "auto" ? sel->lockstep_ok : executor == "lockstep";
  return estimate_outputs(plan, cost, *sel, allow && lockstep_eligible(plan).ok);
}

std::string OutputEstimate::describe() const {
  std::string s = "about " + human_bytes(total_bytes);
  std::string parts;
  for (size_t i = 0; i < files.size() && i < 3; ++i)
    parts += (parts.empty() ? "" : ", ") + files[i].first + " " + human_bytes(files[i].second);
  return parts.empty() ? s : s + " (" + parts + (files.size() > 3 ? ", ..." : "") + ")";
}

std::optional<Diagnostic> check_output_estimate(const OutputEstimate& e, int64_t max_output) {
  Diagnostic d;
  d.loc.file = "--outputs";
  if (e.fr_memory_bytes > kFlightRecorderMemoryMax) {
    d.message = "the flight recorder would hold " + human_bytes(e.fr_memory_bytes) + " in memory, above its " +
                format_cap(kFlightRecorderMemoryMax) +
                " limit; lower job.flight_recorder_entries or leave fr out of --outputs";
    return d;
  }
  if (e.total_bytes <= max_output) return std::nullopt;
  d.loc.file = "--max-output";
  d.message = "the run would write " + e.describe() + ", above the " + format_cap(max_output) +
              " limit; raise it with --max-output SIZE, or write fewer outputs (--outputs), ranks or steps";
  return d;
}

}  // namespace fleetsim
